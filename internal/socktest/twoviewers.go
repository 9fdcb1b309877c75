package socktest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/compact"
)

// TwoViewers checks the report of pkg/compact/testdata's twoViewers
// script (two connections of the browser library, one per format, compared
// at every update they share), logs the library's cost per update, as
// measured where it ran (where), and returns what each viewer knew last.
func TwoViewers(t *testing.T, report []byte, where string) []string {
	t.Helper()
	var r struct {
		Compared    int
		Problems    []string
		Protocols   []string
		Updates     []int
		MsPerUpdate []float64
		MsMedian    []float64
		ReplayMs    []float64
		Last        []string
	}
	if err := json.Unmarshal(report, &r); err != nil {
		t.Fatalf("the report %q: %v", report, err)
	}
	if len(r.Problems) > 0 {
		t.Fatalf("the two viewers disagree:\n%s", strings.Join(r.Problems, "\n"))
	}
	if len(r.Protocols) != 2 || r.Protocols[0] != compact.Protocol || r.Protocols[1] != "" {
		t.Fatalf("protocols %q, want the compact one and none", r.Protocols)
	}
	if r.Compared < 10 {
		t.Fatalf("only %d updates at the same time to compare (updates %v)", r.Compared, r.Updates)
	}
	if len(r.MsPerUpdate) == 2 && len(r.MsMedian) == 2 && len(r.ReplayMs) == 2 {
		t.Logf("%d updates compared; the library's cost per update in %s: mean %.3f ms compact, %.3f ms JSON; median %.3f ms, %.3f ms; replayed 20 times: %.3f ms compact, %.3f ms JSON",
			r.Compared, where, r.MsPerUpdate[0], r.MsPerUpdate[1], r.MsMedian[0], r.MsMedian[1], r.ReplayMs[0], r.ReplayMs[1])
	}
	return r.Last
}
