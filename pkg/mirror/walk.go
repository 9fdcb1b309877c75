package mirror

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/hoster-dev/hoster/pkg/filehash"
	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/hoster-dev/hoster/pkg/layout"
)

// File is one local file to mirror.
type File struct {
	// Path is relative to the sites root, slash-separated: <domain>/<game>/...
	Path string
	// Abs is where it is on disk.
	Abs string
	// Size in bytes, from the walk.
	Size int64
	// Hash is the lowercase hex sha256, filled by Hash.
	Hash string
}

// Local is a walked sites tree.
type Local struct {
	// Files by Path.
	Files map[string]*File
	// Games are the "<domain>/<game>" folders found, sorted.
	Games []string
	// Refused are names that cannot be mirrored (see nameFault): left
	// out, each a failure of the sync.
	Refused []Failure
	// Cache, when set, gives the hashes of files unchanged since it last
	// saw them, and keeps the new ones.
	Cache *HashCache
}

// nameFault is why a name cannot be mirrored, either way (sync's walk, a
// pull's listing), or "" when it can: a name that is not valid UTF-8 (the
// server refuses such a path, and JSON could not carry it back), or that
// holds a control character (a newline in it would forge lines of every
// report that names it, and make a folder no one can type).
func nameFault(name string) string {
	switch {
	case !utf8.ValidString(name):
		return "the name is not valid UTF-8, which the server refuses"
	case strings.ContainsFunc(name, unicode.IsControl):
		return "the name holds a control character"
	}
	return ""
}

// shownName is name as reports show it: Go's escapes for what is not
// printable (a newline as \n, a byte that is not UTF-8 as \xff), so a name
// is one line, whatever it holds.
func shownName(name string) string {
	q := strconv.Quote(name)
	return q[1 : len(q)-1]
}

// refusedName is the failure of a local name that nameFault refuses.
func refusedName(path, fault string) Failure {
	return Failure{Op: "skip", Path: shownName(path), Error: fault + "; rename it (it was not sent)"}
}

// HashCache keeps the hashes of local files between the rounds of
// `sync --watch`, each with the file's stamp (inode, size, mtime, ctime) when
// it was hashed; a hash is used again only while the stamp is unchanged. A
// one-shot sync has none: it stays stateless.
type HashCache struct {
	mu   sync.Mutex
	m    map[string]cachedHash // by absolute path
	seen map[string]bool       // paths looked up since the last prune
	hits int
}

type cachedHash struct {
	stamp filehash.Stamp
	hash  string
}

// NewHashCache makes an empty cache.
func NewHashCache() *HashCache {
	return &HashCache{m: map[string]cachedHash{}, seen: map[string]bool{}}
}

// Hits is how many hashes the cache gave since it was made.
func (c *HashCache) Hits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

func (c *HashCache) get(abs string, st filehash.Stamp) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[abs] = true
	e, ok := c.m[abs]
	if ok && e.stamp == st {
		c.hits++
		return e.hash, true
	}
	return "", false
}

func (c *HashCache) put(abs string, st filehash.Stamp, hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[abs] = cachedHash{st, hash}
}

// prune forgets the files not looked up since the last prune (deleted, or
// no longer hashed), so the cache holds no more than the tree.
func (c *HashCache) prune() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for abs := range c.m {
		if !c.seen[abs] {
			delete(c.m, abs)
		}
	}
	c.seen = map[string]bool{}
}

// Walk finds the games under root by the contract's structure rules
// (pkg/layout's Games: a domain is a directory whose name contains a dot and
// does not start with "_" or "."; a game is a directory in it, not starting
// with "_" or ".", holding hoster-game.json as a regular file) and lists
// their files: each game's whole subtree except hidden entries, node_modules
// and reserved ("_") names. Loose files, non-dotted folders and symlinks are
// ignored. A game whose domain or name nameFault refuses is left out, a
// named failure.
func Walk(root string) (*Local, error) {
	l := &Local{Files: map[string]*File{}}
	games, err := layout.Games(root)
	if err != nil {
		return nil, err
	}
	for _, g := range games {
		if fault := nameFault(g); fault != "" {
			l.Refused = append(l.Refused, refusedName(g, fault))
			continue
		}
		l.Games = append(l.Games, g)
	}

	// Games are walked in parallel: a walk is one lstat per file, and a
	// syscall's wait is better spent walking another game.
	found := make([][]*File, len(l.Games))
	refused := make([][]Failure, len(l.Games))
	errs := make([]error, len(l.Games))
	var wg sync.WaitGroup
	sem := make(chan struct{}, filehash.Workers())
	for i, prefix := range l.Games {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			found[i], refused[i], errs[i] = walkGame(filepath.Join(root, filepath.FromSlash(prefix)), prefix)
		}()
	}
	wg.Wait()
	for i := range l.Games {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for _, f := range found[i] {
			l.Files[f.Path] = f
		}
		l.Refused = append(l.Refused, refused[i]...)
	}
	return l, nil
}

// walkGame lists the files of the game at dir, whose path is prefix, and
// the names it refuses.
func walkGame(dir, prefix string) ([]*File, []Failure, error) {
	var files []*File
	var refused []Failure
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walking %s: %w", prefix, err)
		}
		if p == dir {
			return nil
		}
		if game.IsSkipped(e.Name()) || game.IsReserved(e.Name()) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.IsDir() && !e.Type().IsRegular() {
			return nil // symlinks and devices are not mirrored
		}
		if fault := nameFault(e.Name()); fault != "" {
			rel, _ := filepath.Rel(dir, p)
			refused = append(refused, refusedName(prefix+"/"+filepath.ToSlash(rel), fault))
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			return nil // walked
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		rel, _ := filepath.Rel(dir, p)
		path := prefix + "/" + filepath.ToSlash(rel)
		files = append(files, &File{Path: path, Abs: p, Size: info.Size()})
		return nil
	})
	return files, refused, err
}

// Hash fills in every file's sha256, on all cores.
func (l *Local) Hash() error { return l.HashNeeded(nil) }

// HashNeeded hashes the files for which need returns true (all when need is
// nil), on all cores; the others keep an empty Hash. need is asked just
// before each file is hashed, so it may start answering mid-way, for
// instance once the server's tree has arrived and shows which files it has.
func (l *Local) HashNeeded(need func(path string) bool) error {
	files := make([]*File, 0, len(l.Files))
	for _, f := range l.Files {
		files = append(files, f)
	}
	// Big files first, so one large file does not finish alone at the end.
	sort.Slice(files, func(i, j int) bool { return files[i].Size > files[j].Size })
	var mu sync.Mutex
	var first error
	if l.Cache != nil {
		defer l.Cache.prune()
	}
	filehash.Each(len(files), func(i int, x *filehash.Hasher) {
		f := files[i]
		if need != nil && !need(f.Path) {
			return
		}
		if err := hashFile(f, x, l.Cache); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	})
	return first
}

func hashFile(f *File, x *filehash.Hasher, cache *HashCache) error {
	fh, err := os.Open(f.Abs)
	if err != nil {
		return fmt.Errorf("hashing %s: %w", f.Path, err)
	}
	defer fh.Close()
	var st filehash.Stamp
	stamped := false
	if cache != nil {
		// The stamp is taken before reading: a file changed while it is
		// read gets a new stamp, so its hash is not trusted next time.
		if fi, err := fh.Stat(); err == nil {
			st, stamped = filehash.StampOf(fi)
		}
		if stamped {
			if h, ok := cache.get(f.Abs, st); ok {
				f.Size, f.Hash = st.Size, h
				return nil
			}
		}
	}
	sum, n, err := x.Sum(fh)
	if err != nil {
		return fmt.Errorf("hashing %s: %w", f.Path, err)
	}
	f.Size, f.Hash = n, sum
	if stamped && n == st.Size {
		cache.put(f.Abs, st, sum)
	}
	return nil
}

// Managed reports whether a server path is one a sync may delete: at least
// <domain>/<game>/<file> deep, under a valid domain and game name, with no
// reserved, hidden or node_modules segment anywhere.
func Managed(path string) bool {
	segs := strings.Split(path, "/")
	if len(segs) < 3 || !game.IsDomainName(segs[0]) || !game.IsGameName(segs[1]) {
		return false
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || game.IsReserved(s) || game.IsSkipped(s) {
			return false
		}
	}
	return true
}

// has reports whether the walk found a file at path.
func (l *Local) has(path string) bool { _, ok := l.Files[path]; return ok }
