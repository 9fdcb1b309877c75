package waitbuf

import (
	"fmt"
	"testing"
	"time"
)

func TestWaitFor(t *testing.T) {
	b := New()
	go func() {
		for i := range 3 {
			fmt.Fprintf(b, "line %d\n", i)
		}
	}()
	if !b.WaitFor("line", 3, 10*time.Second) {
		t.Fatalf("never saw three lines: %q", b)
	}
	if b.WaitFor("line", 4, 0) {
		t.Fatal("saw a fourth line that was never written")
	}
}
