package waitbuf

import (
	"fmt"
	"strings"
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

// The zero value is ready, and Until is woken by the write that makes its
// condition hold.
func TestZeroValueUntil(t *testing.T) {
	var b Buffer
	go func() {
		fmt.Fprint(&b, "port=")
		fmt.Fprint(&b, "8080\n")
	}()
	if !b.Until(func(s string) bool { return strings.HasSuffix(s, "\n") }, 10*time.Second) {
		t.Fatalf("never saw the whole line: %q", b.String())
	}
	if b.String() != "port=8080\n" {
		t.Fatalf("got %q", b.String())
	}
	if b.Until(func(s string) bool { return strings.Contains(s, "never") }, 0) {
		t.Fatal("a condition that never held was reported as met")
	}
}
