package worker

import (
	"runtime"
	"testing"
)

// A worker may have a P per core (its scheduler sized by them, whatever Go
// chose under its CPU bound), and an operator's GOMAXPROCS is left as it
// is.
func TestSetProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	if most := setProcs(func(string) string { return "" }); most != runtime.NumCPU() || runtime.GOMAXPROCS(0) != most {
		t.Fatalf("setProcs said at most %d and left GOMAXPROCS at %d, want %d", most, runtime.GOMAXPROCS(0), runtime.NumCPU())
	}
	runtime.GOMAXPROCS(3)
	env := func(k string) string {
		if k == "GOMAXPROCS" {
			return "3"
		}
		return ""
	}
	if most := setProcs(env); most != 0 || runtime.GOMAXPROCS(0) != 3 {
		t.Fatalf("with GOMAXPROCS=3 set by the operator, setProcs said %d and left %d, want 0 and 3", most, runtime.GOMAXPROCS(0))
	}
}

// A worker's Ps go up once it is busy, down once it is idle, and stay
// between the two (no flapping around one figure).
func TestNextProcs(t *testing.T) {
	for _, c := range []struct {
		cur, most int
		cores     float64
		want      int
	}{
		{1, 2, 0.3, 1},
		{1, 2, 0.8, 2},
		{2, 2, 0.9, 2},
		{2, 2, 0.6, 2}, // between the two: as it is
		{1, 2, 0.6, 1},
		{2, 2, 0.4, 1},
		{1, 4, 1.5, 4},
		{1, 1, 1.0, 1},
	} {
		if got := nextProcs(c.cur, c.most, c.cores); got != c.want {
			t.Errorf("nextProcs(%d, %d, %.1f) = %d, want %d", c.cur, c.most, c.cores, got, c.want)
		}
	}
}
