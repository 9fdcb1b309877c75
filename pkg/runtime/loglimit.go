package runtime

import (
	"sync"
	"time"
)

// maxLogLines is how many instance.log lines an instance may write per
// second; the rest are dropped and counted.
const maxLogLines = 50

// logLimit rate-limits an instance's instance.log: at most maxLogLines a
// second. The first line after a second with drops is preceded by a line
// counting them, so nothing is lost silently.
type logLimit struct {
	mu      sync.Mutex
	window  time.Time
	n       int
	dropped int
}

// allow reports whether a line at now may be written, and how many lines
// were dropped since the last one written (to be reported first).
func (l *logLimit) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Second || now.Before(l.window) {
		l.window, l.n = now, 0
	}
	if l.n >= maxLogLines {
		l.dropped++
		return false, 0
	}
	l.n++
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}

// takeDropped returns the lines dropped and not yet reported, and forgets them.
func (l *logLimit) takeDropped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.dropped
	l.dropped = 0
	return d
}

// reportDropped logs the lines dropped and not yet reported, when the
// instance ends.
func (in *Instance) reportDropped() {
	if d := in.logs.takeDropped(); d > 0 {
		in.log.Warn("game log lines dropped: more than the limit per second", "dropped", d, "limit", maxLogLines)
	}
}

// gameLog writes one instance.log line through the instance's limit.
func (in *Instance) gameLog(msg string) {
	ok, dropped := in.logs.allow(in.rt.now())
	if dropped > 0 {
		in.log.Warn("game log lines dropped: more than the limit per second", "dropped", dropped, "limit", maxLogLines)
	}
	if ok {
		in.log.Info("game log", "msg", msg)
	}
}
