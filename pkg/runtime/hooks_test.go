package runtime

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/waitbuf"
	"github.com/hoster-dev/hoster/pkg/api"
)

// ctl is a game whose commands use every instance control.
func ctl() map[string]string {
	files := lab(3)
	files["hoster-player/fields.json"] = `{"name": "string", "x": "number", "t": "integer", "hits": "integer"}`
	files["hoster-player/join.js"] = `export default function (i, p, params) { p.name = params.name || "anon"; p.x = 0; p.t = 0; p.hits = 0; }`
	files["hoster-instance/create.js"] = `export default function (i, params) { i.state.ticks = 0; i.state.host = params.name; }`
	files["hoster-instance/tick.js"] = `export default function (i) {
  if (i.state.always || i.state.once) { i.state.once = false; throw new Error("tick trouble"); }
  i.state.ticks++;
  for (const id in i.players) i.players[id].t = i.state.ticks;
}`
	cmd := func(name, args, body string) {
		files["hoster-commands/"+name+"/args.json"] = args
		files["hoster-commands/"+name+"/run.js"] = "export default function (i, p, a) {\n" + body + "\n}"
	}
	cmd("boom", `{}`, `const o = null; Object.keys(o);`)
	cmd("cool", `{}`, `i.refuse("cooling down");`)
	cmd("note", `{}`, `i.log("noted", p.name);`)
	cmd("msg", `{}`, `p.x += 1; i.send(p, "hello", {x: p.x});`)
	cmd("shout", `{"text": "string"}`, `i.broadcast("news", a.text);`)
	cmd("kick", `{"who": "string"}`, `i.kick(i.players[a.who], "bye");`)
	cmd("end", `{}`, `i.close("game over");`)
	cmd("lock", `{}`, `i.lock();`)
	cmd("unlock", `{}`, `i.unlock();`)
	cmd("once", `{}`, `i.state.once = true;`)
	cmd("always", `{}`, `i.state.always = true;`)
	cmd("later", `{}`, `i.state.h = i.after(0.05, () => { p.hits += 1; });`)
	cmd("cancel", `{}`, `i.state.h.cancel();`)
	cmd("repeat", `{}`, `i.state.r = i.every(0.02, () => { p.hits += 1; if (p.hits >= 6) i.state.r.cancel(); });`)
	cmd("host", `{}`, `i.send(p, "host", i.state.host);`)
	return files
}

// logBuf collects a runtime's log for a test to wait on.
type logBuf struct{ waitbuf.Buffer }

// wait waits until the log holds every one of want.
func (l *logBuf) wait(t *testing.T, want ...string) string {
	t.Helper()
	var seen string
	if !l.Until(func(s string) bool {
		seen = s
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	}, 10*time.Second) { // a hang guard
		t.Fatalf("the log never had %q:\n%s", want, seen)
	}
	return seen
}

func withLog(l *logBuf) func(*Options) {
	return func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(l, nil)) }
}

// A command whose hook throws: its player gets an error naming the
// command, nobody else does, the instance lives, the log names the hook.
func TestThrowingCommandStaysInside(t *testing.T) {
	var logs logBuf
	e := startWith(t, map[string]map[string]string{"a.example/ctl": ctl()}, withLog(&logs))
	ada := e.join(t, "a.example", "ctl", "ada")
	bob := e.join(t, "a.example", "ctl", "bob")
	ada.send("boom", nil)
	m := ada.next("error")
	if m["error"] != "command boom failed" || m["c"] != "boom" {
		t.Fatalf("error frame %v", m)
	}
	logs.wait(t, "hook error", "hook=\"command boom\"", "TypeError", "game=a.example/ctl", "instance="+ada.inst,
		"at=hoster-commands/boom/run.js:2")
	// instance.log names the author's line too.
	ada.send("note", nil)
	logs.wait(t, "game log", "msg=\"noted ada\"", "at=hoster-commands/note/run.js:2")
	// The instance goes on, for both.
	ada.send("msg", nil)
	ada.until("still playing", func(m map[string]map[string]any) bool { return m[ada.me]["x"] == 1.0 })
	bob.until("bob sees it", func(m map[string]map[string]any) bool { return m[ada.me] != nil && m[ada.me]["x"] == 1.0 })
	for {
		select {
		case m := <-bob.msgs:
			if m["t"] == "error" {
				t.Fatalf("another player got the error: %v", m)
			}
			continue
		default:
		}
		break
	}
}

// instance.refuse sends its reason to the player, and logs nothing.
func TestRefusalReasonDelivered(t *testing.T) {
	var logs logBuf
	e := startWith(t, map[string]map[string]string{"a.example/ctl": ctl()}, withLog(&logs))
	ada := e.join(t, "a.example", "ctl", "ada")
	ada.send("cool", nil)
	if m := ada.next("error"); m["error"] != "cooling down" || m["c"] != "cool" {
		t.Fatalf("refusal frame %v", m)
	}
	ada.send("boom", nil) // a real error, to know the log has caught up
	logs.wait(t, "command boom")
	if strings.Contains(logs.String(), "cooling down") {
		t.Fatal("a refusal was logged as an error")
	}
}

// A tick that throws once is logged and the next tick runs; the stats line
// counts the errors of the interval.
func TestTickThrowingOnceGoesOn(t *testing.T) {
	var logs logBuf
	clock := &fakeClock{t: time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)}
	dir := t.TempDir()
	e := startWith(t, map[string]map[string]string{"a.example/ctl": ctl()}, func(o *Options) {
		withLog(&logs)(o)
		o.Now, o.LogsRoot, o.GamelogInterval = clock.Now, dir, time.Minute
	})
	ada := e.join(t, "a.example", "ctl", "ada")
	ada.until("ticking", func(m map[string]map[string]any) bool { t, _ := m[ada.me]["t"].(float64); return t > 0 })
	ada.send("once", nil)
	logs.wait(t, "hook error", "hook=tick", "tick trouble", "at=hoster-instance/tick.js:2")
	ada.mu.Lock()
	before := ada.things[ada.me]["t"].(float64)
	ada.mu.Unlock()
	ada.until("the next ticks ran", func(m map[string]map[string]any) bool { t, _ := m[ada.me]["t"].(float64); return t > before+2 })
	ada.send("boom", nil)
	ada.next("error")
	clock.Add(61 * time.Second)
	path := filepath.Join(dir, "hoster-logs", "a.example", "ctl", "hoster-processes", e.rt.Process(), "stats-2026-11-22-10.jsonl")
	var line api.GameStatsLine
	json.Unmarshal([]byte(waitFile(t, path, 1)[0]), &line)
	if line.Errors != 2 {
		t.Fatalf("stats line errors %d, want 2", line.Errors)
	}
}

// An instance whose hooks throw in every tick for 5 s is closed (1011).
func TestTickThrowingEveryTickCloses(t *testing.T) {
	var logs logBuf
	clock := &fakeClock{t: time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)}
	e := startWith(t, map[string]map[string]string{"a.example/ctl": ctl()}, func(o *Options) {
		withLog(&logs)(o)
		o.Now = clock.Now
	})
	ada := e.join(t, "a.example", "ctl", "ada")
	ada.send("always", nil)
	logs.wait(t, "tick trouble")
	// The log line is written inside the first throwing tick, before that
	// tick notes when the throwing began; a reply from a later tick means
	// it has, so the clock moves on from the streak's true start.
	ada.send("msg", nil)
	ada.next("message")
	clock.Add(4 * time.Second)
	ada.send("msg", nil) // still open after 4 s
	ada.next("message")
	clock.Add(2 * time.Second)
	if code := ada.closed(t); code != 1011 {
		t.Fatalf("closed with %d, want 1011", code)
	}
	logs.wait(t, "threw in every tick for 5s")
}

// A message sent in a tick arrives after the update that round produced.
func TestSendOrderedAfterItsUpdate(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/ctl": ctl()})
	ada := e.join(t, "a.example", "ctl", "ada")
	ada.drain()
	x := 0.0
	for n := 1.0; n <= 20; n++ {
		ada.send("msg", nil)
		for got := false; !got; {
			m := ada.nextAny()
			switch m["t"] {
			case "update":
				// (appear maps are the client's own, changed by its reader)
				list, _ := m["change"].([]any)
				for _, it := range list {
					o := it.(map[string]any)
					if o["id"] == ada.me {
						if v, ok := o["f"].(map[string]any)["x"].(float64); ok {
							x = v
						}
					}
				}
			case "message":
				want := m["data"].(map[string]any)["x"].(float64)
				if m["type"] != "hello" || want != n || x < want {
					t.Fatalf("message %v arrived when the updates said x=%v", m, x)
				}
				got = true
			}
		}
	}
}

// nextAny is the next message of any type.
func (c *client) nextAny() map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatalf("socket closed (code %d)", c.code())
		}
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message")
	}
	return nil
}

// broadcast reaches every player; kick closes one with 4000 and its reason,
// and is a leave; close ends the instance with 4001 for all.
func TestBroadcastKickClose(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/ctl": ctl()})
	ada := e.join(t, "a.example", "ctl", "ada")
	bob := e.join(t, "a.example", "ctl", "bob")
	cy := e.join(t, "a.example", "ctl", "cy")
	ada.send("shout", map[string]any{"text": "hi all"})
	for _, c := range []*client{ada, bob, cy} {
		if m := c.next("message"); m["type"] != "news" || m["data"] != "hi all" {
			t.Fatalf("broadcast got %v", m)
		}
	}
	ada.send("kick", map[string]any{"who": cy.me})
	if code := cy.closed(t); code != 4000 {
		t.Fatalf("kicked with %d, want 4000", code)
	}
	ada.until("cy gone at once", func(m map[string]map[string]any) bool { return m[cy.me] == nil })
	r, _, _ := e.dial(t, "a.example", "/ctl?resume="+cy.resume, nil)
	if w := r.next("welcome"); w["player"] == cy.me {
		t.Fatal("a kicked player resumed")
	}
	bob.send("end", nil)
	for _, c := range []*client{ada, bob, r} {
		if code := c.closed(t); code != 4001 {
			t.Fatalf("closed with %d, want 4001", code)
		}
	}
}

// A locked instance takes no new player: the next goes to a new instance,
// until it is unlocked.
func TestLock(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/ctl": ctl()})
	ada := e.join(t, "a.example", "ctl", "ada")
	if two := e.join(t, "a.example", "ctl", "two"); two.inst != ada.inst {
		t.Fatal("the second player started another instance")
	}
	// (ada's is now the fullest, so it is where cy goes once unlocked.)
	ada.send("lock", nil)
	ada.send("msg", nil) // after the lock is applied
	ada.next("message")
	if bob := e.join(t, "a.example", "ctl", "bob"); bob.inst == ada.inst {
		t.Fatal("a locked instance took a player")
	}
	ada.send("unlock", nil)
	ada.send("msg", nil)
	ada.next("message")
	if cy := e.join(t, "a.example", "ctl", "cy"); cy.inst != ada.inst {
		t.Fatal("an unlocked instance with room took no player")
	}
}

// Timers run on the tick thread; a cancelled one never fires; every repeats
// until cancelled; create gets its first player's params.
func TestTimers(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/ctl": ctl()})
	ada := e.join(t, "a.example", "ctl", "ada")
	ada.send("host", nil)
	if m := ada.next("message"); m["data"] != "ada" {
		t.Fatalf("create got the params %v", m)
	}
	ada.send("later", nil)
	ada.until("after fired", func(m map[string]map[string]any) bool { return m[ada.me]["hits"] == 1.0 })
	ada.send("later", nil)
	ada.send("cancel", nil)
	ada.send("repeat", nil)
	ada.until("every fired until cancelled", func(m map[string]map[string]any) bool { return m[ada.me]["hits"] == 6.0 })
	// Neither the cancelled timer nor the cancelled every fires again.
	ada.send("later", nil)
	ada.until("a later timer", func(m map[string]map[string]any) bool { return m[ada.me]["hits"] == 7.0 })
	ada.send("msg", nil)
	ada.next("message")
	ada.mu.Lock()
	defer ada.mu.Unlock()
	if h := ada.things[ada.me]["hits"]; h != 7.0 {
		t.Fatalf("hits %v, want 7", h)
	}
}

// The log allowance of a game: a burst, then a steady rate, and a count of
// what was held back when logging resumes.
func TestLogAllowance(t *testing.T) {
	g := &Game{}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i := 0; i < logBurst; i++ {
		if ok, _ := g.logAllowed(now); !ok {
			t.Fatalf("line %d of the burst held back", i)
		}
	}
	for i := 0; i < 7; i++ {
		if ok, _ := g.logAllowed(now); ok {
			t.Fatal("a line past the burst was let through")
		}
	}
	ok, held := g.logAllowed(now.Add(time.Second / logRate))
	if !ok || held != 7 {
		t.Fatalf("after a refill: %v, held %d, want 7", ok, held)
	}
}

// A throwing join keeps that player out (1011) and nobody else notices; a
// throwing visibility hook hides the thing, and a throwing entity tick is
// logged: the instance goes on.
func TestJoinVisibleAndEntityTickThrowing(t *testing.T) {
	var logs logBuf
	files := lab(4)
	files["hoster-player/join.js"] = `export default function (i, p, params) {
  if (params.name === "bad") throw new Error("no bad names");
  if (params.name === "late") i.refuse("the match has started");
  p.name = params.name; p.x = 0;
}`
	files["hoster-player/visible.js"] = `export default function (i, me, thing) { if (thing.type === "box") throw new Error("no boxes"); return true; }`
	files["hoster-entities/box/tick.js"] = `export default function (i, e) { e.n = (e.n || 0) + 1; if (e.n === 3) throw new Error("box trouble"); }`
	e := startWith(t, map[string]map[string]string{"a.example/lab": files}, withLog(&logs))
	ada := e.join(t, "a.example", "lab", "ada")
	bad, _, err := e.dial(t, "a.example", "/lab?name=bad", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code := bad.closed(t); code != 1011 {
		t.Fatalf("a failed join closed with %d, want 1011", code)
	}
	late, _, err := e.dial(t, "a.example", "/lab?name=late", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code := late.closed(t); code != 4000 {
		t.Fatalf("a refused join closed with %d, want 4000", code)
	}
	logs.wait(t, "hook=join", "no bad names", "at=hoster-player/join.js:2", "hook=visible", "no boxes", "box trouble", `hook="entity box tick"`)
	ada.send("move", map[string]any{"dx": 1})
	ada.until("ada plays on, seeing herself but no box", func(m map[string]map[string]any) bool {
		return m[ada.me] != nil && m[ada.me]["x"] == 1.0 && len(m) == 1
	})
}
