package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestDepsStopsOnlyTheService runs scripts/test-deps.sh as root would on
// a machine missing caddy, with every command it may call replaced by a stub
// that records its arguments: after installing caddy it stops the package's
// service through the service manager, and never a Caddy by name (another
// one on a shared machine is not its to stop).
func TestTestDepsStopsOnlyTheService(t *testing.T) {
	for _, tc := range []struct {
		name            string
		systemd, initd  bool
		want, wantNever []string
	}{
		{name: "systemd", systemd: true, want: []string{"systemctl stop caddy.service"}, wantNever: []string{"service "}},
		{name: "no service manager ran it", wantNever: []string{"systemctl ", "service "}},
		{name: "an init script", initd: true, want: []string{"service caddy stop"}, wantNever: []string{"systemctl "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin, calls := filepath.Join(dir, "bin"), filepath.Join(dir, "calls")
			os.Mkdir(bin, 0o755)
			for _, real := range []string{"sh", "dirname"} {
				p, err := exec.LookPath(real)
				if err != nil {
					t.Skipf("%s is not installed", real)
				}
				os.Symlink(p, filepath.Join(bin, real))
			}
			stub := func(name, body string) {
				script := "#!/bin/sh\necho \"" + name + " $*\" >> " + calls + "\n" + body + "\n"
				if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// root with apt-get and chromium, without caddy.
			stub("id", "echo 0")
			stub("chromium", "")
			stub("apt-get", "")
			for _, name := range []string{"systemctl", "service", "invoke-rc.d", "pkill", "killall", "kill", "pidof", "pgrep"} {
				stub(name, "")
			}
			runDir, initDir := filepath.Join(dir, "run-systemd"), filepath.Join(dir, "init.d")
			if tc.systemd {
				os.Mkdir(runDir, 0o755)
			}
			if tc.initd {
				os.Mkdir(initDir, 0o755)
				os.WriteFile(filepath.Join(initDir, "caddy"), []byte("#!/bin/sh\n"), 0o755)
			}
			cmd := exec.Command(filepath.Join(bin, "sh"), filepath.Join(repoRoot(t), "scripts", "test-deps.sh"))
			cmd.Env = []string{"PATH=" + bin, "HOME=" + dir, "HOSTER_SYSTEMD_RUN_DIR=" + runDir, "HOSTER_INITD_DIR=" + initDir}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("test-deps.sh: %v\n%s", err, out)
			}
			b, _ := os.ReadFile(calls)
			log := string(b)
			if !strings.Contains(log, "apt-get install -y -qq caddy") {
				t.Fatalf("test-deps.sh did not install caddy; calls:\n%s\noutput:\n%s", log, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(log, w) {
					t.Errorf("test-deps.sh did not call %q; calls:\n%s", w, log)
				}
			}
			for _, never := range append(tc.wantNever, "pkill", "killall", "kill ", "pidof", "pgrep") {
				for _, line := range strings.Split(log, "\n") {
					if strings.HasPrefix(line, never) {
						t.Errorf("test-deps.sh called %q; it must stop only the package's service; calls:\n%s", line, log)
					}
				}
			}
		})
	}
}
