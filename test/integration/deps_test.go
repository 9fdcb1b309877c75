package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// Each program links only what it needs: the server never the bundler or
// the client's terminal output; the client never the server's tools API,
// health sampling or log rolling. (The client does link the runtime, the
// Sync API server, the store, the pages and websocket: hoster dev runs a
// private server in process, so that it needs no second program.)
func TestDependencyFences(t *testing.T) {
	for _, tc := range []struct {
		cmd       string
		forbidden []string
	}{
		{"./cmd/hoster-server", []string{"github.com/evanw/esbuild", "github.com/vbauerster/mpb", "github.com/hoster-dev/hoster/pkg/gen", "github.com/hoster-dev/hoster/pkg/mirror"}},
		{"./cmd/hoster", []string{"github.com/hoster-dev/hoster/pkg/tools", "github.com/hoster-dev/hoster/pkg/health",
			"github.com/hoster-dev/hoster/pkg/accesslog", "github.com/hoster-dev/hoster/pkg/deploy", "github.com/hoster-dev/hoster/internal/servercmd",
			"github.com/shirou/gopsutil", "gopkg.in/natefinch/lumberjack.v2"}},
	} {
		cmd := exec.Command("go", "list", "-deps", tc.cmd)
		cmd.Dir = repoRoot(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", tc.cmd, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range tc.forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s links %s", tc.cmd, dep)
				}
			}
		}
	}
}
