package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/devtest"
)

// TestPlaygroundInChromium: hoster dev on the example; its playground,
// opened in Chromium, opens two players of example.com/arena side by side
// in one private room, and its inspector shows their instance with two
// players and its state changing, then one player's view.
func TestPlaygroundInChromium(t *testing.T) {
	skipWithoutChromium(t)
	root := copyExampleSites(t, "sites")
	out, log := devtest.Start(t, root)
	var playground string
	if !out.Until(func(s string) bool {
		for _, line := range strings.Split(s, "\n") {
			if u, ok := strings.CutPrefix(line, "playground  "); ok {
				playground = u
			}
		}
		return playground != "" && strings.Contains(s, "example.com/arena  http://")
	}, 30*time.Second) { // a hang guard
		t.Fatalf("hoster dev printed no playground and game URLs:\n%s%s", out, log)
	}

	chrome := startChromium(t, "about:blank")
	page := chrome.attach(chrome.open(playground))
	// A page not yet past about:blank never answers: its navigation ends
	// that evaluation, which is tried again in the playground.
	loaded := false
	for try := 0; try < 5 && !loaded; try++ {
		page.await(`new Promise(resolve => {
  if (location.href === "about:blank") return;
  if (document.readyState === "loading") addEventListener("DOMContentLoaded", () => resolve(true));
  else resolve(true);
})`, 30*time.Second, &loaded)
	}
	if !loaded {
		t.Fatal("the playground never loaded")
	}
	// Once the game is listed, a click opens two players.
	var opened int
	if err := page.await(`new Promise(resolve => {
  const click = () => {
    const b = document.querySelector('[data-game="example.com/arena"] .open-players');
    if (!b) return false;
    b.closest(".game").querySelector("input").value = "2";
    b.click();
    resolve(document.querySelectorAll("#players iframe").length);
    return true;
  };
  if (!click()) new MutationObserver((_, o) => { if (click()) o.disconnect(); }).observe(document.body, { childList: true, subtree: true });
})`, 30*time.Second, &opened); err != nil || opened != 2 {
		t.Fatalf("opening two players: %d iframes, %v", opened, err)
	}

	// The inspector turns to their instance: two players, and its state
	// (the coins drift) changing from one look to the next.
	type seen struct {
		Instance, Room, Row string
		Players             int
		Changed             bool
	}
	var got seen
	if err := page.await(`new Promise(resolve => {
  let first = null;
  addEventListener("inspected", e => {
    const d = e.detail;
    if (d.players !== 2) return;
    const now = JSON.stringify([d.data.state, d.data.entities]);
    if (first === null) { first = now; return; }
    if (now === first) return;
    const row = document.querySelector('tr.instance[data-instance="' + d.instance + '"]');
    resolve({ instance: d.instance, players: d.players, changed: true,
      room: document.querySelector("#players .player").dataset.room, row: row ? row.dataset.room : "" });
  });
})`, 30*time.Second, &got); err != nil {
		t.Fatalf("waiting for the inspector: %v", err)
	}
	if got.Players != 2 || !got.Changed || got.Room == "" || got.Row != got.Room {
		t.Fatalf("the inspector saw %+v; want the instance of room %q with 2 players", got, got.Room)
	}

	// A player's view: what that player's viewer was last sent, its own
	// thing among it.
	var view struct {
		Player string
		Own    bool
	}
	if err := page.await(`new Promise(resolve => {
  const sel = document.getElementById("viewer");
  const player = sel.options[1].value;
  sel.value = player;
  sel.dispatchEvent(new Event("change"));
  addEventListener("inspected", e => {
    const v = e.detail.data.view;
    if (v && v.things && v.things[player]) resolve({ player, own: v.things[player].type === "player" });
  });
})`, 30*time.Second, &view); err != nil || !view.Own {
		t.Fatalf("a player's view: %+v %v", view, err)
	}
}
