package runtime

import (
	"container/heap"
	goruntime "runtime"
	"sync"
	"time"
)

// maxCatchUp is how many steps behind schedule an instance may fall before
// its schedule restarts from now instead of bursting ticks to catch up.
const maxCatchUp = 5

// detachAfter is how long a worker may run one instance's step before the
// scheduler stops counting it as one of its workers and starts another in
// its place: a hook that spins until its budget interrupts it (or a
// builtin that ignores the interrupt) then holds only its own goroutine,
// and the other instances' ticks are late by at most this much, as with a
// goroutine per instance, where Go's scheduler shares a core every 10 ms.
// A detached worker ends once its step returns.
const detachAfter = 10 * time.Millisecond

// scheduler steps the instances on one clock with a bounded set of worker
// goroutines (workersPerProc per GOMAXPROCS, by default), instead of a
// goroutine and a timer per instance: a free worker takes the earliest instance due off one queue
// and steps it; when none is due, the idle workers wait on one timer, set
// for the earliest, and the one that takes its fire steps that instance.
// Each instance keeps
// its own fixed-step schedule (slot); an instance is only ever stepped by
// one worker at a time. hoster test's TestGame drives the same schedule on
// its virtual clock, from its own goroutine and without workers (next,
// turn).
type scheduler struct {
	clk     clock
	observe func(kind string, d time.Duration)

	mu      sync.Mutex
	queue   slotHeap // the instances waiting for their next step, earliest first
	seq     int      // slots made so far: equal due times run in the order the instances started
	busy    []*worker
	stopped bool
	timer   timer       // the idle workers', set for the earliest due
	armed   time.Time   // what timer is set for; zero: not set
	guard   *time.Timer // runs detachStuck while every worker is busy
	guarded bool        // guard is set

	turnC chan struct{} // to an idle worker: an instance is due now
	quit  chan struct{}
}

// slot is an instance's place in the schedule: its tick loop (nil until
// create has run) and its fixed steps, the n-th due at start + n*step.
type slot struct {
	in    *Instance
	l     *loop
	start time.Time
	n     int64
	due   time.Time
	seq   int
	index int // in the queue; -1 while a worker has it
}

// worker is one of the scheduler's goroutines: since when it runs a step
// (zero: free), and whether it was detached for running too long.
type worker struct {
	since    time.Time
	detached bool
}

// workersPerProc is how many workers run per GOMAXPROCS. Measured with 50
// rooms of bench/load's game beside a room whose every tick spins for
// 200 ms, on a 2-core machine shared with other work (BenchmarkRooms/
// spinning): while the hooks and the send round ran in goja, one worker per
// core left the 50 rooms 11–16 of their 20 ticks a second, as Go's
// scheduler shared the cores between the spinner and only two workers;
// four per core kept their 20, as a goroutine per instance did (19–19.6).
// With the records and the send round in Go, ticks cost a fifth of that
// and both hold 20; four stay, for games whose ticks are heavy. Idle
// workers cost nothing but their stacks.
const workersPerProc = 4

// newScheduler starts the workers (workersPerProc per GOMAXPROCS when
// workers is 0); a manual one starts none: its TestGame steps the
// instances.
func newScheduler(clk clock, observe func(string, time.Duration), workers int, manual bool) *scheduler {
	s := &scheduler{clk: clk, observe: observe, turnC: make(chan struct{}, 1), quit: make(chan struct{})}
	if manual {
		return s
	}
	if workers <= 0 {
		workers = workersPerProc * goruntime.GOMAXPROCS(0)
	}
	s.timer = clk.NewTimer()
	s.guard = time.AfterFunc(time.Hour, s.detachStuck)
	s.guard.Stop()
	s.mu.Lock()
	for range workers {
		s.startWorkerLocked()
	}
	s.mu.Unlock()
	return s
}

// add schedules a new instance: its create runs at once, on a worker.
func (s *scheduler) add(in *Instance) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		go func() { // not here: place holds the game's lock, which stop takes
			in.stop(1001, "the server is shutting down")
			close(in.done)
		}()
		return
	}
	s.seq++
	s.pushLocked(&slot{in: in, seq: s.seq})
	s.mu.Unlock()
}

// started schedules an instance whose create a TestGame ran at now.
func (s *scheduler) started(in *Instance, l *loop, now time.Time) *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	sl := &slot{in: in, l: l, start: now, n: 1, due: now.Add(l.step), seq: s.seq}
	s.pushLocked(sl)
	return sl
}

// pushLocked queues sl at its due time (at once for an instance that was
// stopped: it ends), and sets the timer when it is now the earliest.
func (s *scheduler) pushLocked(sl *slot) {
	if sl.in.ended() {
		sl.due = time.Time{}
	}
	heap.Push(&s.queue, sl)
	if sl.index == 0 {
		s.armLocked()
	}
}

// armLocked sees to it that an idle worker takes the earliest instance
// when it is due: one is nudged when it is due now, else the timer is set
// for it (once for each time: the worker that takes a step sets the timer
// for the next before it runs the step, so that no worker is woken only to
// set it). A TestGame's scheduler has no timer: its TestGame steps.
func (s *scheduler) armLocked() {
	if s.timer == nil || len(s.queue) == 0 {
		return
	}
	due := s.queue[0].due
	if !due.After(s.clk.Now()) {
		s.nudge()
		return
	}
	if due.Equal(s.armed) {
		return
	}
	s.armed = due
	if !s.timer.Stop() {
		select { // a fire not taken yet
		case <-s.timer.C():
		default:
		}
	}
	s.timer.ResetAt(due)
}

// hurry makes a stopped instance waiting for its next step end now, rather
// than at that step (a Shutdown waits for it).
func (s *scheduler) hurry(in *Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.queue {
		if sl.in == in {
			sl.due = time.Time{}
			heap.Fix(&s.queue, sl.index)
			s.armLocked()
			return
		}
	}
}

// next is the earliest instance due, taken off the queue, and when; nil
// when none is left. Instances that ended are dropped on the way: a
// TestGame's Close ends them.
func (s *scheduler) next() (*slot, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 {
		sl := s.queue[0]
		if !sl.in.ended() {
			return sl, sl.due
		}
		heap.Pop(&s.queue)
	}
	return nil, time.Time{}
}

// turn runs sl's step due at now and queues its next one; false when the
// instance failed or was closed (it is not queued again). A step later
// than maxCatchUp steps restarts the schedule from now instead of bursting
// the missed ones, as does a change of rates (hot reload).
func (s *scheduler) turn(sl *slot, now time.Time) bool {
	l := sl.l
	if late := now.Sub(sl.start.Add(time.Duration(sl.n) * l.step)); late > maxCatchUp*l.step {
		sl.start, sl.n = now, 0
		if s.observe != nil {
			s.observe("stall", late)
		}
	}
	if !sl.in.step(l, now) {
		return false
	}
	if l.restart {
		sl.start, sl.n, l.restart = now, 0, false
	}
	sl.n++
	sl.due = sl.start.Add(time.Duration(sl.n) * l.step)
	s.mu.Lock()
	s.pushLocked(sl)
	s.mu.Unlock()
	return true
}

// take removes sl from the queue for a TestGame's step.
func (s *scheduler) take(sl *slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl.index >= 0 {
		heap.Remove(&s.queue, sl.index)
	}
}

// run is a worker's part for one slot: create for a new instance, else its
// step; an instance that failed or was stopped ends here (its last stats
// line, then done).
func (s *scheduler) run(sl *slot) {
	in := sl.in
	if sl.l == nil {
		began := time.Now()
		l, err := in.begin(s.clk.Now())
		if err != nil {
			in.fail(err)
			close(in.done)
			return
		}
		sl.l, sl.start, sl.n = l, s.clk.Now(), 1
		sl.due = sl.start.Add(l.step)
		s.mu.Lock()
		s.pushLocked(sl)
		s.mu.Unlock()
		if s.observe != nil {
			s.observe("start", time.Since(began))
		}
		return
	}
	if in.ended() || !s.turn(sl, s.clk.Now()) {
		in.lastStats(sl.l)
		close(in.done)
	}
}

// work is a worker goroutine. It takes the earliest instance due off the
// queue and steps it itself, with no goroutine in between; when nothing
// is due, it waits with the other idle workers on the scheduler's one
// timer, set for the earliest, or for a nudge (an instance due now). It
// ends when the scheduler stops, or after the step during which it was
// detached.
func (s *scheduler) work(w *worker) {
	for {
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		now := s.clk.Now()
		if len(s.queue) > 0 && !s.queue[0].due.After(now) {
			sl := heap.Pop(&s.queue).(*slot)
			s.armLocked() // for the next: another idle worker takes it
			w.since = time.Now()
			s.guardLocked()
			s.mu.Unlock()
			readPending() // the commands that came for this step
			s.run(sl)
			s.mu.Lock()
			w.since = time.Time{}
			if w.detached {
				s.dropLocked(w)
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			continue
		}
		s.armLocked()
		s.mu.Unlock()
		select {
		case <-s.timer.C():
			s.mu.Lock()
			if !s.clk.Now().Before(s.armed) { // not a stale fire of an earlier setting
				s.armed = time.Time{}
			}
			s.mu.Unlock()
		case <-s.turnC:
		case <-s.quit:
			return
		}
	}
}

// nudge wakes an idle worker: an instance is due now.
func (s *scheduler) nudge() {
	select {
	case s.turnC <- struct{}{}:
	default:
	}
}

// guardLocked arms the check for stuck workers when every worker is
// running a step: one that has run a single step for detachAfter is
// detached and a new worker started in its place, so that a spinning hook
// never holds up the other instances for longer than that.
func (s *scheduler) guardLocked() {
	if s.guarded {
		return
	}
	for _, w := range s.busy {
		if !w.detached && w.since.IsZero() {
			return // one is free
		}
	}
	s.guarded = true
	s.guard.Reset(detachAfter)
}

// detachStuck is the guard's check: it detaches the workers that have run
// one step for detachAfter, starting one in the place of each, and looks
// again when the next busy one would reach it, while every worker is busy.
func (s *scheduler) detachStuck() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guarded = false
	now := time.Now() // on the wall: how long a step holds a thread, whatever the schedule's clock
	wait, free := detachAfter, false
	for _, w := range s.busy {
		switch {
		case w.detached:
		case w.since.IsZero():
			free = true
		case now.Sub(w.since) >= detachAfter:
			w.detached = true
			s.startWorkerLocked()
			if s.observe != nil {
				s.observe("detach", now.Sub(w.since))
			}
		default:
			wait = min(wait, detachAfter-now.Sub(w.since))
		}
	}
	if !free && !s.stopped {
		s.guarded = true
		s.guard.Reset(wait)
	}
}

func (s *scheduler) startWorkerLocked() {
	w := &worker{}
	s.busy = append(s.busy, w)
	go s.work(w)
}

func (s *scheduler) dropLocked(w *worker) {
	for i, b := range s.busy {
		if b == w {
			s.busy = append(s.busy[:i], s.busy[i+1:]...)
			return
		}
	}
}

// stop ends the workers once every instance has ended; an instance placed
// later is stopped at once.
func (s *scheduler) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.stopped = true
		close(s.quit)
		if s.guard != nil {
			s.guard.Stop()
		}
	}
}

// slotHeap orders slots by due time, then by the order they were made.
type slotHeap []*slot

func (h slotHeap) Len() int { return len(h) }
func (h slotHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h slotHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *slotHeap) Push(x any) {
	sl := x.(*slot)
	sl.index = len(*h)
	*h = append(*h, sl)
}
func (h *slotHeap) Pop() any {
	old := *h
	sl := old[len(old)-1]
	old[len(old)-1] = nil
	sl.index = -1
	*h = old[:len(old)-1]
	return sl
}
