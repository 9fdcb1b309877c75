package main

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The bench scripts are run by make bench only: here they are only parsed,
// and those that take --help print their usage without building or running
// anything.
func TestBenchScriptsParse(t *testing.T) {
	scripts, err := filepath.Glob("../*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("finding the bench scripts: %v %v", scripts, err)
	}
	for _, s := range scripts {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
	for _, s := range []string{"../isolation.sh", "../isolation-cost.sh", "../relay.sh"} {
		out, err := exec.Command("bash", s, "--help").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "bench/"+filepath.Base(s)+" [PLAYERS]") {
			t.Errorf("%s --help: %v\n%s", s, err, out)
		}
	}
}

// worstSecond and the tally are what the isolation tables are made of.
func TestWorstSecondAndTally(t *testing.T) {
	by := make([]atomic.Int64, 4)
	for i, n := range []int64{20, 19, 9, 20} {
		by[i].Store(n)
	}
	if worst, at := worstSecond(by, 2); worst != 4.5 || at != 2 {
		t.Errorf("worstSecond = %v at %d, want 4.5 at 2", worst, at)
	}
	tl := &tally{m: map[int]int{}}
	if tl.String() != "none" {
		t.Errorf("an empty tally = %q, want none", tl.String())
	}
	for _, c := range []int{1006, 4003, 4003} {
		tl.add(c)
	}
	if got := tl.String(); got != "4003:2,1006:1" {
		t.Errorf("tally = %q, want 4003:2,1006:1", got)
	}
}

// probeAt spreads the probe joins over their periods: with a period of two
// ticks, they land in every part of a tick, not at one phase of it.
func TestProbeJoinsComeAtAnyPhaseOfATick(t *testing.T) {
	const every, tick = 100 * time.Millisecond, 50 * time.Millisecond
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Unix(0, 0)
	var quarters [4]int
	for k := range 400 {
		next := start.Add(time.Duration(k) * every)
		at := probeAt(next, every, rng)
		if d := at.Sub(next); d < 0 || d >= every {
			t.Fatalf("probe %d at %v into its period, want within [0, %v)", k, d, every)
		}
		quarters[at.Sub(start)%tick*4/tick]++
	}
	for q, n := range quarters {
		if n == 0 {
			t.Errorf("no probe in quarter %d of a tick: %v", q, quarters)
		}
	}
}

// bench/relay.sh's bots fill its rooms evenly, and its -measure is read
// strictly.
func TestRelayBenchRoomsAndMeasure(t *testing.T) {
	p := roomsProtocol{rooms: 3, next: &atomic.Int64{}}
	count := map[string]int{}
	for range 60 {
		count[p.nextRoom()]++
	}
	if len(count) != 3 || count["room=r0"] != 20 || count["room=r1"] != 20 || count["room=r2"] != 20 {
		t.Errorf("60 joins over 3 rooms went %v, want 20 in each of room=r0, r1, r2", count)
	}
	ts, err := parseMeasure("B=12,A=7")
	if err != nil || len(ts) != 2 || ts[0] != (tree{"A", 7}) || ts[1] != (tree{"B", 12}) {
		t.Errorf("parseMeasure(B=12,A=7) = %v, %v; want A=7, B=12", ts, err)
	}
	for _, bad := range []string{"A", "A=x", "=3", "A=0"} {
		if _, err := parseMeasure(bad); err == nil || !strings.Contains(err.Error(), "reading -measure") {
			t.Errorf("parseMeasure(%q) = %v, want a reading -measure error", bad, err)
		}
	}
}
