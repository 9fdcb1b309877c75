package servercmd

import "testing"

func TestGCSettings(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if p, l, set := gcSettings(env(nil), 8<<30); !set || p != gcPercent || l != 4<<30 {
		t.Errorf("defaults on 8 GiB = %d, %d, %v; want %d, 4 GiB, true", p, l, set, gcPercent)
	}
	if p, l, set := gcSettings(env(nil), 0); !set || p != gcPercent || l != 0 {
		t.Errorf("unknown memory = %d, %d, %v; want no limit", p, l, set)
	}
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if _, _, set := gcSettings(env(map[string]string{k: "200"}), 8<<30); set {
			t.Errorf("%s set by the operator was overridden", k)
		}
	}
}
