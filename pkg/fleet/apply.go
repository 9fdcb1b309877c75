package fleet

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hoster-dev/hoster/pkg/store"
)

// gameState is what this node knows of one game of the fleet.
type gameState struct {
	s            *Sync
	domain, name string
	key          string

	// The Sync API's requests that change the game on this disk hold it
	// (Hold): held counts them, and applying is set while an apply writes
	// a manifest to the disk. Each waits on hcond for the other.
	hmu      sync.Mutex
	hcond    sync.Cond
	held     int
	applying bool

	// mu is held while this node publishes the game or writes a manifest
	// to its disk, so that the two never interleave.
	mu  sync.Mutex
	rev uint64 // the manifest's revision this disk is at (0: none yet)
	// files is that manifest's files: what this node may delete or replace,
	// as against a file a sync through this node has just written and not
	// yet published. nil (a game met in the manifests read at the start,
	// before this node served) makes the whole disk copy the manifest's to
	// fix, so that a node back from the dead drops what was deleted
	// meanwhile.
	files map[string]string

	// The group commit of publish.go.
	qmu        sync.Mutex
	queue      []*pendingCommit
	committing bool

	// The latest manifest to write to disk, and the wake-up of the loop
	// that writes it.
	wmu    sync.Mutex
	wanted *manifest
	kick   chan struct{}
}

// game is the state of domain/game, made (with its apply loop) on first use.
func (s *Sync) game(domain, game string) *gameState {
	key := manifestKey(domain, game)
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.games[key]
	if !ok {
		g = &gameState{s: s, domain: domain, name: game, key: key, kick: make(chan struct{}, 1)}
		g.hcond.L = &g.hmu
		if s.caughtUp.Load() {
			// A game new since the start: nothing on this disk is a
			// manifest's yet, and what a sync through this node wrote
			// is its own to publish.
			g.files = map[string]string{}
		}
		s.games[key] = g
		s.loops.Add(1)
		go g.applyLoop()
	}
	return g
}

// Hold keeps the applies of other nodes' manifests of domain/game off this
// disk until release. The Sync API holds a game from before a request
// changes it on disk until the change is published: an apply that read the
// disk before the change could otherwise write over it after, and the disk
// would differ from the published manifest until the next change (and the
// publish, which reads the body back from the disk, would find another
// one). Any number of requests hold a game at once, and a request waits
// while an apply runs. An apply waits until no request holds the game, and
// is given no preference over new ones: a batch holds several games, one
// after the other, and an apply waiting in its way could close a circle of
// waits with another batch; an apply of a game this node is being synced
// to runs once the sync's requests pause.
func (s *Sync) Hold(domain, game string) (release func()) {
	g := s.game(domain, game)
	g.hmu.Lock()
	for g.applying {
		if s.holdWaits != nil {
			s.holdWaits()
		}
		g.hcond.Wait()
	}
	g.held++
	g.hmu.Unlock()
	return sync.OnceFunc(func() {
		g.hmu.Lock()
		if g.held--; g.held == 0 {
			g.hcond.Broadcast()
		}
		g.hmu.Unlock()
	})
}

// exclusive waits until no request holds the game, and keeps new ones
// waiting until done.
func (g *gameState) exclusive() (done func()) {
	g.hmu.Lock()
	for g.held > 0 {
		g.hcond.Wait()
	}
	g.applying = true
	g.hmu.Unlock()
	return func() {
		g.hmu.Lock()
		g.applying = false
		g.hcond.Broadcast()
		g.hmu.Unlock()
	}
}

// want asks for m on disk, unless a newer manifest is wanted already.
func (g *gameState) want(m manifest) {
	g.wmu.Lock()
	if g.wanted == nil || g.wanted.rev < m.rev {
		g.wanted = &m
	}
	g.wmu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// applyLoop writes each wanted manifest to disk until the sync closes; a
// failure (a body not yet readable) is tried again, later and later.
func (g *gameState) applyLoop() {
	defer g.s.loops.Done()
	wait := 100 * time.Millisecond
	for {
		select {
		case <-g.s.ctx.Done():
			return
		case <-g.kick:
		}
		g.wmu.Lock()
		m := g.wanted
		g.wanted = nil
		g.wmu.Unlock()
		if m == nil {
			continue
		}
		if err := g.apply(*m); err != nil {
			g.s.log.Warn("fleet: writing a game's published files", "game", g.domain+"/"+g.name, "err", err)
			g.want(*m)
			select {
			case <-g.s.ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Second)
			continue
		}
		wait = 100 * time.Millisecond
	}
}

// apply makes this disk's copy of the game what m says: what m no longer
// has is deleted first (a file may stand where a folder goes), then each
// file this disk lacks or has otherwise is fetched and written atomically.
// Only what the last manifest written here holds is deleted or replaced: a
// file a sync through this node has just written, not yet published, is
// left to its own publish. The game reloads once the burst is over, if
// anything changed. No request of the Sync API holds the game meanwhile
// (Hold).
func (g *gameState) apply(m manifest) error {
	if g.at(m.rev) {
		// This node's own publish (most often): no need to keep the
		// requests out.
		return nil
	}
	defer g.exclusive()()
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.rev <= g.rev {
		return nil
	}
	s := g.s
	have, err := s.st.TreeOf(g.domain, g.name)
	if err != nil {
		return err
	}
	if s.applyRead != nil {
		s.applyRead(g.domain, g.name)
	}
	ours := func(p string) bool { return g.files == nil || have[p] == g.files[p] }
	changed := false
	for p := range have {
		if _, ok := m.Files[p]; !ok && ours(p) {
			if err := s.st.Delete(p); err != nil {
				return err
			}
			changed = true
		}
	}
	var fetch []store.Change
	for p, h := range m.Files {
		if have[p] != h && (have[p] == "" || ours(p)) {
			fetch = append(fetch, store.Change{Path: p, SHA256: h})
		}
	}
	if err := s.fetchBodies(fetch); err != nil {
		return err
	}
	g.rev, g.files = m.rev, m.Files
	if changed || len(fetch) > 0 {
		s.log.Info("fleet: wrote a game's published files", "game", g.domain+"/"+g.name, "files", len(fetch), "rev", m.rev)
		s.deb.Mark(g.domain, g.name)
	}
	return nil
}

// at reports whether this disk is at revision rev of the game's manifest,
// or past it.
func (g *gameState) at(rev uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return rev <= g.rev
}

// fetchBodies writes each of files from the object store, bodyJobs at once.
func (s *Sync) fetchBodies(files []store.Change) error {
	if len(files) == 0 {
		return nil
	}
	return eachBody(files, func(c store.Change) error { return s.fetchBody(c) })
}

// fetchTimeout bounds the fetch of one body: a fetch from a stream whose
// leader died stalls, and the apply loop tries again (after an election).
const fetchTimeout = 5 * time.Second

// fetchBody writes one file from the object store, through the store's
// atomic write, and checks it is the body the manifest names. A body of one
// chunk (most files) is read with a direct get of its chunk, which any copy
// of the stream answers; a longer one through the store's reader, whose
// consumer costs the fleet more.
func (s *Sync) fetchBody(c store.Change) error {
	ctx, cancel := context.WithTimeout(s.ctx, fetchTimeout)
	defer cancel()
	info, err := s.obj.GetInfo(ctx, c.SHA256)
	if err != nil {
		return fmt.Errorf("fetching the body of %s: %w", c.Path, err)
	}
	var body io.Reader
	switch {
	case info.Chunks == 0:
		body = bytes.NewReader(nil)
	case info.Chunks == 1:
		msg, err := s.bodyStream.GetLastMsgForSubject(ctx, "$O."+BodyStore+".C."+info.NUID)
		if err != nil {
			return fmt.Errorf("fetching the body of %s: %w", c.Path, err)
		}
		body = bytes.NewReader(msg.Data)
	default:
		r, err := s.obj.Get(ctx, c.SHA256)
		if err != nil {
			return fmt.Errorf("fetching the body of %s: %w", c.Path, err)
		}
		defer r.Close()
		body = r
	}
	if _, err := s.st.WriteWant(c.Path, body, c.SHA256); err != nil {
		return fmt.Errorf("fetching the body of %s: %w", c.Path, err)
	}
	return nil
}
