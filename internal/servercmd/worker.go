package servercmd

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/hoster-dev/hoster/pkg/hostserver"
	"github.com/hoster-dev/hoster/pkg/runtime"
	"github.com/hoster-dev/hoster/pkg/worker"
	"github.com/spf13/cobra"
)

// The defaults of serve's isolation flags: each game in a worker process
// of its own, 512 MiB of memory unless it asks for more (up to 2 GiB), its
// worker ended after an idle minute.
const (
	defaultIsolation  = "process"
	defaultMemory     = game.DefaultMemory
	defaultMaxMemory  = game.DefaultMaxMemory
	defaultWorkerIdle = time.Minute
)

// minCPUs is the smallest --cpus: the kernel's smallest CPU quota is a
// hundredth of its period.
const minCPUs = 0.01

// workerNice is the CPU priority of the game workers: below the parent,
// which serves the API, the pages and every game's handshakes.
const workerNice = 10

// newWorkerCmd is the hidden hoster-server worker: one game's worker
// process, started by serve --isolation process, never by an operator.
func newWorkerCmd(_, errOut io.Writer) *cobra.Command {
	var o serveOptions
	var gameKey string
	var memory int64
	var cgroups []string
	var idle time.Duration
	var node string
	cmd := &cobra.Command{
		Use:    "worker",
		Short:  "Run one game's instances for hoster-server serve (started by serve, never by hand)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			log := slog.New(slog.NewJSONHandler(errOut, nil))
			// The collector as serve sets its own; an operator's GOGC,
			// inherited, holds.
			gogc, _, set := gcSettings(os.Getenv, 0)
			if !set {
				gogc = 0
			}
			return worker.Serve(worker.ChildOptions{
				Control: os.NewFile(3, "control"),
				Runtime: runtime.Options{
					Game: gameKey, GamesRoot: filepath.Join(o.HostingRoot, api.GamesDir), Logger: log,
					LogsRoot: o.LogsRoot, GamelogInterval: o.GamelogInterval, Node: node,
					MaxInstances: o.MaxInstances, Instances: o.DefaultInstances,
					// serve counts every game's sockets per address,
					// before it hands them over.
					RoomsPerMinute: o.RoomsPerMinute, SocketsPerAddress: -1,
				},
				Memory: memory, Nice: workerNice, GCPercent: gogc, Idle: idle,
				Cgroups: cgroups,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&gameKey, "game", "", "the game, <domain>/<game>")
	f.StringVar(&o.HostingRoot, "hosting-root", "", "the hosting root")
	f.StringVar(&o.LogsRoot, "logs-root", "", "the logs root")
	f.DurationVar(&o.GamelogInterval, "gamelog-interval", time.Minute, "interval of the game stats lines")
	f.StringVar(&node, "node", "", "the fleet node's name, for the telemetry lines")
	f.Int64Var(&memory, "memory", 0, "the memory budget in bytes")
	f.StringArrayVar(&cgroups, "cgroup", nil, "a cgroup v1 group to join before the game loads")
	f.DurationVar(&idle, "idle", time.Minute, "how long the worker stays with no instance")
	f.IntVar(&o.MaxInstances, "max-instances", runtime.DefaultMaxInstances, "")
	f.IntVar(&o.DefaultInstances, "default-instances", runtime.DefaultInstances, "")
	f.IntVar(&o.RoomsPerMinute, "rooms-per-minute", runtime.DefaultRoomsPerMinute, "")
	return cmd
}

// workerPool is serve's pool of game workers (--isolation process): the
// same program, run as hoster-server worker with serve's settings. parent
// is serve's runtime: a loaded game's configuration, whose memory budget
// it follows, the version its worker runs, and the server's count of new
// rooms per address. node is the fleet node's name ("": no fleet), which
// the workers' telemetry lines carry.
func workerPool(o serveOptions, node string, parent hostserver.Parent, log *slog.Logger) (*worker.Pool, error) {
	exe := o.workerExe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding this program to run its game workers: %w", err)
		}
	}
	cmd := []string{exe, "worker", "--hosting-root", o.HostingRoot, "--logs-root", o.LogsRoot,
		"--gamelog-interval", o.GamelogInterval.String(), "--idle", o.WorkerIdle.String(),
		"--max-instances", strconv.Itoa(o.MaxInstances), "--default-instances", strconv.Itoa(o.DefaultInstances),
		"--rooms-per-minute", strconv.Itoa(o.RoomsPerMinute)}
	if node != "" {
		cmd = append(cmd, "--node", node)
	}
	return worker.New(worker.Options{
		Command:    cmd,
		LogsRoot:   o.LogsRoot,
		Logger:     log,
		Watch:      o.memoryWatch,
		Source:     parent.Source,
		TakeRoom:   parent.TakeRoom,
		ReturnRoom: parent.ReturnRoom,
		Cgroup:     worker.CgroupName(o.HostingRoot),
		CPUs:       o.CPUs,
		Budget: func(domain, name string) int64 {
			cfg, _ := parent.Config(domain, name)
			return game.MemoryBudget(cfg, o.Memory, o.MaxMemory)
		},
	}), nil
}

// isolationOn is where serve runs its games on the system goos: a worker
// process per game needs Linux (the parent's death signal, /proc's
// resident memory, RLIMIT_DATA counting the heap), so elsewhere the games
// run in serve's own process, and the log says so.
func isolationOn(goos, isolation string, log *slog.Logger) string {
	if isolation == "process" && goos != "linux" {
		log.Warn("each game in a worker process of its own (--isolation process) needs Linux: the games run in this process", "os", goos)
		return "none"
	}
	return isolation
}

// validIsolation checks --isolation and the memory flags.
func (o serveOptions) validIsolation() error {
	bad := func(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }
	if o.Isolation != "none" && o.Isolation != "process" {
		return bad("reading --isolation: %q is not none or process", o.Isolation)
	}
	if o.Memory < game.MinMemory || o.MaxMemory < game.MinMemory {
		return bad("reading --memory and --max-memory: each must be at least %d (MiB)", game.MinMemory)
	}
	if o.Memory > o.MaxMemory {
		return bad("reading --memory: %d is above --max-memory (%d)", o.Memory, o.MaxMemory)
	}
	if o.CPUs != 0 && o.CPUs < minCPUs {
		return bad("reading --cpus: must be 0 (every core but one) or at least %g, not %g", minCPUs, o.CPUs)
	}
	if o.WorkerIdle <= 0 {
		return bad("reading --worker-idle: must be positive, not %v", o.WorkerIdle)
	}
	return nil
}
