package runtime

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/layout"
)

// counters are one instance's telemetry for the current interval, guarded by
// the instance's mutex.
type counters struct {
	arrivals, departures int64
	playtime             api.SumCount
	commands             map[string]int64
	cmdBytes, updBytes   api.SumCount
	delta                api.DeltaCounts // carried over from replaced runtimes
	errors               int64           // hook errors
}

func (c *counters) reset() { *c = counters{commands: map[string]int64{}} }

// logLine is one line bound for a game-log hour file.
type logLine struct {
	domain, game, family string // family: layout.GameLogStats or GameLogSnapshot
	at                   time.Time
	data                 []byte
}

// gameLogPath is {logs_root}/hoster-logs/<domain>/<game>/hoster-processes/<process>/<family>-YYYY-MM-DD-HH.jsonl.
func (rt *Runtime) gameLogPath(l logLine) string {
	return filepath.Join(rt.o.LogsRoot, api.GameLogsDir, filepath.FromSlash(layout.GameLogPath(l.domain, l.game, rt.process, l.family, l.at)))
}

// writeLogs appends lines to their hour files, off the instances'
// goroutines. Each line is one write on a file opened for appending, so a
// reader (the tools API, a client's Range fetch) never sees half a line.
func (rt *Runtime) writeLogs() {
	defer close(rt.logsDone)
	for l := range rt.logs {
		path := rt.gameLogPath(l)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			rt.log.Warn("writing game logs", "err", err)
			continue
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			rt.log.Warn("writing game logs", "err", err)
			continue
		}
		if _, err := f.Write(append(l.data, '\n')); err != nil {
			rt.log.Warn("writing game logs", "path", path, "err", err)
		}
		f.Close()
	}
}

// emit queues a line; it never blocks an instance (a full queue drops the
// line and says so).
func (rt *Runtime) emit(l logLine) {
	if rt.o.LogsRoot == "" {
		return
	}
	rt.logsMu.RLock()
	defer rt.logsMu.RUnlock()
	if rt.logsClosed {
		return
	}
	select {
	case rt.logs <- l:
	default:
		rt.log.Warn("game log queue full; a line was dropped", "game", l.domain+"/"+l.game, "family", l.family)
	}
}

// lastStats writes the stats line of an ended instance's last, partial,
// interval: once, from its goroutine, before Shutdown stops the writer.
// The players still in it leave with it: their departures and playtime
// are counted, as are those of leaves it had not applied yet.
func (in *Instance) lastStats(l *loop) {
	in.mu.Lock()
	for _, s := range in.present {
		in.departLocked(s)
	}
	in.present = nil
	in.mu.Unlock()
	in.statsLine(l.v, in.rt.now(), true)
}

// statsLine writes the instance's stats line for the interval ending at now
// and starts the next interval; ended marks the instance's last line.
func (in *Instance) statsLine(v *vm, now time.Time, ended bool) {
	var players, entities int
	if p, e, err := v.sizes(); err == nil {
		players, entities = p, e
	}
	appeared, changed, gone := in.takeDeltaCounts(v)
	in.mu.Lock()
	c := in.tel
	in.tel.reset()
	in.mu.Unlock()
	line := api.GameStatsLine{
		T: now.Unix(), Process: in.rt.process, Node: in.rt.o.Node, Instance: in.id,
		Players: players, Entities: entities,
		Arrivals: c.arrivals, Departures: c.departures, Playtime: c.playtime,
		Commands: c.commands, CmdBytes: c.cmdBytes, UpdBytes: c.updBytes,
		Delta:  api.DeltaCounts{Appeared: appeared + c.delta.Appeared, Changed: changed + c.delta.Changed, Gone: gone + c.delta.Gone},
		Errors: c.errors, Ended: ended,
	}
	if line.Commands == nil {
		line.Commands = map[string]int64{}
	}
	b, _ := json.Marshal(line)
	in.rt.emit(logLine{domain: in.domain, game: in.name, family: layout.GameLogStats, at: now, data: b})
}

// snapshotLine writes what the game's serialise returns (the state when it
// has none).
func (in *Instance) snapshotLine(v *vm, now time.Time) {
	state, err := v.snapshot()
	if err != nil {
		in.log.Warn("snapshot: serialise failed", "err", err)
		return
	}
	line := api.GameSnapshotLine{T: now.Unix(), Process: in.rt.process, Node: in.rt.o.Node, Instance: in.id, State: state}
	b, _ := json.Marshal(line)
	in.rt.emit(logLine{domain: in.domain, game: in.name, family: layout.GameLogSnapshot, at: now, data: b})
}

func (in *Instance) takeDeltaCounts(v *vm) (int64, int64, int64) {
	n := v.eng.takeCounts()
	return n[0], n[1], n[2]
}
