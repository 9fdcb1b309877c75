package dev

import (
	"context"
	"log/slog"
	goruntime "runtime"
	"runtime/metrics"
	"time"

	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

// memoryWatch is how often hoster dev reads its heap, as often as a server
// reads each worker's resident memory.
const memoryWatch = 100 * time.Millisecond

// heapObjects is the runtime/metrics name of the bytes of the heap's
// objects: the live ones and those not yet swept.
const heapObjects = "/memory/classes/heap/objects:bytes"

// watchMemory is hoster dev's memory watchdog, until ctx ends. hoster dev
// runs every game in its one process (no worker, no cgroup), so that a save
// reloads at once; it still shows a game that runs out of its memory
// budget as a server does: past the game's budget (its hoster-game.json's
// memory, else the server's default, 512 MiB), its instances end, their
// players' sockets close with 4003, and the terminal and the playground
// say so. What it measures is the one heap of every game: with several
// games playing at once, each is held to its budget against all of it.
func watchMemory(ctx context.Context, rt *runtime.Runtime, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if len(overBudget(rt, heapBytes())) == 0 {
			continue
		}
		// The heap holds garbage too: what a collection leaves is live.
		goruntime.GC()
		heap := heapBytes()
		for _, g := range overBudget(rt, heap) {
			log.Error("game worker over its memory budget: ending it", "game", g.Game, "heap", heap, "budget", g.budget)
			rt.EndOutOfMemory(g.Domain, g.Name)
		}
	}
}

// heapBytes is the bytes of the heap's objects.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// overGame is a game with instances whose budget a heap exceeds.
type overGame struct {
	runtime.GameOverview
	budget int64
}

// overBudget lists the games with instances whose budget is below heap.
func overBudget(rt *runtime.Runtime, heap int64) []overGame {
	var out []overGame
	for _, g := range rt.Overview() {
		cfg, ok := rt.Config(g.Domain, g.Name)
		if !ok || len(g.Instances) == 0 {
			continue
		}
		if budget := game.MemoryBudget(cfg, game.DefaultMemory, game.DefaultMaxMemory); heap > budget {
			out = append(out, overGame{GameOverview: g, budget: budget})
		}
	}
	return out
}
