package store

import (
	"sort"
	"sync"
	"time"
)

// Debouncer collects the games changed by writes and deletes and, once no
// change has come for the quiet period, calls its function once per changed
// game. A burst of any length therefore gives one reload per game.
type Debouncer struct {
	quiet time.Duration
	fire  func(domain, game string)
	after func(time.Duration, func()) quietTimer // time.AfterFunc but in tests

	mu      sync.Mutex
	pending map[[2]string]bool
	timer   quietTimer
	closed  bool
	running sync.WaitGroup
}

// NewDebouncer returns a Debouncer calling fire (which may be nil) after quiet.
func NewDebouncer(quiet time.Duration, fire func(domain, game string)) *Debouncer {
	return &Debouncer{quiet: quiet, fire: fire, pending: map[[2]string]bool{},
		after: func(d time.Duration, f func()) quietTimer { return time.AfterFunc(d, f) }}
}

// quietTimer is the part of *time.Timer a Debouncer uses.
type quietTimer interface {
	Stop() bool
	Reset(time.Duration) bool
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

// flush calls fire for each pending game, in sorted order.
func (d *Debouncer) flush() {
	defer d.running.Done()
	d.mu.Lock()
	games := make([][2]string, 0, len(d.pending))
	for g := range d.pending {
		games = append(games, g)
	}
	d.pending = map[[2]string]bool{}
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
