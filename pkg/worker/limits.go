package worker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
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
