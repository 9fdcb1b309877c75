package worker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dataHeadroom is what the data limit allows past the memory budget: the
// program's own data and its threads' stacks (about 110 MiB at start), so
// that the resident-memory watchdog, which holds the budget itself, acts
// first in all but a sudden burst.
const dataHeadroom = 256 << 20

// limitSelf bounds this worker process: its writable memory (RLIMIT_DATA,
// which since Linux 4.7 counts every private writable mapping: the Go heap
// included; budget plus dataHeadroom: growing past it fails the
// allocation, and Go ends the process with "out of memory"), Go's own soft
// memory limit (the collector works harder as the budget nears) beside the
// collector's GOGC (gcPercent, when not 0), and its
// CPU priority (nice, every thread: threads made later inherit it). Not
// RLIMIT_AS: a Go program reserves about 1.5 GiB of address space it never
// touches, so an address-space limit would say nothing of the budget.
func limitSelf(budget int64, nice, gcPercent int) error {
	if gcPercent > 0 {
		debug.SetGCPercent(gcPercent)
	}
	if budget > 0 {
		lim := uint64(budget) + dataHeadroom
		if err := unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
			return fmt.Errorf("limiting the data size: %w", err)
		}
		debug.SetMemoryLimit(budget * 9 / 10)
	}
	if nice == 0 {
		return nil
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("lowering the priority: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("lowering the priority of thread %d: %w", tid, err)
		}
	}
	return nil
}

// residentBytes is a process's resident memory (VmRSS).
func residentBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading VmRSS: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("reading VmRSS: not in /proc/<pid>/status")
}

// cgroupRoot is where the cgroup v2 hierarchy is mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroups makes a cgroup v2 group per worker below this process's own
// group, when the kernel and the service's delegation allow it: the
// memory budget is then the kernel's (memory.max, the whole group ended at
// once: memory.oom.group), and CPU too (cpu.max).
type cgroups struct {
	dir string // this process's group; its children are the workers'
}

// detectCgroups returns the cgroup v2 place for the workers' groups, or why
// there is none (the reason goes to the log once; the fallback then runs).
func detectCgroups() (*cgroups, string) {
	ctrl, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
	if err != nil {
		return nil, "no cgroup v2 hierarchy at " + cgroupRoot + " (" + err.Error() + ")"
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, "reading /proc/self/cgroup: " + err.Error()
	}
	var path string
	for _, l := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return nil, "this process is in no cgroup v2 group"
	}
	dir := filepath.Join(cgroupRoot, path)
	for _, c := range []string{"memory", "cpu"} {
		if !contains(strings.Fields(string(ctrl)), c) {
			return nil, "the kernel's cgroup v2 has no " + c + " controller"
		}
	}
	have, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, "reading " + dir + "/cgroup.controllers: " + err.Error()
	}
	for _, c := range []string{"memory", "cpu"} {
		if !contains(strings.Fields(string(have)), c) {
			return nil, "the " + c + " controller is not delegated to " + dir + " (systemd: Delegate=yes)"
		}
	}
	// A group with processes may not enable controllers for its children:
	// the server moves itself to a leaf of its own first.
	leaf := filepath.Join(dir, "server")
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, "making " + leaf + ": " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, "moving the server to " + leaf + ": " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +cpu"), 0o644); err != nil {
		return nil, "enabling the memory and cpu controllers below " + dir + ": " + err.Error()
	}
	return &cgroups{dir: dir}, ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// group makes (or empties and reuses) the group named name with budget
// bytes of memory and cpus of CPU, and returns it opened, for
// SysProcAttr.CgroupFD.
func (c *cgroups) group(name string, budget int64, cpus float64) (*os.File, error) {
	dir := filepath.Join(c.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("making cgroup %s: %w", dir, err)
	}
	set := map[string]string{"memory.max": strconv.FormatInt(budget, 10), "memory.oom.group": "1", "memory.swap.max": "0"}
	if cpus > 0 {
		set["cpu.max"] = fmt.Sprintf("%d 100000", int64(cpus*100000))
	}
	for file, v := range set {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil && file != "memory.swap.max" {
			return nil, fmt.Errorf("setting %s of cgroup %s: %w", file, dir, err)
		}
	}
	return os.Open(dir)
}

// oomKilled says whether the kernel ended a process of the group for its
// memory (memory.events' oom_kill).
func (c *cgroups) oomKilled(name string) bool {
	b, err := os.ReadFile(filepath.Join(c.dir, name, "memory.events"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "oom_kill "); ok && strings.TrimSpace(v) != "0" {
			return true
		}
	}
	return false
}

// remove removes the group once its process has ended.
func (c *cgroups) remove(name string) { os.Remove(filepath.Join(c.dir, name)) }
