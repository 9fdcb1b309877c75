package store

import (
	"sort"
	"sync"
	"time"
)

// Debouncer collects the games changed by writes and deletes and, once no
// change has come for the quiet period, calls its function once per changed
// game. A burst of any length therefore gives one reload per game. A game
// changed by a [Batch] still under way is held: it waits for the batch's end,
// however long the batch stalls, and reloads once after it.
type Debouncer struct {
	quiet time.Duration
	fire  func(domain, game string)
	after AfterFunc

	mu      sync.Mutex
	pending map[[2]string]bool
	held    map[[2]string]int // game -> the batches under way that changed it
	timer   QuietTimer
	closed  bool
	running sync.WaitGroup
}

// NewDebouncer returns a Debouncer calling fire (which may be nil) after quiet.
func NewDebouncer(quiet time.Duration, fire func(domain, game string)) *Debouncer {
	return &Debouncer{quiet: quiet, fire: fire, pending: map[[2]string]bool{}, held: map[[2]string]int{},
		after: func(d time.Duration, f func()) QuietTimer { return time.AfterFunc(d, f) }}
}

// QuietTimer is the part of *time.Timer a Debouncer uses.
type QuietTimer interface {
	Stop() bool
	Reset(time.Duration) bool
}

// AfterFunc starts a quiet period: it calls f once d has passed, unless
// stopped first. time.AfterFunc is the Debouncer's own.
type AfterFunc func(d time.Duration, f func()) QuietTimer

// WithTimers makes d time its quiet periods with after, a clock a test
// controls; it must come before d's first change. It returns d.
func (d *Debouncer) WithTimers(after AfterFunc) *Debouncer {
	d.after = after
	return d
}

// Mark records a change to domain/game and restarts the quiet period.
func (d *Debouncer) Mark(domain, game string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.pending[[2]string{domain, game}] = true
	if d.timer == nil {
		d.running.Add(1)
		d.timer = d.after(d.quiet, d.flush)
	} else if d.timer.Stop() {
		d.timer.Reset(d.quiet)
	}
}

// flush calls fire for each pending game, in sorted order, but those a
// batch under way holds: they stay pending until its Release marks them
// again (or Close, which fires them all).
func (d *Debouncer) flush() {
	defer d.running.Done()
	d.mu.Lock()
	games := make([][2]string, 0, len(d.pending))
	for g := range d.pending {
		if d.held[g] > 0 && !d.closed {
			continue
		}
		games = append(games, g)
		delete(d.pending, g)
	}
	d.timer = nil
	d.mu.Unlock()
	sort.Slice(games, func(i, j int) bool {
		return games[i][0] < games[j][0] || games[i][0] == games[j][0] && games[i][1] < games[j][1]
	})
	if d.fire != nil {
		for _, g := range games {
			d.fire(g[0], g[1])
		}
	}
}

// Close fires what is pending at once and stops taking changes.
func (d *Debouncer) Close() {
	d.mu.Lock()
	d.closed = true
	if d.timer != nil && d.timer.Stop() {
		go d.flush()
	}
	d.mu.Unlock()
	d.running.Wait()
}

// Batch is a group of changes, such as the files of one batch upload, that
// reloads each of its games once, after it ends: while the batch is under
// way its games are held, whatever quiet periods pass (a body that stalls
// between two files), and its Release starts their quiet period afresh.
type Batch struct {
	d     *Debouncer
	games map[[2]string]bool
}

// Batch starts a batch of changes; its Release must follow, whether the
// batch succeeded or failed.
func (d *Debouncer) Batch() *Batch {
	return &Batch{d: d, games: map[[2]string]bool{}}
}

// Mark records a change to domain/game, held until the batch's Release.
func (b *Batch) Mark(domain, game string) {
	g := [2]string{domain, game}
	if !b.games[g] {
		b.d.mu.Lock()
		b.games[g] = true
		b.d.held[g]++
		b.d.mu.Unlock()
	}
	b.d.Mark(domain, game)
}

// Release ends the batch: each game it changed gets one reload, after a
// quiet period from now (later still while another batch holds it).
func (b *Batch) Release() {
	b.d.mu.Lock()
	for g := range b.games {
		if b.d.held[g]--; b.d.held[g] == 0 {
			delete(b.d.held, g)
		}
	}
	b.d.mu.Unlock()
	for g := range b.games {
		b.d.Mark(g[0], g[1])
	}
	b.games = nil
}
