package worker

import (
	"runtime"
	"testing"
)

// setProcs gives a worker one P per core whatever Go chose (its CPU bound),
// and leaves an operator's GOMAXPROCS as it is.
func TestSetProcs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one core: a P per core is Go's choice too")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1) // as Go sets it under a 1-core bound
	if n := setProcs(func(string) string { return "" }); n != runtime.NumCPU() || runtime.GOMAXPROCS(0) != n {
		t.Fatalf("setProcs said %d and left GOMAXPROCS at %d, want %d", n, runtime.GOMAXPROCS(0), runtime.NumCPU())
	}
	runtime.GOMAXPROCS(1)
	env := func(k string) string {
		if k == "GOMAXPROCS" {
			return "1"
		}
		return ""
	}
	if n := setProcs(env); n != 1 || runtime.GOMAXPROCS(0) != 1 {
		t.Fatalf("with GOMAXPROCS=1 set by the operator, setProcs said %d and left %d, want 1", n, runtime.GOMAXPROCS(0))
	}
}
