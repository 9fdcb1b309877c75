package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/hoster-dev/hoster/pkg/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// bodyJobs is the most bodies one publish puts at once.
const bodyJobs = 32

// Publish publishes what a request of the Sync API changed on this node's
// disk: the bodies the object store lacks, then each changed game's
// manifest, by compare-and-set. It returns once the fleet has it (a
// quorum of the nodes stored it), or with why not.
func (s *Sync) Publish(changes []store.Change) error {
	ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
	defer cancel()
	byGame := map[string][]store.Change{}
	var games []*gameState
	for _, c := range changes {
		domain, game, ok := store.GameOf(c.Path)
		if !ok {
			return fmt.Errorf("publishing %s: not a path in a game", c.Path)
		}
		key := manifestKey(domain, game)
		if _, ok := byGame[key]; !ok {
			games = append(games, s.game(domain, game))
		}
		byGame[key] = append(byGame[key], c)
	}
	if err := s.putBodies(ctx, changes); err != nil {
		return err
	}
	// The games' manifests are rewritten at once: a batch of a sync spans
	// many games, and each compare-and-set is a round trip to a quorum.
	errs := make(chan error, len(games))
	for _, g := range games {
		go func() { errs <- g.commit(ctx, byGame[g.key]) }()
	}
	var first error
	for range games {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// putBodies puts the written files' bodies the object store lacks,
// bodyJobs at once.
func (s *Sync) putBodies(ctx context.Context, changes []store.Change) error {
	seen := map[string]bool{}
	var bodies []store.Change
	for _, c := range changes {
		if c.SHA256 != "" && !seen[c.SHA256] {
			seen[c.SHA256] = true
			bodies = append(bodies, c)
		}
	}
	return eachBody(bodies, func(c store.Change) error { return s.putBody(ctx, c) })
}

// eachBody calls f for each of files, bodyJobs at once, and returns the
// first failure.
func eachBody(files []store.Change, f func(store.Change) error) error {
	jobs := make(chan store.Change)
	errs := make(chan error, bodyJobs)
	var wg sync.WaitGroup
	for range min(bodyJobs, len(files)) {
		wg.Go(func() {
			var first error
			for c := range jobs {
				if err := f(c); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		})
	}
	for _, c := range files {
		jobs <- c
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// putBody puts the body of c, read back from this node's disk, unless it is
// known to be in the object store already: named by a manifest this node
// has seen, or put by this node. (Asking the store first would cost every
// new body a round trip more.) A body that is not c's hash any more (the
// file changed since) is taken back and fails the publish.
func (s *Sync) putBody(ctx context.Context, c store.Change) error {
	if s.hasBody(c.SHA256) {
		return nil
	}
	if _, err := bodyDigest(c.SHA256); err != nil {
		return fmt.Errorf("publishing %s: %w", c.Path, err)
	}
	f, err := s.st.Open(c.Path)
	if err != nil {
		return fmt.Errorf("publishing %s: %w", c.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("publishing %s: %w", c.Path, err)
	}
	chunk := s.chunkSize(fi.Size())
	// A put is tried again while JetStream cannot take it (no leader yet, or
	// one being elected after a node died), from the file's start.
	var changed bool
	err = retry(ctx, func(ctx context.Context) error {
		err := s.putFrom(ctx, c.SHA256, f, chunk)
		if errors.Is(err, errBodyChanged) {
			changed = true
			return nil
		}
		return err
	}, func(err error) error { return err })
	if err != nil {
		return fmt.Errorf("publishing %s: storing its body: %w", c.Path, err)
	}
	if changed {
		return fmt.Errorf("publishing %s: %w", c.Path, errBodyChanged)
	}
	s.knowBody(c.SHA256)
	return nil
}

// putFrom puts the body of f, from its start, as the object hash: a new
// one (putNew), or through the store's own Put where the store has a
// description of it already. errBodyChanged: f's bytes are not hash's.
func (s *Sync) putFrom(ctx context.Context, hash string, f io.ReadSeeker, chunk uint32) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	err := s.putNew(ctx, hash, f, chunk)
	if !errors.Is(err, errBodyThere) {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	info, err := s.obj.Put(ctx, jetstream.ObjectMeta{Name: hash, Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunk}}, f)
	if err != nil {
		return err
	}
	if want, _ := bodyDigest(hash); info.Digest != want {
		s.obj.Delete(ctx, hash)
		return errBodyChanged
	}
	return nil
}

// chunkSize is the size of the chunks of a body of size bytes in the object
// store: the body's size (the store's Put allocates a chunk for each body:
// a 4 MiB one for each of a sync's hundreds of small bodies at once cost
// it a third of its time), at most the largest message the fleet's NATS
// takes less room for the headers, and at most 4 MiB (fewer chunks, fewer
// round trips, than the store's 128 KiB).
func (s *Sync) chunkSize(size int64) uint32 {
	most := max(128<<10, min(4<<20, s.node.nc.MaxPayload()-64<<10))
	return uint32(max(1, min(size, most)))
}

// hasBody reports whether the body hash is known to be in the object store:
// a manifest this node has seen last names it (the collector keeps it), or
// this node put it less than half the collector's grace ago (the collector
// keeps a body no manifest names for the whole grace). A body a manifest
// named once is not trusted: the collector may have removed it since.
func (s *Sync) hasBody(hash string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.named[hash] > 0 {
		return true
	}
	at, ok := s.put[hash]
	return ok && s.now().Sub(at) < s.grace/2
}

func (s *Sync) knowBody(hash string) {
	s.mu.Lock()
	s.put[hash] = s.now()
	s.mu.Unlock()
}

// pendingCommit is one request's changes to a game's manifest, waiting for
// the game's next compare-and-set.
type pendingCommit struct {
	changes []store.Change
	done    chan error
}

// commit adds changes to the game's manifest. The requests of one sync
// come many at once: those that arrive while a compare-and-set is under way
// share the next one (a group commit), so a game's manifest is rewritten
// once per round trip, however many requests wait.
func (g *gameState) commit(ctx context.Context, changes []store.Change) error {
	p := &pendingCommit{changes: changes, done: make(chan error, 1)}
	g.qmu.Lock()
	g.queue = append(g.queue, p)
	lead := !g.committing
	g.committing = true
	g.qmu.Unlock()
	if lead {
		go g.lead()
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("publishing %s/%s: %w", g.domain, g.name, ctx.Err())
	}
}

// lead commits the waiting changes, round after round, until none wait.
// Each round has a context of its own: the request that made this leader
// may be gone, while others wait.
func (g *gameState) lead() {
	for {
		g.qmu.Lock()
		batch := g.queue
		g.queue = nil
		if len(batch) == 0 {
			g.committing = false
			g.qmu.Unlock()
			return
		}
		g.qmu.Unlock()
		var all []store.Change
		for _, p := range batch {
			all = append(all, p.changes...)
		}
		ctx, cancel := context.WithTimeout(g.s.ctx, publishTimeout)
		err := g.s.casUpdate(ctx, g, all)
		cancel()
		for _, p := range batch {
			p.done <- err
		}
	}
}

// maxCASRounds bounds the compare-and-set rounds of one commit lost to
// other nodes' syncs of the same game.
const maxCASRounds = 50

// casUpdate rewrites the game's manifest with changes: it reads the
// latest, applies changes, and writes it back if nobody wrote it in
// between, or reads it again. Other failures (a leader being elected after
// a node died) are tried again until ctx ends.
func (s *Sync) casUpdate(ctx context.Context, g *gameState, changes []store.Change) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	// The first round builds on the latest manifest this node has seen (its
	// own last publish, most often), which saves a read; a lost round reads
	// the bucket's.
	base := s.known(g.key)
	for round := 0; ; round++ {
		next := manifest{Domain: g.domain, Game: g.name, Files: maps.Clone(base.Files)}
		if next.Files == nil {
			next.Files = map[string]string{}
		}
		applyChanges(next.Files, changes)
		var err error
		next.rev, err = s.write(ctx, g.key, base.rev, &next)
		if isCASLost(err) && round < maxCASRounds {
			s.log.Info("fleet: a concurrent sync changed the game first; merging", "game", g.domain+"/"+g.name)
			if round > 0 {
				// The read may have come from a copy a moment behind (any
				// copy answers a read): give it that moment, more each
				// round.
				select {
				case <-ctx.Done():
					return fmt.Errorf("publishing %s/%s: %w", g.domain, g.name, ctx.Err())
				case <-time.After(time.Duration(round) * 5 * time.Millisecond):
				}
			}
			if base, err = s.latest(ctx, g.key); err != nil {
				return fmt.Errorf("publishing %s/%s: reading its manifest: %w", g.domain, g.name, err)
			}
			if k := s.known(g.key); k.rev > base.rev {
				base = k
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("publishing %s/%s: %w", g.domain, g.name, err)
		}
		s.remember(g.key, next)
		if base.rev == g.rev {
			// This disk had the base and has the changes: it is at next.
			g.rev, g.files = next.rev, next.Files
		} else {
			// Another node's changes came in between: fetch them.
			g.want(next)
		}
		return nil
	}
}

// known is the latest manifest of key this node has seen (revision 0:
// none).
func (s *Sync) known(key string) manifest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published[key]
}

// applyChanges applies changes to a manifest's files.
func applyChanges(files map[string]string, changes []store.Change) {
	for _, c := range changes {
		if c.SHA256 != "" {
			files[c.Path] = c.SHA256
			continue
		}
		for p := range files {
			if p == c.Path || strings.HasPrefix(p, c.Path+"/") {
				delete(files, p)
			}
		}
	}
}

// latest reads a game's manifest as the bucket has it now (revision 0:
// none), trying again while JetStream cannot answer.
func (s *Sync) latest(ctx context.Context, key string) (manifest, error) {
	var e jetstream.KeyValueEntry
	err := retry(ctx, func(ctx context.Context) (err error) {
		e, err = s.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			e = nil
			return nil
		}
		return err
	}, func(err error) error { return err })
	if err != nil || e == nil {
		return manifest{}, err
	}
	m, err := s.decode(ctx, key, e.Value())
	m.rev = e.Revision()
	return m, err
}

// write writes m at key if the key is still at revision rev (0: absent),
// and returns its new revision. A deleted game keeps its key, with no
// files: every write has a revision to order it by. A lost compare-and-set
// is returned at once, and so is an entry larger than a NATS message (a
// NATS whose max_payload leaves no room even for a pointer); other
// failures are tried again until ctx ends.
func (s *Sync) write(ctx context.Context, key string, rev uint64, m *manifest) (uint64, error) {
	b, err := s.encode(ctx, m)
	if err != nil {
		return 0, err
	}
	var out uint64
	var final error
	err = retry(ctx, func(ctx context.Context) error {
		var err error
		if rev == 0 {
			out, err = s.kv.Create(ctx, key, b)
		} else {
			out, err = s.kv.Update(ctx, key, b, rev)
		}
		switch {
		case isCASLost(err):
			final = err
			return nil
		case errors.Is(err, nats.ErrMaxPayload):
			final = fmt.Errorf("writing its manifest's entry (%d bytes): %w (the NATS's max_payload is %d)", len(b), err, s.node.nc.MaxPayload())
			return nil
		}
		return err
	}, func(err error) error { return err })
	if final != nil {
		return 0, final
	}
	return out, err
}
