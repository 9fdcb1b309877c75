// Command genlogs writes a logs root for bench/pull-link.sh: a month of a
// small host's logs, as the tools API serves them. web-logs: access.log
// (8 MiB) and 10 rotated logs (4 MiB each); server-logs: 5 health types x
// 60 day-files (64 KiB each); hoster-logs: -games games x 30 days x 24
// hour files (4 KiB each), and one snapshot file a game. With 4 games,
// 3,195 files, 80 MiB. With -hour it adds an hour's growth to an existing
// root instead: 1 MiB onto access.log, a line onto each game's last hour
// file, a new hour file a game, and 16 KiB onto each type's newest
// day-file.
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// start is the first day of the month the hour files cover: -today less
// 28 days, so that none is old enough for hoster-server's retention.
var start time.Time

var rng = rand.New(rand.NewPCG(3, 5))

func main() {
	dir := flag.String("dir", "", "the logs root to write")
	games := flag.Int("games", 4, "games with hour files")
	hour := flag.Bool("hour", false, "add an hour's growth to an existing root")
	today := flag.String("today", time.Now().UTC().Format(time.DateOnly), "the day the logs end on (YYYY-MM-DD)")
	flag.Parse()
	if *dir == "" {
		log.Fatal("genlogs: -dir is required")
	}
	t, err := time.Parse(time.DateOnly, *today)
	if err != nil {
		log.Fatalf("genlogs: reading -today: %v", err)
	}
	start = t.AddDate(0, 0, -28)
	if *hour {
		grow(*dir, *games)
		return
	}
	write(filepath.Join(*dir, "web-logs", "access.log"), 8<<20)
	for i := range 10 {
		p := filepath.Join(*dir, "web-logs", fmt.Sprintf("access-%d.log", i))
		write(p, 4<<20)
		t := start.Add(time.Duration(i) * 72 * time.Hour) // the server keys rotated logs by mtime
		if err := os.Chtimes(p, t, t); err != nil {
			log.Fatal(err)
		}
	}
	for _, typ := range []string{"cpu", "memory", "disk", "diskio", "netio"} {
		for d := range 60 {
			write(filepath.Join(*dir, "server-logs", fmt.Sprintf("%s-%s.log", typ, start.AddDate(0, 0, d-30).Format(time.DateOnly))), 64<<10)
		}
	}
	for g := range *games {
		proc := gameDir(*dir, g)
		for h := range 30 * 24 {
			write(filepath.Join(proc, "stats-"+start.Add(time.Duration(h)*time.Hour).Format("2006-01-02-15")+".jsonl"), 4<<10)
		}
		write(filepath.Join(proc, "snapshot-"+start.Add(30*24*time.Hour-time.Hour).Format("2006-01-02-15")+".jsonl"), 4<<10)
	}
}

func gameDir(dir string, g int) string {
	return filepath.Join(dir, "hoster-logs", fmt.Sprintf("game%d.example.com", g), "arena", "hoster-processes", fmt.Sprintf("%012x", 0xabc000+g))
}

// grow adds an hour's growth.
func grow(dir string, games int) {
	add(filepath.Join(dir, "web-logs", "access.log"), 1<<20)
	for g := range games {
		proc := gameDir(dir, g)
		last := start.Add(30*24*time.Hour - time.Hour)
		for h := last; ; h = h.Add(time.Hour) {
			next := filepath.Join(proc, "stats-"+h.Add(time.Hour).Format("2006-01-02-15")+".jsonl")
			if _, err := os.Stat(next); err != nil {
				add(filepath.Join(proc, "stats-"+h.Format("2006-01-02-15")+".jsonl"), 100)
				write(next, 4<<10)
				break
			}
		}
	}
	for _, typ := range []string{"cpu", "memory", "disk", "diskio", "netio"} {
		add(filepath.Join(dir, "server-logs", fmt.Sprintf("%s-%s.log", typ, start.AddDate(0, 0, 29).Format(time.DateOnly))), 16<<10)
	}
}

// text is n bytes of printable lines.
func text(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
		if i%100 == 99 || i == n-1 {
			b[i] = '\n'
		}
	}
	return b
}

func write(p string, n int) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(p, text(n), 0o644); err != nil {
		log.Fatal(err)
	}
}

func add(p string, n int) {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := f.Write(text(n)); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
