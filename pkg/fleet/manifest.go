package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// MaxManifestBytes is the largest manifest (a game's tree, as JSON) the
// fleet publishes: every node holds every game's manifest in memory. 64 MiB
// is some 250,000 files with paths of 200 bytes.
const MaxManifestBytes = 64 << 20

// A manifest's entry in ManifestBucket is the manifest itself, as JSON,
// while it fits in one NATS message with room to spare (inlineMax). A larger
// one is stored in the object store (BodyStore) as a body of its own, named
// by its sha256 as the files' bodies are, before the compare-and-set, and
// the entry points at it:
//
//	{"domain":"a.com","game":"g","files":"sha256:<hex of the body>","size":1534000}
//
// The compare-and-set of the entry stays the atomic publish, and the
// collector keeps the body while an entry this node saw last points at it.
// "files" holding a string rather than the map makes a node of an older
// hoster-server fail to read the entry (and so neither apply it nor build on
// it) instead of reading a game with no files.
const storedPrefix = "sha256:"

// payloadRoom is what a message leaves for its subject and headers.
const payloadRoom = 64 << 10

// entry is a manifest's value in the bucket: Files is the manifest's files
// (a JSON object), or the storedPrefix and the sha256 of the body that holds
// the whole manifest (a JSON string), with Size its length.
type entry struct {
	Domain string          `json:"domain"`
	Game   string          `json:"game"`
	Files  json.RawMessage `json:"files"`
	Size   int64           `json:"size,omitempty"`
}

// errNotManifest marks an entry that no retry makes a manifest.
var errNotManifest = errors.New("not a manifest")

// inlineMax is the largest manifest an entry holds itself.
func (s *Sync) inlineMax() int {
	if s.inlineLimit > 0 {
		return s.inlineLimit
	}
	return int(s.node.nc.MaxPayload()) - payloadRoom
}

// encode is m's entry in the bucket: m itself, or, when it does not fit,
// a pointer at the body that holds it, which is stored first (m.body is
// set to it).
func (s *Sync) encode(ctx context.Context, m *manifest) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(b) <= s.inlineMax() {
		return b, nil
	}
	if len(b) > MaxManifestBytes {
		return nil, fmt.Errorf("its manifest (%d files) is %d bytes, more than the %d a fleet publishes", len(m.Files), len(b), MaxManifestBytes)
	}
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:])
	if err := s.putManifest(ctx, hash, b); err != nil {
		return nil, fmt.Errorf("storing its manifest (%d files, %d bytes) in %s: %w", len(m.Files), len(b), BodyStore, err)
	}
	m.body = hash
	return json.Marshal(entry{Domain: m.Domain, Game: m.Game,
		Files: json.RawMessage(strconv.Quote(storedPrefix + hash)), Size: int64(len(b))})
}

// putManifest stores the manifest b as the body hash, unless it is known
// to be there, trying again while JetStream cannot take it.
func (s *Sync) putManifest(ctx context.Context, hash string, b []byte) error {
	if s.hasBody(hash) {
		return nil
	}
	chunk := s.chunkSize(int64(len(b)))
	err := retry(ctx, func(ctx context.Context) error {
		_, err := s.obj.Put(ctx, jetstream.ObjectMeta{Name: hash, Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunk}}, bytes.NewReader(b))
		return err
	}, func(err error) error { return err })
	if err != nil {
		return err
	}
	s.knowBody(hash)
	return nil
}

// decode reads the entry value of key: the manifest it holds, or the one
// stored in the body it points at. An entry that is not a manifest of key
// fails with errNotManifest, a body gone with jetstream.ErrObjectNotFound;
// any other failure may pass.
func (s *Sync) decode(ctx context.Context, key string, value []byte) (manifest, error) {
	var e entry
	if err := json.Unmarshal(value, &e); err != nil {
		return manifest{}, fmt.Errorf("%w: %w", errNotManifest, err)
	}
	if manifestKey(e.Domain, e.Game) != key {
		return manifest{}, fmt.Errorf("%w: it names %s/%s, not its key's game", errNotManifest, e.Domain, e.Game)
	}
	m := manifest{Domain: e.Domain, Game: e.Game}
	if len(e.Files) == 0 || e.Files[0] != '"' {
		if err := json.Unmarshal(e.Files, &m.Files); len(e.Files) > 0 && err != nil {
			return manifest{}, fmt.Errorf("%w: %w", errNotManifest, err)
		}
		return m, nil
	}
	var ref string
	if err := json.Unmarshal(e.Files, &ref); err != nil {
		return manifest{}, fmt.Errorf("%w: %w", errNotManifest, err)
	}
	hash, ok := strings.CutPrefix(ref, storedPrefix)
	if _, err := bodyDigest(hash); !ok || err != nil {
		return manifest{}, fmt.Errorf("%w: its files are %q, not a stored manifest's sha256", errNotManifest, ref)
	}
	if e.Size > MaxManifestBytes {
		return manifest{}, fmt.Errorf("%w: it is %d bytes, more than the %d a fleet publishes", errNotManifest, e.Size, MaxManifestBytes)
	}
	b, err := s.obj.GetBytes(ctx, hash)
	if err != nil {
		return manifest{}, fmt.Errorf("fetching the stored manifest %s: %w", hash, err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hash || int64(len(b)) != e.Size {
		return manifest{}, fmt.Errorf("%w: the stored manifest %s is not the body the entry names", errNotManifest, hash)
	}
	var stored manifest
	if err := json.Unmarshal(b, &stored); err != nil || stored.Domain != m.Domain || stored.Game != m.Game {
		return manifest{}, fmt.Errorf("%w: the stored manifest %s is not the game's (%v)", errNotManifest, hash, err)
	}
	stored.body = hash
	return stored, nil
}
