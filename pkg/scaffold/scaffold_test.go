package scaffold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLanguages: the TypeScript game's hooks carry their types; the
// JavaScript game has the same files as .js, without a type or a template
// left in them, and no tsconfig.json; the names are filled in everywhere.
func TestLanguages(t *testing.T) {
	for _, js := range []bool{false, true} {
		root := t.TempDir()
		files, err := Write(Options{Root: root, Domain: "example.com", Game: "tag", JS: js})
		if err != nil {
			t.Fatal(err)
		}
		var sawTS, sawConfig bool
		for _, f := range files {
			body, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
			if err != nil {
				t.Fatal(err)
			}
			s := string(body)
			if strings.Contains(s, "{{") || strings.Contains(s, "<no value>") {
				t.Errorf("%s: a template is left: %s", f, s)
			}
			if js && (strings.HasSuffix(f, ".ts") || strings.Contains(s, ": Instance")) {
				t.Errorf("%s: TypeScript in a JavaScript game", f)
			}
			sawTS = sawTS || strings.Contains(s, "player: Player")
			sawConfig = sawConfig || strings.HasSuffix(f, "/tsconfig.json")
		}
		if sawTS == js || sawConfig == js {
			t.Errorf("js=%v: typed hooks %v, tsconfig.json %v", js, sawTS, sawConfig)
		}
		config, _ := os.ReadFile(filepath.Join(root, "example.com", "tag", "hoster-game.json"))
		page, _ := os.ReadFile(filepath.Join(root, "example.com", "tag", "index.html"))
		if !strings.Contains(string(config), `"origins": ["https://example.com"]`) ||
			!strings.Contains(string(page), "<title>tag</title>") {
			t.Errorf("the names are not filled in:\n%s\n%s", config, page)
		}
	}
}
