package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func fixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/nats-race.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJudge(t *testing.T) {
	natsRace := fixture(t)
	ours := strings.Replace(natsRace, "  github.com/nats-io/nats-server/v2/server.(*jetStream).applyStreamMsgOp()",
		"  github.com/hoster-dev/hoster/pkg/fleet.(*Node).apply()", 1)
	if ours == natsRace {
		t.Fatal("the fixture has no applyStreamMsgOp frame to replace")
	}
	plain := "--- FAIL: TestX (0.01s)\n    x_test.go:9: wrong\nFAIL\nFAIL\tgithub.com/hoster-dev/hoster/pkg/store\t1.0s\n"
	for _, c := range []struct {
		name         string
		out          string
		rerun, other []string
	}{
		{"upstream's race only", natsRace, []string{"github.com/hoster-dev/hoster/pkg/fleet"}, nil},
		{"a frame of ours in an access", ours, nil, []string{"github.com/hoster-dev/hoster/pkg/fleet"}},
		{"a failure with no race", plain, nil, []string{"github.com/hoster-dev/hoster/pkg/store"}},
		{"both", natsRace + plain, []string{"github.com/hoster-dev/hoster/pkg/fleet"}, []string{"github.com/hoster-dev/hoster/pkg/store"}},
		{"a build failure", "FAIL\tgithub.com/hoster-dev/hoster/pkg/x [build failed]\n", nil, []string{"github.com/hoster-dev/hoster/pkg/x"}},
		{"all passed", "ok  \tgithub.com/hoster-dev/hoster/pkg/game\t1.0s\n", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rerun, other, err := judge(strings.NewReader(c.out))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rerun, c.rerun) || !slices.Equal(other, c.other) {
				t.Errorf("rerun %q, other %q; want %q, %q", rerun, other, c.rerun, c.other)
			}
		})
	}
}
