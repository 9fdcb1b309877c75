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

// scan sets the local size of the jobs of list, and returns the folders
// of theirs that are not there.
func (s *scans) scan(list []*fileJob) (missing map[string]bool) {
	byDir := map[string][]*fileJob{}
	for _, j := range list {
		j.local = -1
		dir := filepath.Dir(j.dst)
		byDir[dir] = append(byDir[dir], j)
	}
	for dir, js := range byDir {
		if s.scanFolder(dir, js) {
			if missing == nil {
				missing = map[string]bool{}
			}
			missing[dir] = true
		}
	}
	return missing
}

// scanFolders is how many lists a pull's folders are read for at once.
const scanFolders = 4

// scanFolder sets the local size of the jobs js, whose files are in dir,
// and reports whether dir is not there.
func (s *scans) scanFolder(dir string, js []*fileJob) (missing bool) {
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
		return true // not there yet: nothing local, nothing stale
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
	return false
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
// once for all its files, not once a file. A folder that was not there
// when the pull read it (a first pull's, a new game's) is made whole: its
// files are written plainly into a hidden folder beside it
// (atomicfile.StageFolder), which is put in place once the last of them
// is done (or failed: a file that failed is not there), or at the end of
// the pull; the files of it listed after that are written as into any
// folder. A pull that is killed leaves only the hidden folder, which the
// next one, finding the folder still missing, removes.
type folders struct {
	mu   sync.Mutex
	open map[string]*folder
}

type folder struct {
	mu     sync.Mutex
	f      *atomicfile.Folder
	err    error
	staged bool   // its files go into a hidden folder until it is placed
	label  string // staged: the folder as the listing names it
	placed bool
	left   int // staged files not done yet
}

// get is dir's folder, added if it is not there.
func (f *folders) get(dir string) *folder {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == nil {
		f.open = map[string]*folder{}
	}
	d := f.open[dir]
	if d == nil {
		d = &folder{}
		f.open[dir] = d
	}
	return d
}

// folder is dir, made first if it is not there.
func (f *folders) folder(dir string) (*atomicfile.Folder, error) {
	d := f.get(dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil && d.err == nil {
		if d.staged && !d.placed {
			if d.err = os.MkdirAll(filepath.Dir(dir), 0o755); d.err == nil {
				d.f, d.err = atomicfile.StageFolder(dir)
			}
		} else if d.err = os.MkdirAll(dir, 0o755); d.err == nil {
			d.f, d.err = atomicfile.OpenFolder(dir)
		}
	}
	return d.f, d.err
}

// expect notes n files to come into dir, a folder that was not there when
// it was read, and reports whether they are written into its hidden
// folder: they are unless it was put in place already, or opened as it
// is. Each such file's end is told with landed.
func (f *folders) expect(dir, label string, n int) bool {
	d := f.get(dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.placed || (d.f != nil && !d.staged) {
		return false
	}
	d.staged, d.label = true, label
	d.left += n
	return true
}

// landed notes that a file of dir that expect sent to its hidden folder
// is done, and puts the folder in place when it was the last; where that
// fails, it returns the folder's label and why.
func (f *folders) landed(dir string) (string, error) {
	d := f.get(dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.left--; d.left > 0 {
		return "", nil
	}
	return d.label, d.place()
}

// place puts a staged folder in place, and closes it; d.mu is held. Where
// that fails, its files are removed, and those written into it after fail
// with the error.
func (d *folder) place() error {
	if !d.staged || d.placed {
		return nil
	}
	d.placed = true
	if d.f == nil {
		return nil // no file got as far as being written
	}
	err := d.f.Place()
	d.f.Close() // a file of it listed later opens it again (as placed): no handle kept for each new folder
	d.f, d.err = nil, err
	return err
}

// close puts every staged folder not yet in place where it goes (the
// pull was cut short before their last files: those that were done are
// in them), returns the failures of those that could not be, and closes
// every folder's handle, once no file is being written. The failures are
// by the folder's label.
func (f *folders) close() (failed map[string]error) {
	for _, d := range f.open {
		d.mu.Lock()
		if err := d.place(); err != nil {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[d.label] = err
		}
		if d.f != nil {
			d.f.Close()
		}
		d.mu.Unlock()
	}
	return failed
}
