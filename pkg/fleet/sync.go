package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoster-dev/hoster/pkg/store"
	"github.com/nats-io/nats.go/jetstream"
)

// The fleet's buckets of the sync.
const (
	// ManifestBucket is the key-value bucket of the games' manifests: one
	// key a game, its tree as the last sync left it.
	ManifestBucket = "hoster-manifests"
	// BodyStore is the object store of the files' bodies, each named by the
	// sha256 (hex) of its bytes: a body already there is not stored again.
	BodyStore = "hoster-bodies"
)

// publishTimeout bounds one publish (its bodies and its manifests), long
// enough for JetStream to elect a new leader when a node died.
const publishTimeout = 30 * time.Second

// SyncOptions configure StartSync.
type SyncOptions struct {
	// Store is this node's games mirror, which the sync keeps in step with
	// the fleet's manifests.
	Store *store.Store
	// Reload follows a game whose files another node's sync changed here,
	// once per burst (after ReloadDebounce of quiet, 500 ms when 0).
	Reload         func(domain, game string)
	ReloadDebounce time.Duration
	// BodyGrace is how long a body no manifest names stays in the object
	// store before the collector removes it (1 hour when 0): far longer than
	// a publish takes between storing a body and naming it (gc.go).
	BodyGrace time.Duration
	// Now is the collector's clock; nil is time.Now (tests set another).
	Now func() time.Time
	// Logger receives the sync's lines; nil discards them.
	Logger *slog.Logger
}

// Sync is one sync for the whole fleet. The Sync API of the node a client
// talks to writes each file to its own disk as a lone server does, then
// hands the change to Publish before it answers: the bodies go to the
// object store (BodyStore), and the game's manifest in the key-value bucket
// (ManifestBucket) is rewritten by compare-and-set, which is the atomic
// publish; a lost compare-and-set (another node's sync changed the game in
// between) is read again and merged, so no change is lost and the client's
// check of the tree afterwards reports what the other sync changed, as it
// does against a lone server. Every node watches the manifests, fetches the
// bodies its disk lacks, writes them atomically through its store, deletes
// what the manifest no longer has, and reloads the game once. A node that
// was down gets every game's latest manifest when it comes back, and
// catches up. GET /api/tree answers Tree: the fleet's published tree. A
// request holds the games it changes (Hold) until its publish returned, so
// that no apply interleaves with it, and bodies no manifest names are
// removed after a grace (gc.go).
type Sync struct {
	node *Node
	kv   jetstream.KeyValue
	obj  jetstream.ObjectStore
	// bodyStream is the object store's stream, for direct gets.
	bodyStream jetstream.Stream
	st         *store.Store
	deb        *store.Debouncer
	log        *slog.Logger
	ctx        context.Context
	cancel     context.CancelFunc
	loops      sync.WaitGroup

	// caughtUp is set once the manifests at the start were read.
	caughtUp atomic.Bool

	// Set by tests, before any game is met: applyRead is called by apply
	// once it has read this disk's tree, before it writes; holdWaits by
	// Hold before it waits for an apply.
	applyRead func(domain, game string)
	holdWaits func()

	grace time.Duration
	now   func() time.Time
	// inlineLimit, when set (by tests), replaces inlineMax's.
	inlineLimit int

	mu        sync.Mutex
	games     map[string]*gameState // by manifest key
	published map[string]manifest   // the latest manifest seen of each game, by key
	named     map[string]int        // how many of those name each body (hash)
	put       map[string]time.Time  // the bodies this node put, and when
	unnamed   map[string]time.Time  // the collector's: when it first saw each body no manifest names
}

// manifest is a game's published tree.
type manifest struct {
	Domain string `json:"domain"`
	Game   string `json:"game"`
	// Files maps each file's path under the games root to its sha256.
	Files map[string]string `json:"files"`
	// rev is the manifest's revision in the bucket; deleted, whether the
	// game was deleted; body, the sha256 of the body in BodyStore that
	// holds the manifest when its entry points at one (manifest.go).
	rev     uint64
	deleted bool
	body    string
}

// names calls f with each body m names: its files' and its own.
func (m manifest) names(f func(hash string)) {
	for _, h := range m.Files {
		f(h)
	}
	if m.body != "" {
		f(m.body)
	}
}

// StartSync opens the fleet's buckets, reads every game's latest manifest
// (Tree answers from then on) and keeps this node's games in step with
// them until Close.
func StartSync(ctx context.Context, n *Node, o SyncOptions) (*Sync, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ReloadDebounce <= 0 {
		o.ReloadDebounce = 500 * time.Millisecond
	}
	if o.BodyGrace <= 0 {
		o.BodyGrace = DefaultBodyGrace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Sync{node: n, st: o.Store, log: o.Logger, grace: o.BodyGrace, now: o.Now,
		games: map[string]*gameState{}, published: map[string]manifest{}, named: map[string]int{},
		put: map[string]time.Time{}, unnamed: map[string]time.Time{}}
	var err error
	if s.kv, err = n.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: ManifestBucket, History: 1,
		Description: "hoster: each game's published tree"}); err != nil {
		return nil, err
	}
	if s.obj, err = n.ObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: BodyStore,
		Description: "hoster: the games' file bodies, by sha256"}); err != nil {
		return nil, err
	}
	// Read again while JetStream does not answer in time (a stream whose
	// leader is still being elected, a busy meta layer), as the buckets are.
	if err := retry(ctx, func(ctx context.Context) (err error) {
		s.bodyStream, err = n.js.Stream(ctx, "OBJ_"+BodyStore)
		return err
	}, func(err error) error { return fmt.Errorf("opening the fleet's object store: %w", err) }); err != nil {
		return nil, err
	}
	s.deb = store.NewDebouncer(o.ReloadDebounce, o.Reload)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	w, err := s.kv.WatchAll(s.ctx)
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("watching the fleet's manifests: %w", err)
	}
	caught := make(chan struct{})
	s.loops.Add(1)
	go s.watch(w, caught)
	select {
	case <-caught:
		s.loops.Add(1)
		go s.collectLoop()
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("reading the fleet's manifests: %w", ctx.Err())
	}
}

// watch follows the manifests until Close; caught is closed once every
// game's latest manifest was read.
func (s *Sync) watch(w jetstream.KeyWatcher, caught chan struct{}) {
	defer s.loops.Done()
	defer w.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				s.caughtUp.Store(true)
				close(caught)
				continue
			}
			s.seen(e)
		}
	}
}

// seen takes a manifest's new revision: it is the published tree from now
// on, and this node's disk follows it.
func (s *Sync) seen(e jetstream.KeyValueEntry) {
	var m manifest
	if e.Operation() != jetstream.KeyValuePut {
		m.deleted = true
		domain, game, ok := gameOfKey(e.Key())
		if !ok {
			return
		}
		m.Domain, m.Game = domain, game
	} else {
		var ok bool
		if m, ok = s.read(e); !ok {
			return
		}
	}
	m.rev = e.Revision()
	s.remember(e.Key(), m)
	g := s.game(m.Domain, m.Game)
	g.want(m)
}

// read decodes a manifest's entry, fetching the manifest it points at,
// and tries again (later and later) while the object store cannot answer,
// until the sync closes. An entry that is not a manifest, or whose stored
// manifest is gone, is logged and skipped.
func (s *Sync) read(e jetstream.KeyValueEntry) (manifest, bool) {
	wait := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
		m, err := s.decode(ctx, e.Key(), e.Value())
		cancel()
		switch {
		case err == nil:
			return m, true
		case errors.Is(err, errNotManifest) || errors.Is(err, jetstream.ErrObjectNotFound):
			s.log.Warn("fleet: a manifest that is not one", "key", e.Key(), "rev", e.Revision(), "err", err)
			return manifest{}, false
		}
		s.log.Warn("fleet: reading a manifest", "key", e.Key(), "rev", e.Revision(), "err", err)
		select {
		case <-s.ctx.Done():
			return manifest{}, false
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// remember makes m the published manifest of its game, unless a newer one
// is known already.
func (s *Sync) remember(key string, m manifest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.published[key]
	if ok && old.rev >= m.rev {
		return
	}
	s.published[key] = m
	m.names(func(h string) { s.named[h]++ })
	old.names(func(h string) {
		if s.named[h]--; s.named[h] <= 0 {
			delete(s.named, h)
		}
	})
}

// Tree is the fleet's published tree: every game's latest manifest this
// node has seen, which holds every change this node published.
func (s *Sync) Tree() (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tree := map[string]string{}
	for _, m := range s.published {
		for p, h := range m.Files {
			tree[p] = h
		}
	}
	return tree, nil
}

// Close stops following the manifests and fires the pending reloads.
func (s *Sync) Close() {
	s.cancel()
	s.loops.Wait()
	s.deb.Close()
}

// manifestKey is the bucket's key of a game: its <domain>/<game> in
// unpadded base64url (a key's characters are few, and a domain has dots).
func manifestKey(domain, game string) string {
	return "g." + base64.RawURLEncoding.EncodeToString([]byte(domain+"/"+game))
}

// gameOfKey is the game of a manifest's key.
func gameOfKey(key string) (domain, game string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(key, "g."))
	if err != nil || !strings.HasPrefix(key, "g.") {
		return "", "", false
	}
	return store.GameOf(string(b))
}

// bodyDigest is the object store's digest of a body whose sha256 is hash.
func bodyDigest(hash string) (string, error) {
	sum, err := hex.DecodeString(hash)
	if err != nil || len(sum) != sha256.Size {
		return "", fmt.Errorf("%q is not a sha256", hash)
	}
	return "SHA-256=" + base64.URLEncoding.EncodeToString(sum), nil
}

// isCASLost reports whether err is a compare-and-set lost to another write.
func isCASLost(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}
