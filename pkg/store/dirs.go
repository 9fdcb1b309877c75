package store

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// maxDirs is how many directory handles the store keeps open for uploads.
const maxDirs = 128

// dirCache keeps the directories uploads go to open, each as its own
// os.Root. Through the games root, creating an upload's temporary file and
// renaming it into place each open and close every parent directory again;
// through a handle on its directory, each is one syscall. A handle on a
// directory removed behind the store's back cannot lose a write: nothing
// can be created in a removed directory (ENOENT), and a directory can only
// be removed once the upload's temporary file in it is gone, which fails
// the rename.
type dirCache struct {
	mu      sync.Mutex
	entries map[string]*dirHandle
	clock   uint64
}

type dirHandle struct {
	dir  string
	root *os.Root
	refs int
	used uint64
	dead bool // out of the map: closed once the last user is done
}

// get returns a handle on dir (relative to root), creating the directory
// when missing; release it with put.
func (c *dirCache) get(root *os.Root, dir string) (*dirHandle, error) {
	c.mu.Lock()
	c.clock++
	if h := c.entries[dir]; h != nil {
		h.refs++
		h.used = c.clock
		c.mu.Unlock()
		return h, nil
	}
	c.mu.Unlock()

	r, err := root.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		r, err = root.OpenRoot(dir)
	}
	if err != nil {
		return nil, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.entries[dir]; h != nil { // opened meanwhile by another upload
		r.Close()
		h.refs++
		h.used = c.clock
		return h, nil
	}
	if c.entries == nil {
		c.entries = map[string]*dirHandle{}
	}
	if len(c.entries) >= maxDirs {
		c.evictLocked()
	}
	h := &dirHandle{dir: dir, root: r, refs: 1, used: c.clock}
	c.entries[dir] = h
	return h, nil
}

// put releases a handle from get.
func (c *dirCache) put(h *dirHandle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h.refs--
	if h.dead && h.refs == 0 {
		h.root.Close()
	}
}

// evictLocked drops the least recently used handle.
func (c *dirCache) evictLocked() {
	var old *dirHandle
	for _, h := range c.entries {
		if old == nil || h.used < old.used {
			old = h
		}
	}
	if old != nil {
		c.dropLocked(old)
	}
}

func (c *dirCache) dropLocked(h *dirHandle) {
	delete(c.entries, h.dir)
	h.dead = true
	if h.refs == 0 {
		h.root.Close()
	}
}

// drop forgets the handles on rel and every directory below it, once rel
// has been deleted.
func (c *dirCache) drop(rel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for dir, h := range c.entries {
		if dir == rel || strings.HasPrefix(dir, rel+"/") {
			c.dropLocked(h)
		}
	}
}

// forget drops h, whose directory was found removed, so that the next get
// opens (or creates) the directory afresh.
func (c *dirCache) forget(h *dirHandle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[h.dir] == h {
		c.dropLocked(h)
	}
}

// closeAll closes every handle not in use.
func (c *dirCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.entries {
		c.dropLocked(h)
	}
}
