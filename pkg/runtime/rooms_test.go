package runtime

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/waitbuf"
	"github.com/hoster-dev/hoster/pkg/api"
)

// graceLab is lab with the given resumeGrace and hooks that make a
// player's connection visible: "on" mirrors player.connected, and the
// disconnect and reconnect hooks count in "drops" and "backs".
func graceLab(grace float64) map[string]string {
	files := lab(4)
	files["hoster-game.json"] = fmt.Sprintf(`{"tickRate": 50, "sendRate": 25, "capacity": 4, "origins": ["*"], "resumeGrace": %v}`, grace)
	files["hoster-player/fields.json"] = `{"name": "string", "x": "number", "on": "boolean", "drops": "integer", "backs": "integer"}`
	files["hoster-player/join.js"] = `export default function (i, p, params) { p.name = params.name; p.x = 0; p.drops = 0; p.backs = 0; }`
	files["hoster-player/disconnect.js"] = `export default function (i, p) { p.drops++; }`
	files["hoster-player/reconnect.js"] = `export default function (i, p) { p.backs++; }`
	files["hoster-instance/tick.js"] = `export default function (i) { for (const id in i.players) i.players[id].on = i.players[id].connected; }`
	return files
}

// useGameGrace lets each game's resumeGrace apply (the tests' default
// replaces it).
func useGameGrace(o *Options) { o.ResumeGrace = 0 }

// A close frame from the player (1000: game.close(); 1001: a tab closed) is
// a leave at once, even with a long grace.
func TestCleanCloseLeavesAtOnce(t *testing.T) {
	e := startWith(t, map[string]map[string]string{"a.example/lab": graceLab(300)}, useGameGrace)
	ada := e.join(t, "a.example", "lab", "ada")
	for _, code := range []int{websocket.CloseNormalClosure, websocket.CloseGoingAway} {
		bob := e.join(t, "a.example", "lab", "bob")
		ada.until("bob appear", func(m map[string]map[string]any) bool { return m[bob.me] != nil })
		bob.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""))
		ada.until(fmt.Sprintf("bob gone after closing with %d", code), func(m map[string]map[string]any) bool { return m[bob.me] == nil })
		// The seat is over: the token no longer resumes.
		r, _, err := e.dial(t, "a.example", "/lab?name=again&resume="+bob.resume, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := r.next("welcome"); w["player"] == bob.me {
			t.Fatalf("a player who left (%d) resumed", code)
		}
		r.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, ""))
	}
}

// A connection lost without a close frame holds the seat for the grace:
// the player is marked disconnected, the hooks run, a resume within the
// grace gets the seat back, and the player is gone once a grace runs out.
func TestDroppedConnectionHeldForTheGrace(t *testing.T) {
	e := startWith(t, map[string]map[string]string{"a.example/lab": graceLab(1)}, useGameGrace)
	ada := e.join(t, "a.example", "lab", "ada")
	bob := e.join(t, "a.example", "lab", "bob")
	ada.until("bob connected", func(m map[string]map[string]any) bool { return m[bob.me] != nil && m[bob.me]["on"] == true })
	bob.ws.UnderlyingConn().Close() // no close frame
	ada.until("bob held, disconnected", func(m map[string]map[string]any) bool {
		return m[bob.me] != nil && m[bob.me]["on"] == false && m[bob.me]["drops"] == 1.0
	})
	back, _, err := e.dial(t, "a.example", "/lab?resume="+bob.resume, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := back.next("welcome"); w["player"] != bob.me {
		t.Fatalf("resumed as %v, want %s", w["player"], bob.me)
	}
	ada.until("bob back", func(m map[string]map[string]any) bool {
		return m[bob.me] != nil && m[bob.me]["on"] == true && m[bob.me]["backs"] == 1.0
	})
	back.ws.UnderlyingConn().Close()
	ada.until("bob held again", func(m map[string]map[string]any) bool { return m[bob.me] != nil && m[bob.me]["drops"] == 2.0 })
	ada.until("bob gone after the grace", func(m map[string]map[string]any) bool { return m[bob.me] == nil })
}

// resumeGrace 0: every disconnect is a leave.
func TestResumeGraceZero(t *testing.T) {
	e := startWith(t, map[string]map[string]string{"a.example/lab": graceLab(0)}, useGameGrace)
	ada := e.join(t, "a.example", "lab", "ada")
	bob := e.join(t, "a.example", "lab", "bob")
	ada.until("bob appear", func(m map[string]map[string]any) bool { return m[bob.me] != nil })
	bob.ws.UnderlyingConn().Close()
	ada.until("bob gone at once", func(m map[string]map[string]any) bool { return m[bob.me] == nil })
	r, _, err := e.dial(t, "a.example", "/lab?resume="+bob.resume, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := r.next("welcome"); w["player"] == bob.me {
		t.Fatal("resumed with a grace of 0")
	}
}

// rawDial opens a game socket and collects its raw frames.
type rawClient struct {
	ws     *websocket.Conn
	frames waitbuf.Buffer // each frame, then a newline
	me     string
}

func (e *env) rawJoin(t *testing.T, path string) *rawClient {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.url, "http")+path, http.Header{"Host": {"a.example"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &rawClient{ws: ws}
	welcomed := make(chan string, 1)
	go func() {
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(b, &m) == nil && m["t"] == "welcome" {
				welcomed <- m["player"].(string)
			}
			c.frames.Write(append(b, '\n'))
		}
	}()
	select {
	case c.me = <-welcomed:
	case <-time.After(10 * time.Second):
		t.Fatal("no welcome")
	}
	return c
}

// wire waits until ok holds for everything received so far.
func (c *rawClient) wire(t *testing.T, what string, ok func(all string) bool) {
	t.Helper()
	if !c.frames.Until(func(all string) bool { return ok(strings.TrimSuffix(all, "\n")) }, 10*time.Second) { // a hang guard
		t.Fatalf("never saw on the wire: %s", what)
	}
}

// all is every frame received so far, one a line.
func (c *rawClient) all() string { return strings.TrimSuffix(c.frames.String(), "\n") }

// A private field reaches its own player and never another viewer, with or
// without a visibility hook; a value of the wrong type is never sent, and
// its first occurrence is logged.
func TestPrivateFieldsAndTypes(t *testing.T) {
	for _, visible := range []string{"", `export default function () { return true; }`} {
		var logs logBuf
		files := lab(4)
		files["hoster-player/fields.json"] = `{"name": "string", "x": "number", "ammo": {"type": "integer", "private": true}}`
		files["hoster-player/join.js"] = `export default function (i, p, params) { p.name = params.name; p.x = 0; p.ammo = Number(params.ammo); }`
		files["hoster-commands/shoot/run.js"] = `export default function (i, p) { p.ammo -= 1; p.x += 1; }`
		files["hoster-commands/bad/run.js"] = `export default function (i, p) { p.name = 42 + p.x; p.x += 1; }`
		if visible != "" {
			files["hoster-player/visible.js"] = visible
		}
		e := startWith(t, map[string]map[string]string{"a.example/lab": files}, withLog(&logs))
		ada := e.rawJoin(t, "/lab?name=ada&ammo=555001")
		bob := e.rawJoin(t, "/lab?name=bob&ammo=777001")
		ada.wire(t, "bob appear", func(all string) bool { return strings.Contains(all, `"name":"bob"`) })
		send := func(c *rawClient, cmd string) {
			c.ws.WriteJSON(map[string]any{"c": cmd, "a": map[string]any{}})
		}
		send(bob, "shoot")
		send(ada, "shoot")
		bob.wire(t, "bob's own ammo, then its change", func(all string) bool {
			return strings.Contains(all, "777001") && strings.Contains(all, "777000")
		})
		ada.wire(t, "ada's own ammo change and bob's move", func(all string) bool {
			return strings.Contains(all, "555000") && strings.Contains(all, `"x":1`)
		})
		// Matched as the field, not as digits: a round's server time or a
		// resume token may hold the same digits by chance.
		if strings.Contains(ada.all(), `"ammo":777`) || strings.Contains(bob.all(), `"ammo":555`) {
			t.Fatalf("a private field reached another viewer (visible %q):\nada got:\n%s\nbob got:\n%s", visible, ada.all(), bob.all())
		}
		// Wrong types: never sent, logged once per field.
		send(bob, "bad")
		send(bob, "bad")
		ada.wire(t, "bob's later moves", func(all string) bool { return strings.Contains(all, `"x":3`) })
		if strings.Contains(ada.all(), `"name":4`) || strings.Contains(bob.all(), `"name":4`) {
			t.Fatal("a number was sent as the string field name")
		}
		out := logs.wait(t, "hook=fields", "field name of a player must be a string, not 4", "the value is not sent")
		if n := strings.Count(out, "field name of a player"); n != 1 {
			t.Fatalf("the wrong type was logged %d times for the same field, want once", n)
		}
	}
}

// ?room=<code> joins or starts the instance holding the code; such an
// instance takes nobody without it, and its capacity holds.
func TestPrivateRooms(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/ctl": ctl()}) // capacity 3
	ada, _, err := e.dial(t, "a.example", "/ctl?name=ada&room=abc", nil)
	if err != nil {
		t.Fatal(err)
	}
	aw := ada.next("welcome")
	if aw["room"] != "abc" {
		t.Fatalf("the welcome names room %v, want abc", aw["room"])
	}
	pub := e.join(t, "a.example", "ctl", "pub")
	if pub.inst == aw["instance"] {
		t.Fatal("a player without the code joined a private room")
	}
	var mates []*client
	for _, name := range []string{"bob", "cy"} {
		c, _, err := e.dial(t, "a.example", "/ctl?room=abc&name="+name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := c.next("welcome"); w["instance"] != aw["instance"] {
			t.Fatal("the room's code did not join its instance")
		}
		mates = append(mates, c)
	}
	full, _, err := e.dial(t, "a.example", "/ctl?room=abc&name=dan", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := full.next("error"); m["error"] != "room abc is full" {
		t.Fatalf("a full room: %v", m)
	}
	if code := full.closed(t); code != 1013 {
		t.Fatalf("a full room closed with %d, want 1013", code)
	}
	// Another code is another instance; a bad code is refused before the upgrade.
	other, _, _ := e.dial(t, "a.example", "/ctl?room=xyz", nil)
	if w := other.next("welcome"); w["instance"] == aw["instance"] || w["instance"] == pub.inst {
		t.Fatal("room xyz shared an instance")
	}
	for _, bad := range []string{"a-b", "abc%20", strings.Repeat("a", 33)} {
		if _, resp, err := e.dial(t, "a.example", "/ctl?room="+bad, nil); err == nil || resp == nil || resp.StatusCode != 400 {
			t.Errorf("room %q: %v", bad, err)
		}
	}
	// create got the room's first player's params.
	mates[0].send("host", nil)
	if m := mates[0].next("message"); m["data"] != "ada" {
		t.Fatalf("create's params: %v", m)
	}
}

// Timers do not survive a reload by themselves: the old code's are dropped,
// and restore makes them again.
func TestTimersAcrossAReload(t *testing.T) {
	files := ctl()
	files["hoster-commands/later/run.js"] = `export default function (i, p) { i.state.h = i.after(2, () => { p.hits += 1; }); i.state.armed = true; }`
	files["hoster-instance/serialise.js"] = `export default function (i) { return { armed: !!i.state.armed, ticks: i.state.ticks }; }`
	files["hoster-instance/restore.js"] = `export default function (i, s) {
  i.state.ticks = s.ticks;
  if (s.armed) i.after(2.5, () => { for (const id in i.players) i.players[id].hits += 10; });
}`
	e := start(t, map[string]map[string]string{"a.example/ctl": files})
	ada := e.join(t, "a.example", "ctl", "ada")
	ada.send("later", nil)
	ada.send("msg", nil)
	ada.next("message") // the timer is armed
	e.rt.Reload("a.example", "ctl")
	ada.until("a timer fired", func(m map[string]map[string]any) bool { return m[ada.me]["hits"] != 0.0 })
	ada.mu.Lock()
	defer ada.mu.Unlock()
	if h := ada.things[ada.me]["hits"]; h != 10.0 {
		t.Fatalf("hits %v: the old code's timer survived the reload", h)
	}
}

// The stats lines follow the same rule: a clean close departs at once, with
// its playtime, even with a long grace; a held seat has not departed.
func TestCleanCloseDepartsInTheStats(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)}
	dir := t.TempDir()
	e := startWith(t, map[string]map[string]string{"a.example/lab": graceLab(300)}, func(o *Options) {
		useGameGrace(o)
		o.LogsRoot, o.GamelogInterval, o.Now = dir, time.Minute, clock.Now
	})
	ada := e.join(t, "a.example", "lab", "ada")
	bob := e.join(t, "a.example", "lab", "bob")
	cy := e.join(t, "a.example", "lab", "cy")
	clock.Add(20 * time.Second)
	bob.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1001, "")) // a tab closed
	cy.ws.UnderlyingConn().Close()                                                      // lost: held
	ada.until("bob gone, cy held", func(m map[string]map[string]any) bool {
		return m[bob.me] == nil && m[cy.me] != nil && m[cy.me]["on"] == false
	})
	clock.Add(41 * time.Second)
	path := filepath.Join(dir, "hoster-logs", "a.example", "lab", "hoster-processes", e.rt.Process(), "stats-2026-11-22-10.jsonl")
	var line api.GameStatsLine
	json.Unmarshal([]byte(waitFile(t, path, 1)[0]), &line)
	if line.Arrivals != 3 || line.Departures != 1 || line.Playtime != (api.SumCount{Sum: 20, Count: 1}) {
		t.Fatalf("stats %+v: want 3 arrivals, bob's departure after 20 s", line)
	}
}
