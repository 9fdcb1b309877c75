package cli

import (
	"context"
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

// pullReport is the --json summary of a pull. With several servers, each
// node's is in Nodes, and the summary adds them up.
type pullReport struct {
	mirror.PullSummary
	Elapsed float64                       `json:"elapsed"`
	Notes   []string                      `json:"notes,omitempty"`
	Nodes   map[string]mirror.PullSummary `json:"nodes,omitempty"`
}

func newPullCmd(name, short, sub string, part func(dir string) mirror.Part) func(*IO, *globals) *cobra.Command {
	return func(ios *IO, g *globals) *cobra.Command {
		return &cobra.Command{
			Use:   name + " [DIR]",
			Short: short + " (default DIR hoster-mirror/" + sub + "; with several servers, DIR/<node>, by default hoster-mirror/<node>/" + sub + ")",
			Args:  cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				p := pullPart{name: sub, base: "hoster-mirror", sub: sub, part: part}
				if len(args) == 1 {
					p.base, p.sub = args[0], ""
				}
				return runPull(cmd, ios, g, []pullPart{p}, false)
			},
		}
	}
}

func newPullAllCmd(ios *IO, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "pull [DIR]",
		Short: "Mirror the access logs, health day-files and game logs into DIR/{web-logs,server-logs,hoster-logs} (default hoster-mirror; with several servers, DIR/<node>/...)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "hoster-mirror"
			if len(args) == 1 {
				dir = args[0]
			}
			return runPull(cmd, ios, g, []pullPart{
				{"web-logs", dir, "web-logs", mirror.PartLogs},
				{"server-logs", dir, "server-logs", mirror.PartStats},
				{"hoster-logs", dir, "hoster-logs", mirror.PartGameLogs},
			}, true)
		},
	}
}

// pullPart is a part of a pull and where it goes: base/sub for one server,
// base/<node>/sub for each node of several.
type pullPart struct {
	name      string
	base, sub string
	part      func(dir string) mirror.Part
}

// at is the part for the node named (one server: "").
func (p pullPart) at(node string) mirror.Part {
	return p.part(filepath.Join(p.base, node, p.sub))
}

// runPull runs the parts in one pull, their listings and the server's
// version asked at once; with all set (hoster pull), a server without game
// logs is a note, not a failure. With several servers configured
// (hoster-config-servers) and no --server, each node is pulled in turn into
// its own folder; one that fails leaves the others to be pulled.
func runPull(cmd *cobra.Command, ios *IO, g *globals, parts []pullPart, all bool) error {
	start := time.Now()
	ctx, stop := signal.NotifyContext(ctxOrBackground(cmd.Context()), os.Interrupt)
	defer stop()
	out := newOutput(ios, g)
	cfg, err := loadConfig(g)
	if err != nil {
		return err
	}
	if len(cfg.Servers) < 2 || g.Server != "" {
		rep, errs, err := pullNode(ctx, out, g, cfg, parts, all, "")
		out.Finish()
		if err != nil {
			return err
		}
		return reportPull(out, rep, errs, start)
	}
	rep := pullReport{Nodes: map[string]mirror.PullSummary{}}
	var errs []error
	for _, n := range cfg.Servers {
		c := cfg
		c.Server = n.URL
		nrep, nerrs, err := pullNode(ctx, out, g, c, parts, all, n.Name)
		if err != nil {
			out.Fail(failure{Op: "pull", Path: n.Name, Error: err.Error()})
			nerrs = append(nerrs, err)
		}
		for _, e := range nerrs {
			errs = append(errs, fmt.Errorf("node %s: %w", n.Name, e))
		}
		rep.Nodes[n.Name] = nrep.PullSummary
		rep.Fetched += nrep.Fetched
		rep.Bytes += nrep.Bytes
		rep.Unchanged += nrep.Unchanged
		rep.Failures = append(rep.Failures, nrep.Failures...)
		rep.Kept = append(rep.Kept, nrep.Kept...)
		for _, note := range nrep.Notes {
			rep.Notes = append(rep.Notes, n.Name+": "+note)
		}
	}
	out.Finish()
	return reportPull(out, rep, errs, start)
}

// pullNode pulls the parts from the server cfg names into the folders of
// node ("": one server, today's layout). It returns the pull's report and
// the failures of its parts; err is a failure of the whole pull (no
// server, a version mismatch).
func pullNode(ctx context.Context, out *output, g *globals, cfg config, parts []pullPart, all bool, node string) (pullReport, []error, error) {
	if err := cfg.requireServer(true); err != nil {
		return pullReport{}, nil, err
	}
	client, err := newClient(cfg, out, pullJobs)
	if err != nil {
		return pullReport{}, nil, err
	}
	check := versionCheck(client, cfg.Server)
	ps := make([]mirror.Part, len(parts))
	for i, p := range parts {
		ps[i] = p.at(node)
	}
	sum, partErrs, err := mirror.Pull(ctx, client, ps, mirror.PullOptions{Jobs: pullJobs, Check: func() error { return check(ctx) }}, out)
	if err != nil {
		return pullReport{}, nil, err
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
			out.Fail(failure{Op: "pull", Path: ps[i].Dir, Error: err.Error()})
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
	}
	return rep, errs, nil
}

// reportPull prints a pull's report and returns its outcome.
func reportPull(out *output, rep pullReport, errs []error, start time.Time) error {
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
