package gen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ErrNoTSC is returned by FindTSC when no TypeScript compiler can be run.
var ErrNoTSC = errors.New("gen --check needs the TypeScript compiler, tsc, and found none on PATH or through npx: " +
	"install it beside your games with `npm install --save-dev typescript` (or globally with `npm install -g typescript`)")

// FindTSC returns the command that runs the TypeScript compiler: $HOSTER_TSC
// when set, else tsc on PATH, else npx's (from a node_modules above dir, or
// npm's global folder; npx is never allowed to download it).
func FindTSC(ctx context.Context, dir string) ([]string, error) {
	if c := os.Getenv("HOSTER_TSC"); c != "" {
		return strings.Fields(c), nil
	}
	if p, err := exec.LookPath("tsc"); err == nil {
		return []string{p}, nil
	}
	if p, err := exec.LookPath("npx"); err == nil {
		cmd := exec.CommandContext(ctx, p, "--no-install", "tsc", "--version")
		cmd.Dir = dir
		if out, err := cmd.Output(); err == nil && bytes.HasPrefix(out, []byte("Version ")) {
			return []string{p, "--no-install", "tsc"}, nil
		}
	}
	return nil, ErrNoTSC
}

// tscLine is one diagnostic of tsc --pretty false:
// hoster-player/join.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.
var tscLine = regexp.MustCompile(`^(.+?)\((\d+),(\d+)\): (?:error|warning) (TS\d+: .*)$`)

// Check runs the TypeScript compiler over one generated game, dir being
// "<domain>/<game>" under root, with the game's tsconfig.json (gen writes one
// when the game has none), and returns its diagnostics as problems. The error
// is for a compiler that could not be run at all.
func Check(ctx context.Context, tsc []string, root, dir string) ([]Problem, error) {
	abs := filepath.Join(root, filepath.FromSlash(dir))
	args := append(append([]string{}, tsc[1:]...), "--noEmit", "--pretty", "false", "-p", TSConfigFile)
	cmd := exec.CommandContext(ctx, tsc[0], args...)
	cmd.Dir = abs
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("running %s: %w", tsc[0], err)
	}
	var problems []Problem
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		m := tscLine.FindStringSubmatch(line)
		if m == nil {
			// Continuation lines of a diagnostic, or one without a place.
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			if n := len(problems); n > 0 && strings.HasPrefix(sc.Text(), " ") {
				problems[n-1].Msg += " " + line
				continue
			}
			problems = append(problems, Problem{File: dir + "/" + TSConfigFile, Msg: line})
			continue
		}
		ln, _ := strconv.Atoi(m[2])
		col, _ := strconv.Atoi(m[3])
		problems = append(problems, Problem{File: dir + "/" + filepath.ToSlash(m[1]), Line: ln, Col: col, Msg: m[4]})
	}
	if err != nil && len(problems) == 0 {
		return nil, fmt.Errorf("running %s: %w: %s", tsc[0], err, strings.TrimSpace(stderr.String()))
	}
	return problems, nil
}
