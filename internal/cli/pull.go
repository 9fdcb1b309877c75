package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/mirror"
	"github.com/spf13/cobra"
)

// errNoGameLogs is a variant 2 server's answer to the game-log listing.
var errNoGameLogs = errors.New("this server has no game-log routes (it runs with --variant 2, the form of the API without them)")

// pullJobs is the most fetches at once; how many run follows the link's
// round trip (mirror.InFlight).
const pullJobs = 64

// pullReport is the --json summary of a pull.
type pullReport struct {
	mirror.PullSummary
	Elapsed float64  `json:"elapsed"`
	Notes   []string `json:"notes,omitempty"`
}

func newPullCmd(name, short, sub string, part func(dir string) mirror.Part) func(*IO, *globals) *cobra.Command {
	return func(ios *IO, g *globals) *cobra.Command {
		return &cobra.Command{
			Use:   name + " [DIR]",
			Short: short + " (default DIR hoster-mirror/" + sub + ")",
			Args:  cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				dir := filepath.Join("hoster-mirror", sub)
				if len(args) == 1 {
					dir = args[0]
				}
				return runPull(cmd, ios, g, []pullPart{{sub, part(dir)}}, false)
			},
		}
	}
}

func newPullAllCmd(ios *IO, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "pull [DIR]",
		Short: "Mirror the access logs, health day-files and game logs into DIR/{web-logs,server-logs,hoster-logs} (default hoster-mirror)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "hoster-mirror"
			if len(args) == 1 {
				dir = args[0]
			}
			return runPull(cmd, ios, g, []pullPart{
				{"web-logs", mirror.PartLogs(filepath.Join(dir, "web-logs"))},
				{"server-logs", mirror.PartStats(filepath.Join(dir, "server-logs"))},
				{"hoster-logs", mirror.PartGameLogs(filepath.Join(dir, "hoster-logs"))},
			}, true)
		},
	}
}

type pullPart struct {
	name string
	part mirror.Part
}

// runPull runs the parts in one pull, their listings and the server's
// version asked at once; with all set (hoster pull), a server without game
// logs is a note, not a failure.
func runPull(cmd *cobra.Command, ios *IO, g *globals, parts []pullPart, all bool) error {
	start := time.Now()
	ctx, stop := signal.NotifyContext(ctxOrBackground(cmd.Context()), os.Interrupt)
	defer stop()
	out := newOutput(ios, g)
	client, check, _, err := dial(g, out, pullJobs)
	if err != nil {
		return err
	}
	ps := make([]mirror.Part, len(parts))
	for i, p := range parts {
		ps[i] = p.part
	}
	sum, partErrs, err := mirror.Pull(ctx, client, ps, mirror.PullOptions{Jobs: pullJobs, Check: func() error { return check(ctx) }}, out)
	out.Finish()
	if err != nil {
		return err
	}
	rep := pullReport{PullSummary: sum}
	var errs []error
	for i, p := range parts {
		err := partErrs[i]
		if errors.Is(err, apiclient.ErrNotFound) && p.name == "hoster-logs" {
			err = errNoGameLogs
		}
		switch {
		case errors.Is(err, errNoGameLogs) && all:
			rep.Notes = append(rep.Notes, "game logs skipped: "+err.Error())
		case err != nil:
			out.Fail(failure{Op: "pull", Path: p.part.Dir, Error: err.Error()})
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
	}
	rep.Elapsed = time.Since(start).Seconds()
	out.Report(rep)
	for _, n := range rep.Notes {
		out.Status("note: %s", n)
	}
	for _, k := range rep.Kept {
		out.Notice("kept: %s: %s; the archived copy is now %s, and the server's copy in its place", k.Path, k.Why, k.As)
	}
	out.Status("pulled: %d files fetched (%s), %d unchanged in %.1fs", rep.Fetched, humanBytes(rep.Bytes), rep.Unchanged, rep.Elapsed)
	// Each failure was printed as it happened.
	if len(errs) > 0 || len(rep.Failures) > 0 {
		if len(rep.Failures) > 0 {
			errs = append(errs, fmt.Errorf("%d files failed, each named above; the next run tries them again", len(rep.Failures)))
		}
		return withExit(ExitFailed, errors.Join(errs...))
	}
	return nil
}
