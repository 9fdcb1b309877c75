// Package pages serves each game's public files, its page, scripts and
// assets, at GET and HEAD /<game>/<path> on the game's domain, as a static
// server in front of browsers and Caddy should: a Content-Type by extension
// with nosniff, a strong ETag that is the file's sha256 from the store's hash
// cache, Last-Modified, 304 and 206 answers, and Cache-Control: no-cache
// (names are not content-addressed, so browsers revalidate).
//
// A file is read through an [os.Root] on its game's folder, so no path and no
// symlink leads out of it, and through one open descriptor, so a file being
// replaced by a sync is served whole old or whole new. The game's own
// machinery is never served (see [Public]), nor a file that went into its
// hoster.server.js unless its hoster-game.json makes it public, nor
// anything of a game that is not loaded; every miss is the server's uniform
// 404. /favicon.ico, which browsers ask every domain for, answers 204.
//
// [Files.Route] puts the pages beside the runtime: the game socket at
// /<game> is the runtime's; every file below /<game>/, the browser library
// hoster.client.js included, is served here, with one set of headers.
package pages

import (
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/hoster-dev/hoster/pkg/notfound"
	"github.com/hoster-dev/hoster/pkg/store"
)

// Index is the file a path ending in "/" serves.
const Index = "index.html"

// Options configure Files.
type Options struct {
	// Store is the games mirror: its folders and its hash cache.
	Store *store.Store
	// Loaded says whether domain/game is a game the runtime has loaded; the
	// files of any other folder are not served.
	Loaded func(domain, game string) bool
}

// Files serves the public files of the loaded games.
type Files struct {
	o       Options
	mu      sync.Mutex
	roots   map[string]*os.Root // "<domain>/<game>" -> its open folder
	bundles map[string]*bundled // "<domain>/<game>" -> read from that folder
}

// New returns a Files over o.
func New(o Options) *Files {
	return &Files{o: o, roots: map[string]*os.Root{}, bundles: map[string]*bundled{}}
}

// Forget drops the handle on a game's folder, which a reload may have
// replaced, and what was read from its module; the next request opens it
// afresh.
func (f *Files) Forget(domain, game string) {
	f.mu.Lock()
	r := f.roots[domain+"/"+game]
	delete(f.roots, domain+"/"+game)
	delete(f.bundles, domain+"/"+game)
	f.mu.Unlock()
	if r != nil {
		r.Close()
	}
}

// Close releases every folder handle.
func (f *Files) Close() {
	f.mu.Lock()
	roots := f.roots
	f.roots = map[string]*os.Root{}
	f.bundles = map[string]*bundled{}
	f.mu.Unlock()
	for _, r := range roots {
		r.Close()
	}
}

// Favicon is the icon browsers ask every domain for. No game owns a
// domain's root, so it answers 204 No Content, cacheable for a day: no 404
// in the browser's console or the access log for every page.
const Favicon = "favicon.ico"

// Route returns the handler of everything outside /api: a plain GET of
// /<game> is redirected to /<game>/, the socket (/<game> with an Upgrade)
// goes to games (the runtime), /favicon.ico answers 204, and every
// /<game>/<path> is a file of the game's folder, the browser library too.
func (f *Files) Route(games http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, file, slash := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		get := r.Method == http.MethodGet || r.Method == http.MethodHead
		switch {
		case name == Favicon && !slash && get && r.Header.Get("Upgrade") == "" && !f.o.Loaded(Domain(r), name):
			w.Header().Set("Cache-Control", "public, max-age=86400")
			w.WriteHeader(http.StatusNoContent)
		case !slash && r.Header.Get("Upgrade") == "" && get:
			if name == "" || !f.o.Loaded(Domain(r), name) {
				notfound.Write(w)
				return
			}
			to := "/" + url.PathEscape(name) + "/"
			if r.URL.RawQuery != "" {
				to += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, to, http.StatusMovedPermanently)
		case !slash:
			games.ServeHTTP(w, r)
		default:
			f.Serve(w, r, Domain(r), name, file)
		}
	})
}

// Domain is the domain a request is for: its Host, lowercased, without a
// port or a final dot, as the runtime reads it for the socket.
func Domain(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// Serve answers a GET or HEAD of file (the path below /<game>/, "" for the
// index) in the folder of domain/game: a [Public] name of a loaded game
// that its hoster.server.js was not bundled from, or that its
// hoster-game.json's "public" names; anything else is the uniform 404.
func (f *Files) Serve(w http.ResponseWriter, r *http.Request, domain, game, file string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		notfound.Write(w)
		return
	}
	if file == "" || strings.HasSuffix(file, "/") {
		file += Index
	}
	if !f.serves(domain, game, file) {
		notfound.Write(w)
		return
	}
	fh, err := f.open(domain, game, file)
	if err != nil {
		notfound.Write(w)
		return
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		notfound.Write(w)
		return
	}
	if fi.IsDir() {
		// A folder named without its slash: to its index, when it has one.
		if !f.serves(domain, game, file+"/"+Index) {
			notfound.Write(w)
			return
		}
		if idx, err := f.open(domain, game, file+"/"+Index); err == nil {
			idx.Close()
			http.Redirect(w, r, "/"+url.PathEscape(game)+"/"+escapePath(file)+"/", http.StatusMovedPermanently)
			return
		}
		notfound.Write(w)
		return
	}
	if !fi.Mode().IsRegular() {
		notfound.Write(w)
		return
	}
	sum, err := f.o.Store.HashOf(domain+"/"+game+"/"+file, fh, fi)
	if err != nil {
		notfound.Write(w)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ContentType(file))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", `"`+sum+`"`)
	http.ServeContent(w, r, "", fi.ModTime(), fh)
}

// open opens file in the game's folder. The folder's os.Root keeps every
// path and symlink inside it; beyond that, no name on the path may be a
// symlink (each checked without following it, the last also that it names
// the file opened), so no link can serve the game's machinery under a
// public name.
// A name replaced between the two looks is opened again. A handle on a
// folder removed and made again (a game deleted and pushed anew) finds
// nothing: the folder is then opened afresh.
func (f *Files) open(domain, game, file string) (*os.File, error) {
	fresh := false
	for try := 0; try < 3; try++ {
		root, err := f.root(domain, game)
		if err != nil {
			return nil, err
		}
		fh, err := openNoLinks(root, file)
		if err != nil {
			if fresh || !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrClosed)) {
				return nil, err
			}
			f.Forget(domain, game)
			fresh = true
			continue
		}
		li, lerr := root.Lstat(file)
		fi, ferr := fh.Stat()
		if lerr == nil && ferr == nil && li.Mode()&fs.ModeSymlink == 0 && os.SameFile(li, fi) {
			return fh, nil
		}
		fh.Close()
		if lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			break
		}
	}
	return nil, fs.ErrNotExist
}

func (f *Files) root(domain, game string) (*os.Root, error) {
	key := domain + "/" + game
	f.mu.Lock()
	r := f.roots[key]
	f.mu.Unlock()
	if r != nil {
		return r, nil
	}
	r, err := f.o.Store.OpenGame(domain, game)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if old := f.roots[key]; old != nil {
		r.Close()
		return old, nil
	}
	f.roots[key] = r
	return r, nil
}

// openNoLinks opens file in root after checking that no folder on its path
// is a symlink.
func openNoLinks(root *os.Root, file string) (*os.File, error) {
	for i := strings.IndexByte(file, '/'); i >= 0; i = nextSlash(file, i) {
		fi, err := root.Lstat(file[:i])
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fs.ErrNotExist
		}
	}
	return root.Open(file)
}

// nextSlash is the index of the next "/" in p after i, or -1.
func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
