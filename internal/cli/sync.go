package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/hoster-dev/hoster/internal/version"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/hoster-dev/hoster/pkg/mirror"
	"github.com/spf13/cobra"
)

type syncOptions struct {
	DryRun     bool
	Jobs       int
	AllowEmpty bool
	MaxDelete  int
	Watch      bool
	// hashes carries local hashes between the rounds of a watch.
	hashes *mirror.HashCache
}

func newSyncCmd(ios *IO, g *globals) *cobra.Command {
	o := syncOptions{}
	cmd := &cobra.Command{
		Use:   "sync [ROOT]",
		Short: "Generate every game, then mirror ROOT's games to the server",
		Long: `sync runs hoster gen on ROOT (default .), then mirrors every game under it
(<domain>/<game>/ with hoster-game.json) to the server: files that are new or
changed are uploaded, server files that are gone locally are deleted. Deletes
run last, and not at all when an upload failed. Hidden entries, node_modules
and names starting with "_" are neither pushed nor deleted.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := "."
			if len(args) == 1 {
				root = args[0]
			}
			if o.Jobs < 1 {
				return withExit(ExitUsage, fmt.Errorf("--jobs must be at least 1, not %d", o.Jobs))
			}
			if o.MaxDelete < 0 {
				return withExit(ExitUsage, fmt.Errorf("--max-delete must not be negative"))
			}
			ctx, stop := signal.NotifyContext(ctxOrBackground(cmd.Context()), os.Interrupt)
			defer stop()
			if o.Watch {
				return watchSync(ctx, ios, g, root, o)
			}
			return runSync(ctx, ios, g, root, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan (uploads, deletes) and change nothing")
	f.IntVar(&o.Jobs, "jobs", 64, "most transfers at a time; how many run follows the link's round trip (8 on loopback)")
	f.BoolVar(&o.AllowEmpty, "allow-empty", false, "let a ROOT with no game delete the server's games")
	f.IntVar(&o.MaxDelete, "max-delete", 0, "refuse a sync that would delete more than N server files (0: no limit)")
	f.BoolVar(&o.Watch, "watch", false, "after syncing, regenerate and sync again on every save, until Ctrl-C")
	return cmd
}

// syncReport is the --json summary of a sync.
type syncReport struct {
	mirror.SyncSummary
	Elapsed float64         `json:"elapsed"`
	DryRun  bool            `json:"dryRun"`
	Uploads []plannedUpload `json:"uploads,omitempty"` // the plan, in a dry run
	Deletes []string        `json:"deletes,omitempty"`
}

type plannedUpload struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

func runSync(ctx context.Context, ios *IO, g *globals, root string, o syncOptions) error {
	start := time.Now()
	out := newOutput(ios, g)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return failAt(ExitUsage, "read", root, fmt.Errorf("syncing: %s is not a directory", root))
	}
	// Configuration first: a misconfigured sync should not spend time
	// generating. The server's version is checked beside the tree request
	// and the generator, so a sync waits for one round trip, not two.
	client, check, server, err := dial(g, out, o.Jobs)
	if err != nil {
		return err
	}
	// The generator runs while the server computes its tree. A game that
	// fails to generate is left as it is on the server (it keeps running
	// its last good version); the others are pushed.
	generate := func() ([]string, error) {
		res, err := gen.GenerateWith(root, gen.Options{Release: version.Release()})
		if err != nil {
			return nil, failAt(ExitFailed, "generate", root, fmt.Errorf("generating: %w", err))
		}
		for _, p := range res.Problems() {
			out.Fail(problemFailure(p))
			fmt.Fprintf(ios.ErrOut, "%s\n", p)
		}
		return res.Broken(), nil
	}

	sum, err := mirror.Sync(ctx, root, client, mirror.SyncOptions{
		Jobs: o.Jobs, DryRun: o.DryRun, Prepare: generate, Hashes: o.hashes,
		Check: func() error { return check(ctx) },
		Plan:  mirror.PlanOptions{AllowEmpty: o.AllowEmpty, MaxDelete: o.MaxDelete},
	}, out)
	out.Finish()
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		return err
	case errors.Is(err, mirror.ErrEmptyRoot):
		return failAt(ExitUsage, "plan", root, err)
	case errors.As(err, new(*apiclient.Error)):
		// The server's tree could not be had: the server is where it failed.
		return failAt(ExitFailed, "connect", server, fmt.Errorf("syncing: %w", err))
	default:
		return failAt(ExitFailed, "sync", root, fmt.Errorf("syncing: %w", err))
	}
	report := syncReport{SyncSummary: sum, Elapsed: time.Since(start).Seconds(), DryRun: o.DryRun}
	if o.DryRun {
		return reportDryRun(ios, g, out, report)
	}
	return reportSync(ios, out, root, report)
}

// reportDryRun prints the plan of a dry run, and what it would do.
func reportDryRun(ios *IO, g *globals, out *output, report syncReport) error {
	sum := report.SyncSummary
	for _, u := range sum.Plan.Uploads {
		report.Uploads = append(report.Uploads, plannedUpload{u.Path, u.Size})
		if !g.JSON {
			fmt.Fprintf(ios.Out, "upload %s %d\n", u.Path, u.Size)
		}
	}
	for _, d := range sum.Plan.Deletes {
		report.Deletes = append(report.Deletes, d.Path)
		if !g.JSON {
			fmt.Fprintf(ios.Out, "delete %s\n", d.Path)
		}
	}
	out.Report(report)
	out.Status("dry run: would upload %d files (%s) and delete %d; %d unchanged; nothing was changed",
		len(sum.Plan.Uploads), humanBytes(sum.Plan.UploadBytes()), sum.Plan.DeleteFiles(), sum.Unchanged)
	if len(sum.Left) > 0 {
		return withExit(ExitFailed, errors.New(leftMessage(sum.Left)))
	}
	return nil
}

// reportSync prints what a sync did, and fails it where it failed
// somewhere.
func reportSync(ios *IO, out *output, root string, report syncReport) error {
	sum := report.SyncSummary
	out.Report(report)
	for _, n := range sum.Notes {
		out.Status("note: %s", n)
	}
	out.Status("synced %s: %d uploaded (%s), %d deleted, %d unchanged in %.1fs",
		root, sum.Uploaded, humanBytes(sum.Bytes), sum.Deleted, sum.Unchanged, report.Elapsed)
	if len(sum.Failures) == 0 && sum.NotSent == 0 && len(sum.Left) == 0 {
		return nil
	}
	for _, f := range sum.Failures {
		if f.Op != "upload" && f.Op != "delete" { // those were printed as they happened
			fmt.Fprintf(ios.ErrOut, "failed: %s %s: %s\n", f.Op, f.Path, f.Error)
		}
	}
	var msgs []string
	if len(sum.Left) > 0 {
		msgs = append(msgs, leftMessage(sum.Left))
	}
	if m := failureSummary(sum); m != "" {
		msgs = append(msgs, m)
	}
	return withExit(ExitFailed, errors.New(strings.Join(msgs, "; ")))
}

// failureSummary is the last line of a sync that failed somewhere.
func failureSummary(sum mirror.SyncSummary) string {
	count := map[string]int{}
	for _, f := range sum.Failures {
		count[f.Op]++
	}
	var parts []string
	if sum.NotSent > 0 {
		parts = append(parts, fmt.Sprintf("server unreachable: %d files not sent", sum.NotSent))
	}
	if n := count["upload"] + count["delete"]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d transfers failed", n, len(sum.Plan.Uploads)+len(sum.Plan.Deletes)))
	}
	if n := count["skip"]; n > 0 {
		noun := "names"
		if n == 1 {
			noun = "name"
		}
		parts = append(parts, fmt.Sprintf("%d local %s skipped (not UTF-8, or with a control character)", n, noun))
	}
	if sum.DeletesSkipped && sum.NotSent == 0 {
		parts = append(parts, mirror.ErrUploadsFailed.Error())
	}
	if sum.Differ > 0 {
		parts = append(parts, fmt.Sprintf("the server's tree changed during the sync: %d files differ", sum.Differ))
	} else if count["check"] > 0 {
		parts = append(parts, "the server's tree could not be checked after the sync")
	}
	return strings.Join(parts, "; ")
}

// leftMessage names the games that failed to generate and were left alone.
func leftMessage(games []string) string {
	return fmt.Sprintf("generating failed for %s, so the server keeps its last good version (nothing of it was pushed or deleted); fix the problems above and sync again",
		strings.Join(games, ", "))
}

// watchSync syncs, then again after every burst of saves under root, until
// ctx ends. A failed round is reported and the watch goes on; only a usage
// or configuration error on the first round stops it.
func watchSync(ctx context.Context, ios *IO, g *globals, root string, o syncOptions) error {
	if o.DryRun {
		return withExit(ExitUsage, errors.New("--watch and --dry-run do not go together"))
	}
	if g.JSON {
		return withExit(ExitUsage, errors.New("--watch and --json do not go together (a watch has no one summary: run sync --json once)"))
	}
	report := func(err error) {
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "hoster: %v\n", err)
		}
	}
	o.hashes = mirror.NewHashCache() // unchanged files are not read again each round
	err := runSync(ctx, ios, g, root, o)
	if code := exitCode(err); code == ExitUsage || code == ExitVersion {
		return err
	}
	report(err)
	werr := mirror.Watch(ctx, root, 200*time.Millisecond,
		func() { fmt.Fprintf(ios.ErrOut, "watching %s for changes; Ctrl-C stops\n", root) },
		func() { report(runSync(ctx, ios, g, root, o)) })
	if werr != nil {
		return withExit(ExitFailed, werr)
	}
	return nil
}
