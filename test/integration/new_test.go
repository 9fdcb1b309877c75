package integration

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/devtest"
	"github.com/hoster-dev/hoster/pkg/scaffold"
)

// pressRight presses the right arrow on the new game's page once its player
// is shown, and resolves when an update has moved the player right, with
// the colour the page drew where game.view puts the player at the next
// animation frame. A page not yet past about:blank never answers: its
// navigation ends the evaluation, which is tried again in the game's page.
const pressRight = `new Promise((resolve) => {
  if (location.href === "about:blank") return; // the page is still on its way
  if (document.readyState === "loading") addEventListener("DOMContentLoaded", play);
  else play();
  function play() {
    let x0 = null;
    const press = () => {
      x0 = game.players[game.me].x;
      dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight" }));
    };
    game.on("change", (thing, changed) => {
      if (x0 === null || thing.id !== game.me || !("x" in changed) || thing.x <= x0) return;
      requestAnimationFrame(() => {
        const v = game.view(game.me);
        const pixel = Array.from(ctx.getImageData(Math.round(v.x * scale), Math.round(v.y * scale), 1, 1).data);
        resolve({ x0, x: thing.x, viewX: v.x, pixel });
      });
    });
    if (game.me && game.players[game.me]) press();
    else game.on("appear", (thing) => { if (thing.id === game.me && x0 === null) press(); });
  }
})`

// TestNewGamePageInChromium: the page hoster new writes plays in a browser
// under hoster dev: the arrow key sends the move command, the update moves
// the player, and the canvas draws it where game.view says.
func TestNewGamePageInChromium(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium is not installed (make test-deps installs Debian's chromium as root); skipping the browser test")
	}
	root := t.TempDir()
	if _, err := scaffold.Write(scaffold.Options{Root: root, Domain: "example.com", Game: "tag"}); err != nil {
		t.Fatal(err)
	}
	out, _ := devtest.Start(t, root)
	url := devtest.URL(t, out, "example.com/tag")

	chrome := startChromium(t, "about:blank")
	page := chrome.attach(chrome.open(url))
	var r struct {
		X0, X, ViewX float64
		Pixel        []int
	}
	var err error
	for try := 0; try < 5 && r.Pixel == nil; try++ {
		err = page.await(pressRight, 30*time.Second, &r)
	}
	if r.Pixel == nil {
		t.Fatalf("playing %s: %v", url, err)
	}
	t.Logf("the arrow key moved the player from x=%v to x=%v (drawn at %v)", r.X0, r.X, r.ViewX)
	// The page draws its own player in #4af.
	if got := fmt.Sprint(r.Pixel); got != "[68 170 255 255]" {
		t.Fatalf("the canvas at the player's view position is %s, want its colour [68 170 255 255]", got)
	}
}
