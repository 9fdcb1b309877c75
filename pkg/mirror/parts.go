package mirror

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/atomicfile"
	"github.com/hoster-dev/hoster/pkg/layout"
)

// mirrorName reports whether name is one a pull writes: the access logs,
// the health day-files and the game-log hour files.
func mirrorName(name string) bool {
	_, _, stats := layout.ParseStatsFileName(name)
	_, _, gameLog := layout.ParseGameLogFileName(name)
	return name == api.AccessLogName || layout.IsRotatedLogName(name) || stats || gameLog
}

// scanLocal reads each folder the jobs write into once: it sets every
// job's local size (-1: no local copy), stat-ing only the files the folder
// holds (a first pull's folders hold none, or are not there yet), and
// removes the temporary files an earlier pull that was cut off (killed, or
// its machine stopped) left there. Only files of a pull's own naming, for
// a name a pull writes, are removed; a pull running at the same moment
// into the same folder may lose a transfer to this, which it reports, and
// its next run completes.
func scanLocal(list []*fileJob) {
	byDir := map[string][]*fileJob{}
	for _, j := range list {
		j.local = -1
		dir := filepath.Dir(j.dst)
		byDir[dir] = append(byDir[dir], j)
	}
	for dir, js := range byDir {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not there yet: nothing local, nothing stale
		}
		held := make(map[string]bool, len(entries))
		for _, e := range entries {
			// A pull's temporary files are pkg/atomicfile's, named after
			// the file they were to become.
			if target, ok := atomicfile.TargetOf(e.Name()); ok && e.Type().IsRegular() && mirrorName(target) {
				os.Remove(filepath.Join(dir, e.Name()))
				continue
			}
			held[e.Name()] = true
		}
		for _, j := range js {
			if err != nil || held[filepath.Base(j.dst)] { // unreadable folder: each file looked at
				if fi, err := os.Stat(j.dst); err == nil {
					j.local = fi.Size()
				}
			}
		}
	}
}

// folders are the local folders a pull writes whole files into, each made
// and opened (pkg/atomicfile's Folder, which no name inside leads out of)
// once for all its files, not once a file.
type folders struct {
	mu   sync.Mutex
	open map[string]*folder
}

type folder struct {
	once sync.Once
	f    *atomicfile.Folder
	err  error
}

// folder is dir, made first if it is not there.
func (f *folders) folder(dir string) (*atomicfile.Folder, error) {
	f.mu.Lock()
	if f.open == nil {
		f.open = map[string]*folder{}
	}
	d := f.open[dir]
	if d == nil {
		d = &folder{}
		f.open[dir] = d
	}
	f.mu.Unlock()
	d.once.Do(func() {
		if d.err = os.MkdirAll(dir, 0o755); d.err == nil {
			d.f, d.err = atomicfile.OpenFolder(dir)
		}
	})
	return d.f, d.err
}

// close closes every folder's handle, once no file is being written.
func (f *folders) close() {
	for _, d := range f.open {
		if d.f != nil {
			d.f.Close()
		}
	}
}
