package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

// Why the parent ended a worker, as its log and its players are told.
const (
	reasonMemory = runtime.ReasonOutOfMemory
	reasonStuck  = "a hook did not stop when interrupted"
	reasonEnded  = "the game's worker ended"
)

// Test hooks, nil outside tests: exitSeen runs once wait has seen the
// worker's exit, beforeMessage before readControl acts on a message; a
// test orders the two with them.
var exitSeen, beforeMessage func(wk *proc)

// readControl takes the worker's messages until its socket closes, then
// closes read.
func (wk *proc) readControl(read chan<- struct{}) {
	defer close(read)
	for {
		m, fd, err := wk.ch.recv()
		if fd >= 0 {
			os.NewFile(uintptr(fd), "stray").Close() // a worker sends none
		}
		if err != nil {
			return
		}
		if beforeMessage != nil {
			beforeMessage(wk)
		}
		switch m.T {
		case msgHello:
			wk.process.Store(m.Process)
		case msgClosed:
			wk.drop(m.ID, 0, "")
		case msgSettled:
			wk.mu.Lock()
			h := wk.conns[m.ID]
			wk.mu.Unlock()
			if h != nil {
				h.settle(m.OK)
			}
		case msgRoom:
			id := m.ID
			wk.p.rooms.ask(m.Addr, func(ok bool) { wk.ch.send(message{T: msgRoom, ID: id, OK: ok}, -1) })
		case msgStuck:
			wk.setReason(reasonStuck + ": " + m.Reason)
		case msgIdle:
			wk.p.mu.Lock()
			wk.retired = true
			wk.p.mu.Unlock()
			wk.stopping.Store(true)
			wk.ch.send(message{T: msgRetire}, -1)
		}
	}
}

// setReason records why the worker ends, the first reason only.
func (wk *proc) setReason(r string) {
	wk.mu.Lock()
	if wk.reason == "" {
		wk.reason = r
	}
	wk.mu.Unlock()
}

// watch reads the worker's resident memory every Watch and ends it once
// over its budget. It watches beside a memory cgroup too: the kernel acts
// once the group's charge reaches the budget, after reclaiming the group's
// pages for a while (seconds on a loaded machine), and the resident
// memory, which counts file pages charged to other groups, crosses it
// first; whichever is first ends the worker.
func (wk *proc) watch() {
	if wk.budget <= 0 {
		return
	}
	t := time.NewTicker(wk.p.o.Watch)
	defer t.Stop()
	for {
		select {
		case <-wk.done:
			return
		case <-t.C:
		}
		rss, err := residentBytes(wk.cmd.Process.Pid)
		if err != nil || rss <= wk.budget {
			continue
		}
		if wk.group != nil && wk.group.oomKilled(false) {
			return // the kernel's kill, still exiting: wait says so
		}
		wk.setReason(reasonMemory)
		wk.memBy.CompareAndSwap(nil, "the watchdog")
		wk.log.Error("game worker over its memory budget: ending it", "rss", rss, "budget", wk.budget)
		wk.cmd.Process.Kill()
		return
	}
}

// wait waits for the worker's end, closes the sockets it still had with
// the code that says why, and tells the pool.
func (wk *proc) wait(relayed, read <-chan struct{}) {
	<-relayed // its last words are read before its exit is judged
	err := wk.cmd.Wait()
	if exitSeen != nil {
		exitSeen(wk)
	}
	// And its last control messages: a stuck worker says why, then exits,
	// and the exit may be seen first. Its end of the socket closed with
	// it, so the reading ends.
	<-read
	wk.ch.close()
	wk.judgeMemory(err)
	wk.mu.Lock()
	wk.gone = true
	reason := wk.reason
	if reason == "" && !wk.stopping.Load() {
		reason = reasonEnded
	}
	if reason == "" && err != nil {
		reason = reasonEnded // asked to end, it failed doing so
	}
	conns := wk.conns
	wk.conns = map[uint64]*handed{}
	wk.mu.Unlock()
	code, text := CodeEnded, reason
	switch {
	case strings.HasPrefix(reason, reasonMemory):
		code = CodeOutOfMemory
	case reason == "":
		code, text = 1001, "the server is shutting down"
	}
	for _, h := range conns {
		h.end(code, text)
	}
	if reason == "" {
		wk.log.Info("game worker ended", "players", len(conns))
	} else {
		attrs := []any{"exit", exitText(err), "players", len(conns), "code", code}
		if by, _ := wk.memBy.Load().(string); code == CodeOutOfMemory && by != "" {
			attrs = append(attrs, "by", by) // which bound ended it
		}
		// The stats line first: whoever reads the log line (an operator's
		// alert, a test) finds the stats file saying it already.
		wk.telemetry("ended", reason)
		wk.log.Error("game worker ended: "+reason, attrs...)
	}
	close(wk.done)
	wk.p.ended(wk.s, wk, reason)
}

// judgeMemory, once the worker exited with err, records whether it ran
// out of memory, and removes its cgroups: the kernel's kill in its memory
// group, or Go's own "out of memory" at the data-size limit (the watchdog
// records its own).
func (wk *proc) judgeMemory(err error) {
	if g := wk.group; g != nil {
		var ee *exec.ExitError
		killed := errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
		if g.oomKilled(killed) {
			wk.setReason(reasonMemory)
			wk.memBy.CompareAndSwap(nil, "the kernel ("+wk.p.cg.mem.String()+")")
		}
		if err := g.remove(); err != nil {
			wk.log.Warn("removing the worker's cgroups", "err", err)
		}
	}
	if wk.oomOut.Load() {
		wk.setReason(reasonMemory)
		wk.memBy.CompareAndSwap(nil, "the data-size limit")
	}
}

func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// workerLine is the line a worker's end adds to its game's stats file,
// beside its instances' lines (which a killed worker could not finish).
type workerLine struct {
	T       int64  `json:"t"`
	Process string `json:"process"`
	Worker  string `json:"worker"` // "ended", or "held": stopped until the next sync
	Reason  string `json:"reason"`
	Budget  int64  `json:"budget"`
}

// telemetry appends a workerLine to the worker's stats hour file.
func (wk *proc) telemetry(what, reason string) {
	process, _ := wk.process.Load().(string)
	if wk.p.o.LogsRoot == "" || process == "" {
		return
	}
	domain, game, _ := strings.Cut(wk.s.key, "/")
	now := time.Now()
	path := filepath.Join(wk.p.o.LogsRoot, api.GameLogsDir, domain, game, api.ProcessesDir, process,
		fmt.Sprintf("stats-%s.jsonl", now.UTC().Format("2006-01-02-15")))
	b, _ := json.Marshal(workerLine{T: now.Unix(), Process: process, Worker: what, Reason: reason, Budget: wk.budget})
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		wk.log.Warn("writing the worker's end to its stats file", "err", err)
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		wk.log.Warn("writing the worker's end to its stats file", "err", err)
		return
	}
	defer f.Close()
	f.Write(append(b, '\n'))
}

// relayLog writes the worker's log records (JSON lines on its stderr) to
// the parent's log, attributes in their order; any other line (a Go panic's
// trace) goes as it is, and Go's "out of memory" is noted.
func (wk *proc) relayLog(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	other := 0 // lines that are not records: a crash's trace can be long
	defer func() {
		if other > maxOutput {
			wk.log.Warn("worker output: more lines not shown", "lines", other-maxOutput)
		}
	}()
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "runtime: out of memory") || strings.Contains(line, "cannot allocate memory") {
			wk.oomOut.Store(true)
		}
		level, msg, attrs, ok := parseRecord(line)
		if !ok {
			if other++; other <= maxOutput {
				wk.log.Warn("worker output", "line", line)
			}
			continue
		}
		wk.log.Log(context.Background(), level, msg, attrs...)
	}
}

// maxOutput is how many of a worker's lines that are not log records go to
// the log: a panic's first lines say what failed.
const maxOutput = 40

// parseRecord reads one slog JSON record, keeping its attributes' order.
func parseRecord(line string) (slog.Level, string, []any, bool) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, "", nil, false
	}
	var level slog.Level
	var msg string
	var attrs []any
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return 0, "", nil, false
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return 0, "", nil, false
		}
		switch key, _ := k.(string); key {
		case slog.TimeKey:
		case slog.LevelKey:
			s, _ := v.(string)
			if level.UnmarshalText([]byte(s)) != nil {
				level = slog.LevelInfo
			}
		case slog.MessageKey:
			msg, _ = v.(string)
		case "game": // the parent's logger names the game already
		default:
			attrs = append(attrs, key, v)
		}
	}
	return level, msg, attrs, true
}
