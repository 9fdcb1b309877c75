package worker_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/worker"
)

// needCgroup skips the test, saying why, where a server here could make no
// cgroup bounding ctrl ("memory" or "cpu"; "" for either): not root, or no
// such controller mounted writable (cgroup v1) or in this process's group
// (cgroup v2).
func needCgroup(t *testing.T, ctrl string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root here")
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	self, _ := os.ReadFile("/proc/self/cgroup")
	for _, l := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(l) // "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0"
		if len(f) < 4 || !slices.Contains(strings.Split(f[3], ","), "rw") {
			continue
		}
		opts := strings.Split(f[3], ",")
		if f[2] == "cgroup" && (slices.Contains(opts, ctrl) || ctrl == "" && (slices.Contains(opts, "cpu") || slices.Contains(opts, "memory"))) {
			return
		}
		if f[2] == "cgroup2" {
			for _, s := range strings.Split(string(self), "\n") {
				if p, ok := strings.CutPrefix(s, "0::"); ok {
					have, _ := os.ReadFile(filepath.Join(f[1], p, "cgroup.controllers"))
					if ctrl == "" && len(bytes.TrimSpace(have)) > 0 || ctrl != "" && slices.Contains(strings.Fields(string(have)), ctrl) {
						return
					}
				}
			}
		}
	}
	t.Skipf("no writable cgroup %s controller here (cgroup v1 hierarchy, or v2 controller delegated to this process's group)", ctrl)
}

// readOnlyCgroups is a wrap for env.run: the server runs in a mount
// namespace of its own where every cgroup hierarchy is mounted read-only
// (the machine's mounts stay as they are), as a server without permission
// to make groups sees them. It skips the test where it cannot.
func readOnlyCgroups(t *testing.T) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a mount namespace of its own needs root here")
	}
	for _, p := range []string{"unshare", "findmnt"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("no %s here (util-linux) to mount the cgroups read-only for the server", p)
		}
	}
	return []string{"unshare", "--mount", "--propagation", "private", "sh", "-c",
		`for m in $(findmnt -rn -t cgroup,cgroup2 -o TARGET); do mount -o remount,bind,ro "$m" || exit 1; done; exec "$@"`, "sh"}
}

// bounds are the attributes of the server's start line saying what bounds
// its workers.
func (e *env) bounds() map[string]string {
	e.t.Helper()
	e.waitLog(`msg="game workers' bounds"`, 1)
	var line string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, `msg="game workers' bounds"`) {
			line = l
		}
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S+)`).FindAllStringSubmatch(line, -1) {
		v := m[2]
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		out[m[1]] = v
	}
	return out
}

// groupOf is the worker's group below base (its pid in cgroup.procs), or "".
func groupOf(t *testing.T, base string, pid int) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(base, "*", "cgroup.procs"))
	for _, f := range dirs {
		b, _ := os.ReadFile(f)
		if slices.Contains(strings.Fields(string(b)), strconv.Itoa(pid)) {
			return filepath.Dir(f)
		}
	}
	return ""
}

// cpuQuota is a group's CPU quota in µs a 100 ms period.
func cpuQuota(t *testing.T, dir string) string {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us")); err == nil {
		return strings.TrimSpace(string(b))
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		t.Fatalf("reading the CPU quota of %s: %v", dir, err)
	}
	return strings.Fields(string(b))[0]
}

// A game that keeps memory without bound is ended at its budget, by the
// kernel or the watchdog where a memory cgroup holds it (the watchdog reads
// the resident memory beside the group's charge, and either may be first),
// else (the cgroups mounted read-only: the server falls back, and says so)
// by the watchdog or the data-size limit: either way its players get 4003,
// never 4004, the log and its stats file say so, and a game beside it
// keeps its players. Two cases decide which bound acts first by moving the
// hog's group's limit once its worker runs: a little above what it has
// charged (the kernel's, long before its resident memory reaches the
// budget), or far above the budget (the watchdog's alone).
func TestMemoryBudget(t *testing.T) {
	memoryCgroup := func(t *testing.T) []string { needCgroup(t, "memory"); return nil }
	for _, c := range []struct {
		name  string
		wrap  func(*testing.T) []string
		limit func(charged int64) int64 // the hog's group's new limit; nil leaves the budget
		by    []string
	}{
		{"kernel", memoryCgroup, nil, []string{`by="the kernel (cgroup`, `by="the watchdog"`}},
		{"kernel first", memoryCgroup, func(charged int64) int64 { return charged + 4<<20 }, []string{`by="the kernel (cgroup`}},
		{"watchdog beside the kernel", memoryCgroup, func(int64) int64 { return 1 << 30 }, []string{`by="the watchdog"`}},
		{"fallback", readOnlyCgroups, nil, []string{`by="the watchdog"`, `by="the data-size limit"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wrap := c.wrap(t)
			e := newEnv(t, map[string]map[string]string{"hog.example/count": counter(`, "memory": 64`), "b.example/count": counter("")})
			e.run(wrap)
			bounds := e.bounds()
			if c.name == "fallback" && !strings.Contains(bounds["memory_why"], "read-only file system") {
				t.Fatalf("the fallback's start line does not say why: %v", bounds)
			}
			b := e.join("b.example/count", "")
			b.play(t, 1)
			hog := e.join("hog.example/count", "")
			hog.play(t, 1) // its game loaded: what it charged is its base
			if base := bounds["memory_cgroup"]; base != "" {
				g := groupOf(t, base, e.workerPid("hog.example/count", 1))
				if l := memoryFile(t, g, "limit_in_bytes", "max"); g == "" || l != 64<<20 {
					t.Fatalf("the hog's worker is not in a memory group of its budget below %s: %q %d", base, g, l)
				}
				if c.limit != nil {
					setMemoryLimit(t, g, c.limit(memoryFile(t, g, "usage_in_bytes", "current")))
				}
			}
			hog.ws.WriteJSON(map[string]any{"c": "grow", "a": map[string]any{}})
			if code, text := hog.closed(t); code != 4003 {
				t.Fatalf("the hog's player got %d %q, want 4003", code, text)
			}
			e.waitLog("game worker ended: the game ran out of its memory budget", 1)
			if !slices.ContainsFunc(c.by, func(by string) bool { return strings.Contains(e.logs.String(), by) }) {
				t.Fatalf("the log does not say the worker was ended %v", c.by)
			}
			b.play(t, 2)
			stats, _ := filepath.Glob(filepath.Join(e.logsRoot, api.GameLogsDir, "hog.example", "count", api.ProcessesDir, "*", "stats-*.jsonl"))
			var all []byte
			for _, f := range stats {
				b, _ := os.ReadFile(f)
				all = append(all, b...)
			}
			if !bytes.Contains(all, []byte(`"worker":"ended","reason":"the game ran out of its memory budget"`)) {
				t.Fatalf("the hog's stats files do not say it ran out of memory:\n%s", all)
			}
		})
	}
}

// memoryFile reads a number of a memory group: memory.<v1> on cgroup v1,
// memory.<v2> on v2.
func memoryFile(t *testing.T, dir, v1, v2 string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "memory."+v1))
	if err != nil {
		b, err = os.ReadFile(filepath.Join(dir, "memory."+v2))
	}
	n, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || perr != nil {
		t.Fatalf("reading memory.%s or memory.%s of %s: %v %v", v1, v2, dir, err, perr)
	}
	return n
}

// setMemoryLimit moves a memory group's limit: v2's memory.max, v1's
// memory.limit_in_bytes (and to raise it, memory.memsw.limit_in_bytes
// first where the kernel accounts swap: it may never be below it).
func setMemoryLimit(t *testing.T, dir string, limit int64) {
	t.Helper()
	v := []byte(strconv.FormatInt(limit, 10))
	if _, err := os.Stat(filepath.Join(dir, "memory.max")); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), v, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	files := []string{"memory.memsw.limit_in_bytes", "memory.limit_in_bytes"}
	if limit < memoryFile(t, dir, "limit_in_bytes", "max") {
		files = files[1:] // memsw stays above it
	}
	for _, f := range files {
		err := os.WriteFile(filepath.Join(dir, f), v, 0o644)
		if err != nil && !(errors.Is(err, os.ErrNotExist) && f == "memory.memsw.limit_in_bytes") {
			t.Fatalf("setting %s of %s: %v", f, dir, err)
		}
	}
}

// A game spinning every core (one spinning timer per room, a room more than
// cores) under the kernel's CPU bound: its worker's group is throttled and
// the normal game's player keeps getting its updates (counted in moves
// seen, not timed).
func TestSpinningEveryCoreUnderTheCPUBound(t *testing.T) {
	needCgroup(t, "cpu")
	spin := counter("")
	// Each timer call spins 40 ms of the 50 between calls, whatever the
	// machine's speed: well within the hook budget.
	spin["hoster-commands/spin/run.js"] = `export default function (i) {
		i.every(0.05, () => { const end = Date.now() + 40; while (Date.now() < end) {} });
	}`
	e := start(t, map[string]map[string]string{"bad.example/count": spin, "b.example/count": counter("")})
	b := e.join("b.example/count", "")
	b.play(t, 1)
	for r := 0; r <= runtime.NumCPU(); r++ {
		p := e.join("bad.example/count", "?room=s"+strconv.Itoa(r))
		p.ws.WriteJSON(map[string]any{"c": "spin", "a": map[string]any{}})
	}
	base := e.bounds()["cpu_cgroup"]
	g := groupOf(t, base, e.workerPid("bad.example/count", 1))
	if g == "" {
		t.Fatalf("the spinning game's worker is in no CPU group below %q", base)
	}
	if q, want := cpuQuota(t, g), strconv.Itoa(max(1, runtime.NumCPU()-1)*100000); q != want {
		t.Fatalf("the spinning game's CPU quota is %s µs, want %s (every core but one)", q, want)
	}
	// Under its bound a worker still has a P for each core (setProcs): Go
	// would follow the bound, and one P cost more CPU.
	e.waitLog(fmt.Sprintf("gomaxprocs=%d", runtime.NumCPU()), 2)
	for n := 2.0; n <= 21; n++ {
		b.play(t, n)
	}
	// The kernel held the spinner to its bound: its group was throttled.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(hang); ; {
		if n := throttled(g); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			st, _ := os.ReadFile(filepath.Join(g, "cpu.stat"))
			t.Fatalf("the spinning game's group %s was never throttled:\n%s", g, st)
		}
		<-tick.C
	}
}

// throttled is how many periods a CPU group was throttled in.
func throttled(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "nr_throttled "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// Each worker's groups are removed when it ends; a server killed outright
// leaves its workers' groups, and the next start on the same hosting root
// sweeps them; a server that stops removes its own group of them.
func TestCgroupsRemoved(t *testing.T) {
	needCgroup(t, "")
	e := newEnv(t, map[string]map[string]string{"a.example/count": counter("")})
	e.run(nil, "--cpus", "0.5")
	bounds := e.bounds()
	var bases []string
	for _, k := range []string{"memory_cgroup", "cpu_cgroup"} {
		if bounds[k] != "" && !slices.Contains(bases, bounds[k]) {
			bases = append(bases, bounds[k])
		}
	}
	groups := func(pid int) []string {
		var out []string
		for _, base := range bases {
			g := groupOf(t, base, pid)
			if g == "" {
				t.Fatalf("worker %d is in no group below %s", pid, base)
			}
			out = append(out, g)
		}
		return out
	}
	p := e.join("a.example/count", "")
	p.play(t, 1)
	pid := e.workerPid("a.example/count", 1)
	first := groups(pid)
	if cpu := bounds["cpu_cgroup"]; cpu != "" {
		if q := cpuQuota(t, groupOf(t, cpu, pid)); q != "50000" {
			t.Fatalf("--cpus 0.5 gave a quota of %s µs, want 50000", q)
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if code, text := p.closed(t); code != 4004 {
		t.Fatalf("a killed worker's player got %d %q, want 4004", code, text)
	}
	e.waitLog("game worker ended: the game's worker ended", 1)
	for _, g := range first {
		if _, err := os.Stat(g); !os.IsNotExist(err) {
			t.Errorf("the ended worker's group %s is still there (%v)", g, err)
		}
	}
	// A crash of the server leaves its worker's groups.
	e.rejoin("a.example/count").play(t, 1)
	left := groups(e.workerPid("a.example/count", 2))
	e.cmd.Process.Kill()
	e.cmd.Wait()
	for _, g := range left {
		if _, err := os.Stat(g); err != nil {
			t.Fatalf("the crashed server's worker group %s is not there to sweep: %v", g, err)
		}
	}
	e.run(nil, "--cpus", "0.5")
	if again := e.bounds(); again["swept"] == "" || again["memory_cgroup"] != bounds["memory_cgroup"] || again["cpu_cgroup"] != bounds["cpu_cgroup"] {
		t.Fatalf("the restart did not sweep the same groups: %v, before %v", again, bounds)
	}
	for _, g := range left {
		if _, err := os.Stat(g); !os.IsNotExist(err) {
			t.Errorf("the crashed server's worker group %s is still there after a restart (%v)", g, err)
		}
	}
	e.join("a.example/count", "").play(t, 1)
	e.cmd.Process.Signal(syscall.SIGTERM)
	if err := e.cmd.Wait(); err != nil {
		t.Fatalf("the server's stop: %v", err)
	}
	for _, base := range bases {
		if _, err := os.Stat(base); !os.IsNotExist(err) {
			t.Errorf("the stopped server's group %s is still there (%v)", base, err)
		}
	}
}

// The groups a killed server left on a hosting root no server will serve
// again are removed by RemoveGroups (a test's cleanup), its workers with
// them.
func TestRemoveGroupsOfAKilledServer(t *testing.T) {
	needCgroup(t, "")
	e := start(t, map[string]map[string]string{"a.example/count": counter("")})
	bounds := e.bounds()
	e.join("a.example/count", "").play(t, 1)
	pid := e.workerPid("a.example/count", 1)
	e.cmd.Process.Kill()
	e.cmd.Wait()
	if err := worker.RemoveGroups(e.root); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"memory_cgroup", "cpu_cgroup"} {
		if base := bounds[k]; base != "" {
			if _, err := os.Stat(base); !os.IsNotExist(err) {
				t.Errorf("the killed server's group %s is still there (%v)", base, err)
			}
		}
	}
	// Gone, or a zombie left to init.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z ") {
		t.Errorf("the killed server's worker %d still runs: %s", pid, b)
	}
}
