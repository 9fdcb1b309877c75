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

// scans read each local folder a pull writes into once: they set every
// job's local size (-1: no local copy), stat-ing only the files the folder
// holds (a first pull's folders hold none, or are not there yet), and
// remove the temporary files an earlier pull that was cut off (killed, or
// its machine stopped) left there. Only files of a pull's own naming, for
// a name a pull writes, are removed; a pull running at the same moment
// into the same folder may lose a transfer to this, which it reports, and
// its next run completes. A folder whose files come in several lists
// (from a listing not sorted by path) is read once, for its first list:
// the sizes of the files of a later one are what they were then, before
// this pull fetched any file of theirs.
type scans struct {
	mu      sync.Mutex
	folders map[string]*localFolder
}

// localFolder is a folder as scans read it.
type localFolder struct {
	once  sync.Once
	sizes map[string]int64
	err   error
}

// scan sets the local size of the jobs of list.
func (s *scans) scan(list []*fileJob) {
	byDir := map[string][]*fileJob{}
	for _, j := range list {
		j.local = -1
		dir := filepath.Dir(j.dst)
		byDir[dir] = append(byDir[dir], j)
	}
	for dir, js := range byDir {
		s.scanFolder(dir, js)
	}
}

// scanFolders is how many lists a pull's folders are read for at once.
const scanFolders = 4

// scanFolder sets the local size of the jobs js, whose files are in dir.
func (s *scans) scanFolder(dir string, js []*fileJob) {
	s.mu.Lock()
	if s.folders == nil {
		s.folders = map[string]*localFolder{}
	}
	d := s.folders[dir]
	if d == nil {
		d = &localFolder{}
		s.folders[dir] = d
	}
	s.mu.Unlock()
	d.once.Do(func() { d.sizes, d.err = localSizes(dir) })
	if errors.Is(d.err, fs.ErrNotExist) {
		return // not there yet: nothing local, nothing stale
	}
	for _, j := range js {
		size, held := d.sizes[filepath.Base(j.dst)]
		switch {
		case d.err == nil && !held:
		case d.err == nil && size >= 0:
			j.local = size
		default: // unreadable folder, or not a regular file: looked at as a path
			if fi, err := os.Stat(j.dst); err == nil {
				j.local = fi.Size()
			}
		}
	}
}

// localSizes reads the folder dir: the size of each regular file in it by
// name (-1 for an entry of another type), each stat-ed relative to the
// folder (a path walked once, not once a file); the temporary files a cut
// off pull left (pkg/atomicfile's, named after a file a pull writes) are
// removed, and not named.
func localSizes(dir string) (map[string]int64, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	entries, err := d.ReadDir(-1) // opened in a Root: each entry's Lstat is read with it
	d.Close()
	if err != nil {
		return nil, err
	}
	sizes := make(map[string]int64, len(entries))
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			sizes[name] = -1
			continue
		}
		if target, ok := atomicfile.TargetOf(name); ok && mirrorName(target) {
			root.Remove(name)
			continue
		}
		sizes[name] = -1
		if fi, err := e.Info(); err == nil {
			sizes[name] = fi.Size()
		}
	}
	return sizes, nil
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
