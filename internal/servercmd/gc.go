package servercmd

import (
	"context"
	"log/slog"
	"runtime/debug"

	"github.com/shirou/gopsutil/v4/mem"
)

// gcPercent is the server's default GOGC. Game instances allocate on every
// tick and send round; with Go's default of 100 the load test (2,000 players)
// collected twice a second, and the mark phases' assists delayed instance
// goroutines enough that 5% of update gaps ran over 1.5x the send interval.
// At 400 it was 0.5%, at less CPU (docs/PERFORMANCE.md).
const gcPercent = 400

// gcSettings returns the GC percent and soft memory limit to set, given the
// environment and the machine's memory: GOGC 400 with a limit of half the
// memory, so that a heap allowed to grow to five times the live data is
// still collected harder long before the machine runs short. An operator's
// GOGC or GOMEMLIMIT wins: set is false and nothing is changed.
func gcSettings(getenv func(string) string, total uint64) (percent int, limit int64, set bool) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return 0, 0, false
	}
	if total == 0 {
		return gcPercent, 0, true // unknown memory: no limit
	}
	return gcPercent, int64(total / 2), true
}

// tuneGC applies gcSettings and logs what it did.
func tuneGC(ctx context.Context, getenv func(string) string, log *slog.Logger) {
	var total uint64
	if vm, err := mem.VirtualMemoryWithContext(ctx); err == nil {
		total = vm.Total
	}
	percent, limit, set := gcSettings(getenv, total)
	if !set {
		log.Info("garbage collector as set by GOGC/GOMEMLIMIT")
		return
	}
	debug.SetGCPercent(percent)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	log.Info("garbage collector tuned for game instances (GOGC or GOMEMLIMIT override)", "gogc", percent, "softMemoryLimitMiB", limit>>20)
}
