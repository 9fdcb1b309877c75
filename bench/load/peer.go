package main

import (
	"bufio"
	"bytes"
	"fmt"
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

// cpu is the CPU time the server's process has used so far (user and
// system, all its threads), from /proc/PID/stat.
func (s *server) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("reading the server's CPU time: %w", err)
	}
	// The command name, field 2, may hold spaces; the fields after its
	// closing parenthesis start with field 3.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("reading the server's CPU time: short /proc stat line")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("reading the server's CPU time: %v %v", err1, err2)
	}
	const hz = 100 // USER_HZ, 100 on Linux
	return time.Duration(utime+stime) * time.Second / hz, nil
}

// memory is the server's resident set now and its peak, in bytes, from
// /proc/PID/status.
func (s *server) memory() (rss, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
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
