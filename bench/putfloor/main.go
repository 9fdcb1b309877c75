// Command putfloor measures what one HTTP PUT per file costs on this machine
// with nothing else in the way: a bare net/http server that reads each body
// (and, with -hash, sha256s it) and writes nothing to disk, and a bare
// net/http client sending every file of a tree from the page cache, -jobs at
// a time over kept-alive connections. It is the floor under `hoster sync`'s
// first push: what the contract's one request per file costs before any file
// is created, to set beside rsync's single stream.
//
//	go run ./bench/putfloor -src DIR [-jobs 8] [-hash]
//
// The server runs as a second process (this program re-run with -serve) so
// that each side's CPU time is its own.
package main

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

func main() {
	src := flag.String("src", "", "tree whose files are sent (read once first, so it is in the page cache)")
	jobs := flag.Int("jobs", 8, "uploads at once")
	hashBodies := flag.Bool("hash", false, "the server hashes each body with sha256, as hoster-server does")
	serve := flag.String("serve", "", "internal: run the server on this listener address")
	flag.Parse()
	if *serve != "" {
		runServer(*serve, *hashBodies)
		return
	}
	if *src == "" {
		log.Fatal("putfloor: -src is required")
	}
	var files []string
	var total int64
	err := filepath.WalkDir(*src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p) // into the page cache
			if err != nil {
				return err
			}
			files = append(files, p)
			total += int64(len(b))
		}
		return nil
	})
	if err != nil {
		log.Fatalf("putfloor: reading %s: %v", *src, err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := exec.Command(os.Args[0], "-serve", addr, fmt.Sprintf("-hash=%v", *hashBodies))
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		log.Fatalf("putfloor: starting the server: %v", err)
	}
	defer srv.Process.Kill()
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i == 100 {
			log.Fatalf("putfloor: the server does not listen: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *jobs}}
	work := make(chan string)
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), cpuTime(syscall.RUSAGE_SELF)
	for range *jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				if err := put(client, "http://"+addr+"/api/file?path="+url.QueryEscape(p), p); err != nil {
					log.Fatalf("putfloor: %s: %v", p, err)
				}
			}
		}()
	}
	for _, p := range files {
		work <- p
	}
	close(work)
	wg.Wait()
	wall, cpu := time.Since(start), cpuTime(syscall.RUSAGE_SELF)-cpu0
	srv.Process.Signal(os.Interrupt)
	srv.Wait()
	serverCPU := cpuTime(syscall.RUSAGE_CHILDREN)
	fmt.Printf("%d files, %d MiB, jobs %d, server hashes: %v\n", len(files), total>>20, *jobs, *hashBodies)
	fmt.Printf("wall %.2f s, client %.2f CPU-s, server %.2f CPU-s\n", wall.Seconds(), cpu.Seconds(), serverCPU.Seconds())
}

func put(client *http.Client, target, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPut, target, f)
	if err != nil {
		return err
	}
	req.ContentLength = st.Size()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if want := fmt.Sprintf(`{"size":%d}`, st.Size()); resp.StatusCode != 200 || string(answer) != want {
		return fmt.Errorf("answer %d %q, want %q", resp.StatusCode, answer, want)
	}
	return nil
}

func runServer(addr string, hashBodies bool) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var dst io.Writer = io.Discard
		h := sha256.New()
		if hashBodies {
			dst = h
		}
		n, err := io.Copy(dst, r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		if hashBodies {
			h.Sum(nil)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, fmt.Sprintf(`{"size":%d}`, n))
	})}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		<-sig
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
