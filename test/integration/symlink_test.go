package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/hoster-dev/hoster/pkg/mirror"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

// TestSymlinkedConfigIsNoGame: a folder whose hoster-game.json is a
// symbolic link is no game to the generator, to sync's walk or to the
// runtime alike (pkg/layout's one rule: a sync sends no symbolic links, so
// such a game could never reach the server). The linked game is given the
// real game's generated module, so the runtime's rule alone keeps it out.
func TestSymlinkedConfigIsNoGame(t *testing.T) {
	root := t.TempDir()
	real, linked := filepath.Join(root, "a.example", "real"), filepath.Join(root, "a.example", "linked")
	for _, dir := range []string{real, linked} {
		if err := os.MkdirAll(filepath.Join(dir, "hoster-instance"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hoster-instance", "create.js"), []byte("export default function (i) {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(real, api.GameConfigFile), []byte(`{"tickRate": 10, "sendRate": 5, "capacity": 2, "origins": ["*"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "real", api.GameConfigFile), filepath.Join(linked, api.GameConfigFile)); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	want := []string{"a.example/real"}

	res, err := gen.Generate(root)
	if err != nil || res.Failed() {
		t.Fatalf("gen: %v %v", err, res.Problems())
	}
	var generated []string
	for _, g := range res.Games {
		generated = append(generated, g.Dir)
	}
	if !slices.Equal(generated, want) {
		t.Errorf("gen generated %v, want %v", generated, want)
	}

	local, err := mirror.Walk(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(local.Games, want) {
		t.Errorf("sync's walk found %v, want %v", local.Games, want)
	}

	for _, f := range []string{api.ServerModule, api.ServerModule + ".map"} {
		b, err := os.ReadFile(filepath.Join(real, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(linked, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := runtime.New(runtime.Options{GamesRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Shutdown(context.Background())
	rt.Reload("a.example", "linked") // as after a sync that touched it
	if got := rt.Games(); !slices.Equal(got, want) {
		t.Errorf("the runtime loaded %v, want %v", got, want)
	}
}
