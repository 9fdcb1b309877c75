package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A server is a peer running in its own process, measured from outside
// through /proc: the bots never share its process.
type server struct {
	cmd *exec.Cmd
	log *syncBuffer // its stderr and stdout
}

// syncBuffer is a buffer the server's output goes into while the bench
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *server) logLen() int { return len(s.log.String()) }

func (s *server) logSince(n int) string { return s.log.String()[n:] }

// startServer runs argv with env added and waits until addr accepts
// connections.
func startServer(argv []string, env []string, dir, addr string) (*server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the bench
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// BENCH_SERVER_LOG: a file that gets the server's output too, to read
	// after a run that went wrong.
	if p := os.Getenv("BENCH_SERVER_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("opening BENCH_SERVER_LOG: %w", err)
		}
		w := io.MultiWriter(out, f)
		cmd.Stdout, cmd.Stderr = w, w
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	s := &server{cmd: cmd, log: out}
	for deadline := time.Now().Add(60 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			s.stop()
			return nil, fmt.Errorf("waiting for %s to listen on %s: %v\n%s", argv[0], addr, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop asks the server to end (SIGTERM), and kills it after 10 s.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// procStat is a process's /proc/PID/stat fields from field 3 on (the
// command name, field 2, may hold spaces: the fields after its closing
// parenthesis), so that field n is f[n-3].
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 15 {
		return nil, fmt.Errorf("reading /proc/%d/stat: short line", pid)
	}
	return f, nil
}

// ticks sums fields of a stat line, in clock ticks (USER_HZ, 100 on Linux).
func ticks(f []string, fields ...int) time.Duration {
	var sum int64
	for _, n := range fields {
		v, _ := strconv.ParseInt(f[n-3], 10, 64)
		sum += v
	}
	const hz = 100
	return time.Duration(sum) * time.Second / hz
}

// children lists the processes whose parent is pid, read from every
// /proc/PID/stat (this kernel has no /proc/PID/task/TID/children).
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := procStat(c); err == nil && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// during runs f and returns the server's CPU time and the wall time it
// took.
func (s *server) during(f func()) (cpu, wall time.Duration) {
	cpu0, err := s.cpu()
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	f()
	cpu1, err := s.cpu()
	if err != nil {
		log.Fatal(err)
	}
	return cpu1 - cpu0, time.Since(start)
}

// cpu is the CPU time the server has used so far (user and system, all
// threads), from /proc: its own process, its game workers (hoster-server
// --isolation process; each a child process) and the workers that ended
// (counted in its children's times once waited for).
func (s *server) cpu() (time.Duration, error) {
	return treeCPU(s.cmd.Process.Pid)
}

// treeCPU is the CPU time (user and system) the process pid has used so
// far, with its live children's and those it waited for.
func treeCPU(pid int) (time.Duration, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	sum := ticks(f, 14, 15, 16, 17)
	for _, c := range children(pid) {
		if f, err := procStat(c); err == nil {
			sum += ticks(f, 14, 15)
		}
	}
	return sum, nil
}

// memory is the server's resident set now and its peak, in bytes, from
// /proc/PID/status: its process and its game workers together (the peak
// is the sum of each one's peak, at most what they held at once); and its
// proportional set (Pss, /proc/PID/smaps_rollup), where a page several of
// them map (the binary's text, above all) counts once over all of them,
// as summed resident sets do not.
func (s *server) memory() (rss, peak, pss int64) {
	pid := s.cmd.Process.Pid
	for _, p := range append([]int{pid}, children(pid)...) {
		r, hwm := memoryOf(p)
		rss += r
		peak += hwm
		pss += pssOf(p)
	}
	return rss, peak, pss
}

// pssOf is one process's proportional set size in bytes, 0 when unknown.
func pssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// memoryOf is one process's resident set (VmRSS) and its peak (VmHWM).
func memoryOf(pid int) (rss, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	return rss, peak
}

// runnable reads the Go scheduler's trace lines (GODEBUG=schedtrace) in a
// server's log, "SCHED 500ms: gomaxprocs=2 idleprocs=0 threads=9
// spinningthreads=0 needspinning=0 idlethreads=3 runqueue=12 [40 37]...",
// and returns how many goroutines waited to run in each sample: the global
// run queue plus every P's.
func runnable(log string) []int {
	var out []int
	for _, line := range strings.Split(log, "\n") {
		if !strings.HasPrefix(line, "SCHED ") {
			continue
		}
		_, rest, ok := strings.Cut(line, " runqueue=")
		if !ok {
			continue
		}
		global, locals, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(global)
		if err != nil {
			continue
		}
		if i, j := strings.IndexByte(locals, '['), strings.IndexByte(locals, ']'); i >= 0 && j > i {
			for _, f := range strings.Fields(locals[i+1 : j]) {
				k, _ := strconv.Atoi(f)
				n += k
			}
		}
		out = append(out, n)
	}
	return out
}

// freeAddr is a loopback address nothing listens on right now.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}
