package version

import "testing"

func TestRelease(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	for v, want := range map[string]string{
		"v1.2.3": "v1.2.3", "v0.4.0-rc.1": "v0.4.0-rc.1", "v2.0.0-beta1": "v2.0.0-beta1",
		"dev": "dev", "fe94242": "dev", "v1.2.3-4-gabcdef0": "dev", "v1.2.3-dirty": "dev", "": "dev",
	} {
		Version = v
		if got := Release(); got != want {
			t.Errorf("Release() with Version %q = %q, want %q", v, got, want)
		}
	}
}
