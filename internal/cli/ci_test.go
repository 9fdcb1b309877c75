package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/internal/contracttest"
)

// recipeCommands reads the hoster commands of the CI workflow
// (examples/ci/hoster.yml), one a line, each with the file its stdout goes
// to, if any; docs/ci.md must list the same.
func recipeCommands(t *testing.T) [][]string {
	workflow := hosterLines(t, filepath.Join("..", "..", "examples", "ci", "hoster.yml"))
	doc := hosterLines(t, filepath.Join("..", "..", "docs", "ci.md"))
	if len(workflow) < 4 || strings.Join(workflow, "\n") != strings.Join(doc, "\n") {
		t.Fatalf("the workflow's hoster commands:\n%s\nare not docs/ci.md's:\n%s", strings.Join(workflow, "\n"), strings.Join(doc, "\n"))
	}
	var cmds [][]string
	for _, line := range workflow {
		cmds = append(cmds, strings.Fields(line))
	}
	return cmds
}

// hosterLines returns the lines of a file that run hoster (after a YAML
// "run: "; without a trailing "# comment").
func hosterLines(t *testing.T, file string) []string {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "run: ")
		if line, _, _ = strings.Cut(line, " #"); strings.HasPrefix(line, "hoster ") {
			lines = append(lines, strings.Join(strings.Fields(line), " "))
		}
	}
	return lines
}

// TestCIRecipe runs the CI workflow's hoster commands, as they are written
// there, with the real hoster binary in an environment that holds only the
// three HOSTER_CONFIG_ variables (and PATH and HOME), against a real server
// on 127.0.0.1: the example games are checked, tested, planned and pushed.
func TestCIRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hoster")
	}
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "hoster")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/hoster-dev/hoster/cmd/hoster").CombinedOutput(); err != nil {
		t.Fatalf("building hoster: %v\n%s", err, out)
	}
	if err := os.CopyFS(filepath.Join(dir, "sites"), os.DirFS(filepath.Join("..", "..", "examples", "sites"))); err != nil {
		t.Fatal(err)
	}
	srv := contracttest.Start(t, contracttest.Options{Token: testToken})
	games := srv.GamesRoot

	path := os.Getenv("PATH")
	tsc := os.Getenv("HOSTER_TSC")
	if tsc != "" {
		path = filepath.Dir(tsc) + string(os.PathListSeparator) + path // the workflow installs tsc on PATH
	}
	env := []string{
		"HOSTER_CONFIG_SERVER=" + srv.URL,
		"HOSTER_CONFIG_APITOKEN=" + testToken,
		// Set, and empty: over http on loopback there is no certificate
		// to pin.
		"HOSTER_CONFIG_CERTSHA256=",
		"PATH=" + path,
		"HOME=" + t.TempDir(),
	}
	for _, cmd := range recipeCommands(t) {
		args, stdout := cmd[1:], ""
		if i := len(args) - 2; i > 0 && args[i] == ">" {
			args, stdout = args[:i], args[i+1]
		}
		if args[0] == "gen" && tsc == "" {
			t.Logf("skipping %q: HOSTER_TSC is not set (make test installs typescript with npm)", strings.Join(cmd, " "))
			continue
		}
		c := exec.Command(bin, args...)
		c.Dir, c.Env = dir, env
		var out, errOut strings.Builder
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd, " "), err, out.String(), errOut.String())
		}
		if stdout == "" {
			continue
		}
		var doc struct {
			ExitCode         int
			Failures         []any
			Uploaded         int
			DryRun           bool
			Uploads, Deletes []any
		}
		if err := json.Unmarshal([]byte(out.String()), &doc); err != nil || doc.ExitCode != 0 || doc.Failures == nil || len(doc.Failures) != 0 {
			t.Fatalf("%s: the --json output: %v\n%s", strings.Join(cmd, " "), err, out.String())
		}
		_, served := os.Stat(filepath.Join(games, "example.com", "arena", "hoster.server.js"))
		switch {
		case doc.DryRun && (len(doc.Uploads) == 0 || served == nil):
			t.Fatalf("the dry run planned %d uploads, and changed the server (%v):\n%s", len(doc.Uploads), served, out.String())
		case !doc.DryRun && (doc.Uploaded == 0 || served != nil):
			t.Fatalf("the push uploaded %d files, the server has the game's module: %v\n%s", doc.Uploaded, served == nil, out.String())
		}
	}
}
