package mirror

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/hoster-dev/hoster/pkg/api"
)

// Upload is one file to send.
type Upload struct {
	Path string
	Abs  string
	Size int64
}

// open opens the file for one attempt of its upload.
func (u Upload) open() (io.ReadCloser, error) { return os.Open(u.Abs) }

// Delete is one server path to delete: a file, or a whole game folder when
// the game is gone locally (Files then counts the files it holds).
type Delete struct {
	Path  string
	Files int
	// First marks what stands in the way of an upload: a server file where
	// the upload needs a folder, or a server folder (Files below it) where
	// it needs a file. It is deleted before the uploads.
	First bool
}

// Plan is what a sync will do.
type Plan struct {
	Uploads   []Upload
	Deletes   []Delete
	Unchanged int
}

// UploadBytes is the total size of the uploads.
func (p Plan) UploadBytes() int64 {
	var n int64
	for _, u := range p.Uploads {
		n += u.Size
	}
	return n
}

// DeleteFiles is the number of server files the deletes remove.
func (p Plan) DeleteFiles() int {
	n := 0
	for _, d := range p.Deletes {
		n += d.Files
	}
	return n
}

// PlanOptions are the safety rails of a plan.
type PlanOptions struct {
	// AllowEmpty lets a sync whose root holds no game delete server files.
	AllowEmpty bool
	// MaxDelete, when > 0, refuses a plan deleting more files than this.
	MaxDelete int
	// Leave names games ("<domain>/<game>") whose server files are left
	// exactly as they are: nothing of them is uploaded or deleted (a game
	// that failed to generate keeps running its last good version).
	Leave []string
}

// ErrEmptyRoot refuses a plan that would delete with no local game.
var ErrEmptyRoot = errors.New("the sites root holds no game, so every server game would be deleted; " +
	"check the path, or pass --allow-empty to really empty the server")

// MakePlan compares a hashed local tree with the server's tree: new and
// changed files are uploaded; server files absent locally are deleted when
// Managed. A game absent locally whose server files are all managed is
// deleted as one folder. Uploads are listed by game, each game's
// hoster-game.json and hoster.server.js last; the order they run in is
// runUploads' (code files only once every other upload has landed).
func MakePlan(local *Local, remote api.Tree, opts PlanOptions) (Plan, error) {
	var p Plan
	leave := map[string]bool{}
	for _, g := range opts.Leave {
		leave[g] = true
	}
	for _, f := range local.Files {
		if leave[gameOf(f.Path)] {
			continue
		}
		// Presence is checked, not just equality: a file the server lacks
		// is not hashed, and "" must never pass for a match.
		if h, ok := remote[f.Path]; ok && f.Hash != "" && h == f.Hash {
			p.Unchanged++
			continue
		}
		p.Uploads = append(p.Uploads, Upload{Path: f.Path, Abs: f.Abs, Size: f.Size})
	}
	sort.Slice(p.Uploads, func(i, j int) bool {
		a, b := p.Uploads[i].Path, p.Uploads[j].Path
		if ga, gb := gameOf(a), gameOf(b); ga != gb {
			return ga < gb
		}
		if la, lb := lastInGame(a), lastInGame(b); la != lb {
			return lb
		}
		return a < b
	})

	localGames := map[string]bool{}
	for _, g := range local.Games {
		localGames[g] = true
	}
	cleared := clearTheWay(&p, remote)
	// Server files absent locally, grouped by game.
	absent := map[string][]string{}
	unmanaged := map[string]bool{}
	for rp := range remote {
		if _, ok := local.Files[rp]; ok || cleared(rp) {
			continue
		}
		g := gameOf(rp)
		if leave[g] {
			continue
		}
		if !Managed(rp) {
			unmanaged[g] = true
			continue
		}
		absent[g] = append(absent[g], rp)
	}
	for _, g := range slices.Sorted(maps.Keys(absent)) {
		files := absent[g]
		sort.Strings(files)
		if !localGames[g] && !unmanaged[g] {
			p.Deletes = append(p.Deletes, Delete{Path: g, Files: len(files)})
			continue
		}
		for _, f := range files {
			p.Deletes = append(p.Deletes, Delete{Path: f, Files: 1})
		}
	}

	if n := p.DeleteFiles(); n > 0 {
		if len(local.Games) == 0 && !opts.AllowEmpty {
			return Plan{}, ErrEmptyRoot
		}
		if opts.MaxDelete > 0 && n > opts.MaxDelete {
			return Plan{}, fmt.Errorf("the sync would delete %d server files, more than --max-delete %d; nothing was changed", n, opts.MaxDelete)
		}
	}
	return p, nil
}

// clearTheWay adds a first delete for each server path that stands in the
// way of an upload (a file or folder changed kind) and returns whether a
// server file goes with them.
func clearTheWay(p *Plan, remote api.Tree) func(rp string) bool {
	folders := map[string]int{} // server folder inside a game -> files below it
	for rp := range remote {
		for i := len(gameOf(rp)) + 1; i < len(rp); i++ {
			if rp[i] == '/' {
				folders[rp[:i]]++
			}
		}
	}
	gone := map[string]bool{}
	var first []Delete
	for _, u := range p.Uploads {
		if n := folders[u.Path]; n > 0 && !gone[u.Path] {
			gone[u.Path] = true
			first = append(first, Delete{Path: u.Path, Files: n, First: true})
		}
		for i := len(gameOf(u.Path)) + 1; i < len(u.Path); i++ {
			if u.Path[i] != '/' {
				continue
			}
			if q := u.Path[:i]; !gone[q] {
				if _, isFile := remote[q]; isFile {
					gone[q] = true
					first = append(first, Delete{Path: q, Files: 1, First: true})
				}
			}
		}
	}
	sort.Slice(first, func(i, j int) bool { return first[i].Path < first[j].Path })
	p.Deletes = append(p.Deletes, first...)
	return func(rp string) bool { return under(gone, rp) }
}

// gameOf returns the "<domain>/<game>" prefix of a path (or the path).
func gameOf(p string) string {
	if i := strings.Index(p, "/"); i >= 0 {
		if j := strings.Index(p[i+1:], "/"); j >= 0 {
			return p[:i+1+j]
		}
	}
	return p
}

func lastInGame(p string) bool {
	rest := strings.TrimPrefix(p, gameOf(p)+"/")
	return rest == api.GameConfigFile || rest == api.ServerModule
}
