package servercmd

import (
	"context"
	"log/slog"
	"runtime/debug"

	"github.com/shirou/gopsutil/v4/mem"
)

// gcPercent is the collector's GOGC in serve and, passed on, in each game's
// worker: the one place it is chosen. It trades CPU for memory: the heap
// grows to (1 + gcPercent/100) times the live data between collections.
// A default run is meant to stay under the memory of Colyseus running the
// same game (125–134 MiB at the load test's 1,000 players). Measured there
// (bench/vs-colyseus.sh, 2026-11-26): at 200 the server and its game's
// worker held 106–107 MiB resident, against 84 MiB at Go's own 100, and the
// worker spent 5% less CPU (four alternating pairs of runs, the collector
// running half as often); at 400 the heap grows to five times the live
// data. An operator with memory to spare sets GOGC=400
// (docs/operators.md, "Memory").
const gcPercent = 200

// gcSettings returns the GC percent and soft memory limit to set, given the
// environment and the machine's memory: gcPercent with a limit of half the
// memory, so that the heap is still collected harder long before the
// machine runs short. An operator's
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
