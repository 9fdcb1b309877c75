package runtime

import (
	"fmt"
	"testing"

	"github.com/gorilla/websocket"
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
