package worker

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CgroupName is the name of the group a server makes its workers' groups
// in, below its own group of each hierarchy: the same for every run on one
// hosting root (so that a run sweeps what a crashed one left), and another
// for another server's hosting root.
func CgroupName(hostingRoot string) string {
	if abs, err := filepath.Abs(hostingRoot); err == nil {
		hostingRoot = abs
	}
	sum := sha256.Sum256([]byte(hostingRoot))
	return "hoster-" + hex.EncodeToString(sum[:6])
}

// RemoveGroups removes the workers' groups a server on hostingRoot left
// when it was killed rather than stopped, killing what still runs in
// them: for a hosting root no server will serve again, whose next start
// would otherwise have swept them. Never while a server serves
// hostingRoot: its workers would be killed. Nothing is done where no
// cgroup bounds the workers.
func RemoveGroups(hostingRoot string) error {
	return detectCgroups(CgroupName(hostingRoot), DefaultCPUs()).close()
}

// DefaultCPUs is a worker's CPU bound when the server sets none: every
// core but one, and at least one, so that a game spinning every core of
// its worker leaves the other games one.
func DefaultCPUs() float64 { return float64(max(1, runtime.NumCPU()-1)) }

// cpuPeriod is the period of cpu.max and cpu.cfs_period_us, in µs.
const cpuPeriod = 100000

// hierarchy is where a controller's per-worker groups are made: base is
// the server's group of them, named CgroupName, below its own group.
type hierarchy struct {
	v2   bool
	base string
}

func (h *hierarchy) String() string {
	if h.v2 {
		return "cgroup v2"
	}
	return "cgroup v1"
}

// cgroups is how the workers are bounded, chosen once at the pool's start:
// memory and CPU each by a cgroup (v2 where its controller is there, else
// v1), or nil and why not (the fallbacks: a data-size limit and the
// resident-memory watchdog, which run beside a memory group too; a nice
// level).
type cgroups struct {
	mem, cpu       *hierarchy
	memWhy, cpuWhy string
	cpus           float64
	swept          int // leftover groups of an earlier run removed at start
}

// detectCgroups finds the hierarchies this server may make its workers'
// groups in, and sweeps the groups an earlier run on the same name left.
func detectCgroups(name string, cpus float64) *cgroups {
	c := &cgroups{cpus: cpus}
	if name == "" {
		c.memWhy, c.cpuWhy = "no cgroup name given", "no cgroup name given"
		return c
	}
	mounts, self, err := readCgroupSelf()
	if err != nil {
		c.memWhy, c.cpuWhy = err.Error(), err.Error()
		return c
	}
	v2, v2ctrl, v2why := c.setUpV2(mounts, self, name)
	for _, r := range []struct {
		ctrl, probe string
		h           **hierarchy
		why         *string
	}{{"memory", "memory.limit_in_bytes", &c.mem, &c.memWhy}, {"cpu", "cpu.cfs_quota_us", &c.cpu, &c.cpuWhy}} {
		if slices.Contains(v2ctrl, r.ctrl) {
			*r.h = v2
			continue
		}
		h, why := c.setUpV1(mounts, self, name, r.ctrl, r.probe)
		if h == nil {
			*r.why = strings.TrimPrefix(v2why+"; "+why, "; ")
		}
		*r.h = h
	}
	return c
}

// cgMount is a mounted cgroup hierarchy.
type cgMount struct {
	root, point string
	v2          bool
	opts        []string // v1: its controllers, among other options
}

// readCgroupSelf reads the mounted hierarchies and this process's group in
// each: "" names its cgroup v2 group, a controller its v1 group.
func readCgroupSelf() ([]cgMount, map[string]string, error) {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, fmt.Errorf("reading the mounts: %w", err)
	}
	var mounts []cgMount
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		// "36 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		mounts = append(mounts, cgMount{root: f[3], point: f[4], v2: g[0] == "cgroup2", opts: strings.Split(g[2], ",")})
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, nil, fmt.Errorf("reading this process's cgroups: %w", err)
	}
	self := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// "4:memory:/a/b", "1:cpu,cpuacct:/", "0::/a"
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			self[""] = parts[2]
		}
		for _, ctrl := range strings.Split(parts[1], ",") {
			if ctrl != "" {
				self[ctrl] = parts[2]
			}
		}
	}
	return mounts, self, nil
}

// ownGroup is the directory of this process's group in mount m, whose
// path in the hierarchy is path.
func ownGroup(m cgMount, path string) (string, error) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("this process's group %s is outside %s as mounted", path, m.point)
	}
	return filepath.Join(m.point, rel), nil
}

// setUpV2 makes the server's group of workers' groups in cgroup v2 with
// the memory and cpu controllers its own group has (delegated to the
// service: systemd's Delegate=yes), and says which; none, and why, when it
// cannot.
func (c *cgroups) setUpV2(mounts []cgMount, self map[string]string, name string) (*hierarchy, []string, string) {
	path, ok := self[""]
	var m *cgMount
	for i := range mounts {
		if mounts[i].v2 {
			m = &mounts[i]
		}
	}
	if !ok || m == nil {
		return nil, nil, "no cgroup v2 hierarchy"
	}
	own, err := ownGroup(*m, path)
	if err != nil {
		return nil, nil, "cgroup v2: " + err.Error()
	}
	have, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return nil, nil, "cgroup v2: " + err.Error()
	}
	var ctrl []string
	for _, x := range strings.Fields(string(have)) {
		if x == "memory" || x == "cpu" {
			ctrl = append(ctrl, x)
		}
	}
	if len(ctrl) == 0 {
		return nil, nil, "cgroup v2: neither the memory nor the cpu controller is available in " + own + " (systemd: Delegate=yes)"
	}
	enable := "+" + strings.Join(ctrl, " +")
	// A group with processes may not enable controllers for its children:
	// the server moves itself to a leaf of its own first.
	leaf := filepath.Join(own, "server")
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, nil, "cgroup v2: making " + leaf + ": " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, nil, "cgroup v2: moving the server to " + leaf + ": " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(own, "cgroup.subtree_control"), []byte(enable), 0o644); err != nil {
		return nil, nil, "cgroup v2: enabling " + enable + " below " + own + ": " + err.Error()
	}
	h := &hierarchy{v2: true, base: filepath.Join(own, name)}
	if err := c.makeBase(h.base); err != nil {
		return nil, nil, "cgroup v2: " + err.Error()
	}
	if err := os.WriteFile(filepath.Join(h.base, "cgroup.subtree_control"), []byte(enable), 0o644); err != nil {
		return nil, nil, "cgroup v2: enabling " + enable + " below " + h.base + ": " + err.Error()
	}
	return h, ctrl, ""
}

// setUpV1 makes the server's group of workers' groups in the cgroup v1
// hierarchy of ctrl, whose groups have the file probe; nil, and why, when
// it cannot.
func (c *cgroups) setUpV1(mounts []cgMount, self map[string]string, name, ctrl, probe string) (*hierarchy, string) {
	for _, m := range mounts {
		if m.v2 || !slices.Contains(m.opts, ctrl) {
			continue
		}
		path, ok := self[ctrl]
		if !ok {
			return nil, "cgroup v1: this process is in no " + ctrl + " group"
		}
		own, err := ownGroup(m, path)
		if err != nil {
			return nil, "cgroup v1: " + err.Error()
		}
		if _, err := os.Stat(filepath.Join(own, probe)); err != nil {
			return nil, "cgroup v1: the " + ctrl + " controller has no " + probe
		}
		h := &hierarchy{base: filepath.Join(own, name)}
		if err := c.makeBase(h.base); err != nil {
			return nil, "cgroup v1: " + err.Error()
		}
		return h, ""
	}
	return nil, "no cgroup v1 " + ctrl + " hierarchy"
}

// makeBase makes the server's group of workers' groups, or sweeps the one
// an earlier run left: its workers (a crashed server's, which the kernel
// normally ended with it) are killed and their groups removed.
func (c *cgroups) makeBase(base string) error {
	if err := os.Mkdir(base, 0o755); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("making %s: %w", base, err)
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return fmt.Errorf("reading %s: %w", base, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if err := removeGroup(filepath.Join(base, e.Name()), true); err != nil {
			return fmt.Errorf("sweeping what an earlier run left: %w", err)
		}
		c.swept++
	}
	return nil
}

// removeGroup removes a worker's group once its process ended; with kill,
// the processes still in it are killed first. The kernel may take a moment
// to let a group go after its last process: removal is tried for a while.
func removeGroup(dir string, kill bool) error {
	var err error
	for range 100 {
		if kill {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, perr := strconv.Atoi(f); perr == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("removing cgroup %s: %w", dir, err)
}

// group is one worker's groups: a directory in each hierarchy (one when
// memory and CPU are in the same).
type group struct {
	c    *cgroups
	dirs []string
	v2   string // its cgroup v2 directory, entered at start (UseCgroupFD)
	mem  string // its memory group's directory, "" when none
}

// group makes the worker's groups named name, with budget bytes of memory
// and the CPU bound; nil when no cgroup bounds the workers.
func (c *cgroups) group(name string, budget int64) (*group, error) {
	if c.mem == nil && c.cpu == nil {
		return nil, nil
	}
	g := &group{c: c}
	dirOf := func(h *hierarchy) (string, error) {
		dir := filepath.Join(h.base, name)
		if slices.Contains(g.dirs, dir) {
			return dir, nil
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("making cgroup %s: %w", dir, err)
		}
		g.dirs = append(g.dirs, dir)
		if h.v2 {
			g.v2 = dir
		}
		return dir, nil
	}
	var set []setting
	if c.mem != nil && budget > 0 {
		dir, err := dirOf(c.mem)
		if err != nil {
			return nil, g.failed(err)
		}
		g.mem, set = dir, append(set, memorySettings(c.mem.v2, dir, budget)...)
	}
	if c.cpu != nil {
		dir, err := dirOf(c.cpu)
		if err != nil {
			return nil, g.failed(err)
		}
		set = append(set, cpuSettings(c.cpu.v2, dir, c.cpus)...)
	}
	for _, s := range set {
		err := os.WriteFile(s.file, []byte(s.value), 0o644)
		if err != nil && !(errors.Is(err, os.ErrNotExist) && optionalSetting(s.file)) {
			return nil, g.failed(fmt.Errorf("setting %s: %w", s.file, err))
		}
	}
	return g, nil
}

// optionalSetting is a file a kernel may lack: without swap accounting
// there is no swap limit.
func optionalSetting(file string) bool {
	b := filepath.Base(file)
	return b == "memory.swap.max" || b == "memory.memsw.limit_in_bytes"
}

// setting is a value to write to a group's file.
type setting struct{ file, value string }

// memorySettings bound a group's memory: the budget, no swap past it, and
// (v2) the whole group ended at once.
func memorySettings(v2 bool, dir string, budget int64) []setting {
	b := strconv.FormatInt(budget, 10)
	if v2 {
		return []setting{{filepath.Join(dir, "memory.max"), b}, {filepath.Join(dir, "memory.oom.group"), "1"}, {filepath.Join(dir, "memory.swap.max"), "0"}}
	}
	// memsw (memory and swap) may never be below the memory limit: the
	// limit goes first.
	return []setting{{filepath.Join(dir, "memory.limit_in_bytes"), b}, {filepath.Join(dir, "memory.memsw.limit_in_bytes"), b}}
}

// cpuSettings bound a group's CPU to cpus cores.
func cpuSettings(v2 bool, dir string, cpus float64) []setting {
	quota := max(int64(cpus*cpuPeriod), 1000)
	if v2 {
		return []setting{{filepath.Join(dir, "cpu.max"), fmt.Sprintf("%d %d", quota, cpuPeriod)}}
	}
	return []setting{{filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod)}, {filepath.Join(dir, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10)}}
}

// failed removes what group made before err.
func (g *group) failed(err error) error {
	g.remove()
	return err
}

// v1 are the worker's groups it joins itself as it starts, before its game
// loads (cgroup v1 has no way to start a process in a group).
func (g *group) v1() []string {
	var out []string
	for _, d := range g.dirs {
		if d != g.v2 {
			out = append(out, d)
		}
	}
	return out
}

// oomKilled says whether the kernel ended the worker for its memory: v2's
// memory.events and v1's memory.oom_control count the kills (oom_kill); a
// v1 kernel older than 4.13 has no such count, and there a worker killed
// once its group hit the limit (memory.failcnt) counts.
func (g *group) oomKilled(killed bool) bool {
	if g.mem == "" {
		return false
	}
	file := "memory.oom_control"
	if g.mem == g.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(g.mem, file))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	f, _ := os.ReadFile(filepath.Join(g.mem, "memory.failcnt"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(f)))
	return killed && n > 0
}

// remove removes the worker's groups once it ended.
func (g *group) remove() error {
	var errs []error
	for _, d := range g.dirs {
		errs = append(errs, removeGroup(d, false))
	}
	return errors.Join(errs...)
}

// close removes the server's groups of workers' groups, once every worker
// ended.
func (c *cgroups) close() error {
	var errs []error
	for _, h := range []*hierarchy{c.mem, c.cpu} {
		if h != nil && !(h == c.cpu && c.mem != nil && c.mem.base == h.base) {
			errs = append(errs, removeGroup(h.base, false))
		}
	}
	return errors.Join(errs...)
}

// describe says, for the log at start, what bounds the workers' memory
// and CPU; nice is the workers' nice level.
func (c *cgroups) describe() []any {
	var out []any
	if c.mem != nil {
		file := "memory.limit_in_bytes"
		if c.mem.v2 {
			file = "memory.max"
		}
		out = append(out, "memory", c.mem.String()+" "+file+" and a resident-memory watchdog", "memory_cgroup", c.mem.base)
	} else {
		out = append(out, "memory", "a data-size limit and a resident-memory watchdog", "memory_why", c.memWhy)
	}
	if c.cpu != nil {
		file := "cpu.cfs_quota_us"
		if c.cpu.v2 {
			file = "cpu.max"
		}
		out = append(out, "cpu", fmt.Sprintf("%s %s: %g of %d cores a worker", c.cpu, file, c.cpus, runtime.NumCPU()), "cpu_cgroup", c.cpu.base)
	} else {
		out = append(out, "cpu", "a nice level and the hook budget", "cpu_why", c.cpuWhy)
	}
	if c.swept > 0 {
		out = append(out, "swept", c.swept)
	}
	return out
}
