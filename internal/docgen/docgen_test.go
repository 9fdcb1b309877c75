package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/internal/cli"
	"github.com/hoster-dev/hoster/internal/servercmd"
	"github.com/spf13/pflag"
)

// TestCLIDocsAreCurrent fails when docs/cli is not what `make docs` writes
// from the commands as they are: a flag or command added, changed or
// removed without regenerating the pages.
func TestCLIDocsAreCurrent(t *testing.T) {
	want := pages()
	dir := filepath.Join("..", "..", "docs", "cli")
	// Written into a temporary folder first, as make docs would write them.
	tmp := t.TempDir()
	if err := write(tmp, want); err != nil {
		t.Fatal(err)
	}
	have, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("docs/cli/%s is the page of no command: run make docs", filepath.Base(f))
		}
	}
	for name := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("docs/cli/%s is missing: run make docs", name)
			continue
		}
		gen, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(gen) {
			t.Errorf("docs/cli/%s is stale (the command changed): run make docs", name)
		}
	}
}

// docLink is a link to a page under docs/ in the README's Markdown.
var docLink = regexp.MustCompile(`\]\((docs/[^)#\s]+\.md)\)`)

// TestReadmeListsEveryPage fails when a page under docs/ is missing from the
// README's Documentation list.
// docs/cli is listed through its two top pages, which link to the rest.
func TestReadmeListsEveryPage(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, index, ok := strings.Cut(string(readme), "\n## Documentation\n")
	if !ok {
		t.Fatal("README.md has no \"## Documentation\" section")
	}
	index, _, _ = strings.Cut(index, "\n## ")
	listed := map[string]bool{}
	for _, m := range docLink.FindAllStringSubmatch(index, -1) {
		// (A listed page need not exist yet: docs/ci.md comes with another
		// branch.)
		listed[m[1]] = true
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "docs", "cli", "hoster.md"), filepath.Join(root, "docs", "cli", "hoster-server.md"))
	for _, p := range pages {
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if !listed[rel] {
			t.Errorf("README.md's Documentation list does not name %s", rel)
		}
	}
}

// TestConfigNamesEveryFlag fails when docs/config.md, the one table of
// settings, misses a flag of hoster-server serve or init (each also an
// environment variable) or a global flag of hoster.
func TestConfigNamesEveryFlag(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	ios := &cli.IO{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	server := servercmd.Command(io.Discard, io.Discard)
	sets := map[string]*pflag.FlagSet{"hoster": cli.Command(ios).PersistentFlags()}
	for _, c := range server.Commands() {
		if c.Name() == "serve" || c.Name() == "init" {
			sets["hoster-server "+c.Name()] = c.Flags()
		}
	}
	for cmd, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(text, "`--"+f.Name+"`") && !strings.Contains(text, "`--"+f.Name+" ") && !strings.Contains(text, "`--"+f.Name+",") {
				t.Errorf("docs/config.md does not name %s --%s", cmd, f.Name)
			}
			if strings.HasPrefix(cmd, "hoster-server") && !strings.Contains(text, servercmd.EnvName(f.Name)) {
				t.Errorf("docs/config.md does not name %s, the variable of %s --%s", servercmd.EnvName(f.Name), cmd, f.Name)
			}
		})
	}
}
