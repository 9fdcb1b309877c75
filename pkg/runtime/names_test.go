package runtime

import "testing"

// A command's name and its arguments' names are made strings once: the
// same bytes again give the string kept, without an allocation, and a
// name that takes another's slot gives itself.
func TestNamesAreKeptOnce(t *testing.T) {
	dx, dy := []byte("dx"), []byte("dy")
	if names.of(dx) != "dx" || names.of(dy) != "dy" {
		t.Fatal("a name read back wrong")
	}
	if n := testing.AllocsPerRun(100, func() { names.of(dx) }); n != 0 {
		t.Fatalf("a name seen before cost %v allocations, want 0", n)
	}
	var c nameCache
	for i := range 2000 { // more names than slots: every slot taken over
		b := []byte{byte(i), byte(i >> 8), 'k'}
		if got := c.of(b); got != string(b) {
			t.Fatalf("name %q read back as %q", b, got)
		}
	}
}
