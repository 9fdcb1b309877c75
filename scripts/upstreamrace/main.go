// Command upstreamrace reads the output of `go test -race ./...` and tells
// the failed packages whose races all lie inside one dependency known to
// have its own (github.com/nats-io/nats-server/v2, whose JetStream reads
// a stream's per-subject expectations without its lock while a
// compare-and-set write allocates them: both access stacks are inside
// nats-server, no frame of ours) from every other failure. make test runs
// those packages once more, under the race detector still; anything else
// fails at once.
//
// Usage: go run ./scripts/upstreamrace LOG: prints the packages to run again,
// one a line; exits 1 (naming it) for a failed package with any other
// failure or race.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// upstream is the module whose own races a rerun may pass over.
const upstream = "github.com/nats-io/"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: upstreamrace LOG")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstreamrace:", err)
		os.Exit(2)
	}
	defer f.Close()
	rerun, other, err := judge(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstreamrace: reading the test output:", err)
		os.Exit(2)
	}
	for _, p := range rerun {
		fmt.Println(p)
	}
	if len(other) > 0 {
		fmt.Fprintf(os.Stderr, "upstreamrace: failed for reasons of their own: %s\n", strings.Join(other, " "))
		os.Exit(1)
	}
}

// judge splits the failed packages of a `go test` output (each package's
// lines end with its summary line: ok, FAIL or ?) into those whose only
// trouble is upstream's races (rerun) and the others.
func judge(r io.Reader) (rerun, other []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var block []string
	for sc.Scan() {
		line := sc.Text()
		block = append(block, line)
		pkg, failed, end := summary(line)
		if !end {
			continue
		}
		if failed {
			if upstreamOnly(block) {
				rerun = append(rerun, pkg)
			} else {
				other = append(other, pkg)
			}
		}
		block = nil
	}
	return rerun, other, sc.Err()
}

// summary reads a package's summary line: "ok  \tpkg\t1.2s", "FAIL\tpkg\t3s",
// "FAIL\tpkg [build failed]", "?   \tpkg\t[no test files]".
func summary(line string) (pkg string, failed, end bool) {
	for _, p := range []string{"ok  \t", "FAIL\t", "?   \t"} {
		if rest, ok := strings.CutPrefix(line, p); ok {
			pkg, _, _ = strings.Cut(rest, "\t")
			pkg, _, _ = strings.Cut(pkg, " ")
			return pkg, p == "FAIL\t", true
		}
	}
	return "", false, false
}

// upstreamOnly reports whether a failed package's lines hold at least one
// race report and every report's two access stacks are upstream's (the
// standard library's frames aside), with no frame of any other module.
func upstreamOnly(block []string) bool {
	races := 0
	for i := 0; i < len(block); i++ {
		if block[i] != "WARNING: DATA RACE" {
			continue
		}
		races++
		ok, next := reportUpstream(block, i+1)
		if !ok {
			return false
		}
		i = next
	}
	return races > 0
}

// reportUpstream checks the race report starting at block[i], up to its
// closing line of '='; it returns where that is.
func reportUpstream(block []string, i int) (bool, int) {
	accesses, inAccess, seen := 0, false, false
	for ; i < len(block) && !strings.HasPrefix(block[i], "=================="); i++ {
		line := block[i]
		switch {
		case strings.HasPrefix(line, "Write at") || strings.HasPrefix(line, "Read at") ||
			strings.HasPrefix(line, "Previous write at") || strings.HasPrefix(line, "Previous read at"):
			if inAccess && !seen {
				return false, i
			}
			accesses, inAccess, seen = accesses+1, true, false
		case line == "" || !strings.HasPrefix(line, "  "):
			if inAccess && !seen {
				return false, i
			}
			inAccess = false
		case inAccess && !strings.HasPrefix(line, "      "): // a function, not its file
			fn := strings.TrimSpace(line)
			first, _, hasPath := strings.Cut(fn, "/")
			switch {
			case strings.HasPrefix(fn, upstream):
				seen = true
			case hasPath && strings.Contains(first, "."):
				return false, i // another module's frame: ours, or not known to race
			}
		}
	}
	if inAccess && !seen {
		return false, i
	}
	return accesses >= 2, i
}
