// Package atomicfile writes a whole file so that a reader, or a crash, sees
// the old file or the new one and never a part (tailscale's atomicfile is
// the model). The data goes to a temporary file in the target's folder and
// is renamed (or, for [CreateFile], linked) into place. A target that
// exists and is not a regular file (a folder, a symlink, a device) is
// refused, and on any failure the temporary file is removed and the target
// left as it was.
//
// Every write goes through [Pending], a temporary file made through an
// [os.Root] folder handle, so a name inside the folder can never lead out
// of it. The path-based functions open their target's folder as a root and
// write through it:
//   - [WriteFile] syncs the file and its folder to disk, so the new file
//     lasts once it returns.
//   - [WriteFileUnsynced] skips the two syncs, for output that is made again
//     from its sources (the generator's): a crash may lose it, never leave
//     half of it, and the syncs would double the generator's time.
//   - [Copy] writes what a reader gives, for downloads, and keeps the file
//     only if its size is accepted; [Folder.Copy] does it through a folder
//     the caller keeps open for many files.
//   - [CreateFile] writes only where nothing is.
//
// A temporary file is named "." + the target's name + ".tmp-" + digits
// ([TargetOf] reads such a name back), so a crash's leftovers can be found.
// On Linux the functions above (not [CreateIn]) write a file with no name
// instead (O_TMPFILE), which a crash leaves nothing of, and link it at the
// target where nothing is there: one link, not a create and a rename. Where
// something is, it is given a temporary name and placed as above, a
// non-regular target refused then; where linking fails (no /proc), the file
// is copied into a named one, and the files after it are named from the
// start.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"
)

// ErrNotRegular is wrapped by the error for a target that is not a regular
// file. The error for a folder wraps [syscall.EISDIR] too.
var ErrNotRegular = errors.New("it exists and is not a regular file")

// WriteFile writes data to path with mode perm, replacing any regular file
// there.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	_, err := write(path, bytes.NewReader(data), perm, (*Pending).Commit, true, nil)
	return err
}

// WriteFileUnsynced is WriteFile without syncing the file or its folder.
func WriteFileUnsynced(path string, data []byte, perm fs.FileMode) error {
	_, err := write(path, bytes.NewReader(data), perm, (*Pending).Commit, false, nil)
	return err
}

// Copy writes what r gives to path, unsynced, and puts it in place only if
// accept (which may be nil) takes the number of bytes received: a cut-off
// download leaves the target as it was. It returns the bytes received.
func Copy(path string, r io.Reader, perm fs.FileMode, accept func(n int64) error) (int64, error) {
	return write(path, r, perm, (*Pending).Commit, false, accept)
}

// Folder is a folder open for writing many files into it (a pull's): its
// os.Root, which no name inside leads out of, and where files are written
// with no name until complete (Linux), the folder's own handle they are
// linked in. Methods may be called at once from many goroutines.
type Folder struct {
	mu    sync.RWMutex // held to write, and to place a staged folder (stage.go)
	root  *os.Root
	self  *os.File // nil where files are not written unnamed
	stage *stage   // where it is a hidden folder not yet placed (StageFolder)
	// exactPerm is a mode the folder's plain files were created with
	// exactly (the umask took nothing of it); 0: none yet (copyPlainAt).
	exactPerm atomic.Uint32
}

// OpenFolder opens the folder at path for writing files into it; close it
// when done.
func OpenFolder(path string) (*Folder, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	f := &Folder{root: root}
	if unnamedOK() {
		f.self, _ = root.Open(".") // nil: each file opens it
	}
	return f, nil
}

// Close closes the folder's handles; a staged folder not placed is
// removed.
func (f *Folder) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.discardStage()
	return f.closeHandles()
}

func (f *Folder) closeHandles() error {
	if f.self != nil {
		f.self.Close()
	}
	return f.root.Close()
}

// Copy is [Copy] for name, a path inside the folder, written through the
// folder's handles.
func (f *Folder) Copy(name string, r io.Reader, perm fs.FileMode, accept func(n int64) error) (n int64, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("writing %s: %w", name, err)
		}
	}()
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.stage != nil {
		return f.copyPlain(name, r, perm, accept)
	}
	return writeIn(f.root, f.self, name, r, perm, (*Pending).Commit, false, accept)
}

// CreateFile writes data to path with mode perm only if nothing is there: it
// fails with an error wrapping [fs.ErrExist] otherwise, even against another
// writer racing it.
func CreateFile(path string, data []byte, perm fs.FileMode) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("writing %s: %w", path, fs.ErrExist)
	}
	_, err := write(path, bytes.NewReader(data), perm, (*Pending).link, true, nil) // a link never replaces
	return err
}

// tempName is a temporary file's name: "." + target + ".tmp-" + digits.
var tempName = regexp.MustCompile(`^\.(.+)\.tmp-\d+$`)

// TargetOf returns the name of the file a temporary file of this package
// was to become, and whether name is one. For a target whose name is too
// long to carry the temporary's additions, it is the start of that name.
func TargetOf(name string) (string, bool) {
	m := tempName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// maxName is the longest name a folder entry may have (NAME_MAX).
const maxName = 255

// tempFor is a new temporary name for the target name: the target's name is
// cut short, at a character's start, where the whole would be too long.
func tempFor(name string) string {
	suffix := ".tmp-" + strconv.FormatUint(uint64(rand.Uint32()), 10)
	if room := maxName - 1 - len(suffix); len(name) > room {
		for room > 0 && !utf8.RuneStart(name[room]) {
			room--
		}
		name = name[:room]
	}
	return "." + name + suffix
}

// Pending is a temporary file being written in a folder: [Pending.Commit]
// puts it in place of its target, [Pending.Discard] removes it. Write to it
// (it is an [io.Writer]) between the two.
type Pending struct {
	f    *os.File
	root *os.Root
	dir  string // the target's folder inside root: "" or ending in a separator
	name string // the target's name inside root
	tmp  string // the temporary's name inside root; "" while f has no name
	// folder is the target's folder, where f has no name yet: it is linked
	// there; ownFolder, when it was opened for f alone.
	folder    *os.File
	ownFolder bool
	noStat    bool // no caller wants the stat Commit returns
	closed    bool
}

// CreateIn starts writing name, a path inside root, with a temporary file
// in name's folder, created with mode perm (before the umask). It refuses a
// target that exists and is not a regular file, and never leads out of
// root: a symlink on the way that points outside fails. Defer Discard.
func CreateIn(root *os.Root, name string, perm fs.FileMode) (*Pending, error) {
	if err := refuseNonRegular(root, name); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(name)
	for range 10000 {
		tmp := dir + tempFor(base)
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &Pending{f: f, root: root, dir: dir, name: name, tmp: tmp}, nil
	}
	return nil, fmt.Errorf("making a temporary file beside %s: %w", name, fs.ErrExist)
}

// startIn starts writing name inside root with a file that has no name
// until it is complete, where the system offers that (createUnnamed), and
// with a named temporary file (CreateIn) where not. self, when not nil, is
// root's own folder, for a name in it.
func startIn(root *os.Root, self *os.File, name string, perm fs.FileMode) (*Pending, error) {
	if unnamedOK() {
		dir, _ := filepath.Split(name)
		folder, own := self, false
		if dir != "" || folder == nil {
			folder, own = openDir(root, dir), true
		}
		if f := createUnnamed(folder, perm); f != nil {
			return &Pending{f: f, root: root, dir: dir, name: name, folder: folder, ownFolder: own}, nil
		}
		if own && folder != nil {
			folder.Close()
		}
	}
	return CreateIn(root, name, perm)
}

// openDir opens dir ("" or ending in a separator), a folder inside root;
// nil where it cannot (the named temporary then tells why).
func openDir(root *os.Root, dir string) *os.File {
	if dir == "" {
		dir = "."
	}
	d, err := root.Open(dir)
	if err != nil {
		return nil
	}
	return d
}

// nameUnnamed puts a file that has no name yet in place where nothing is
// at its target, with one link (placed). Where a regular file is there, it
// gives it a temporary name instead, for the caller to place it as it
// places a named one; anything else there is refused, as CreateIn refuses
// it. Where linking does not work here, the file is copied into a named
// temporary file, and the files after it are named from the start.
func (p *Pending) nameUnnamed() (placed bool, err error) {
	dir, base := filepath.Split(p.name)
	err = linkAt(p.f, p.folder, base)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		noUnnamed.Store(true)
		return false, p.copyNamed()
	}
	if err := refuseNonRegular(p.root, p.name); err != nil {
		return false, err
	}
	for range 10000 {
		tmp := tempFor(base)
		err = linkAt(p.f, p.folder, tmp)
		if !errors.Is(err, fs.ErrExist) {
			if err == nil {
				p.tmp = dir + tmp
			}
			return false, err
		}
	}
	return false, fmt.Errorf("making a temporary file beside %s: %w", p.name, fs.ErrExist)
}

// copyNamed copies the unnamed file into a named temporary file
// (CreateIn), which takes its place in p.
func (p *Pending) copyNamed() error {
	named, err := CreateIn(p.root, p.name, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(named.f, io.NewSectionReader(p.f, 0, 1<<62))
	if err == nil {
		err = named.setModeOf(p.f)
	}
	if err != nil {
		named.Discard()
		return err
	}
	p.f.Close()
	p.closeFolder()
	p.f, p.tmp = named.f, named.tmp
	return nil
}

// setModeOf gives p's file the mode of f.
func (p *Pending) setModeOf(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return p.f.Chmod(fi.Mode().Perm())
}

// refuseNonRegular is the error for a target that exists and is not a
// regular file; nil for a regular file or nothing.
func refuseNonRegular(root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	switch {
	case err != nil || fi.Mode().IsRegular():
		return nil
	case fi.IsDir():
		return fmt.Errorf("%w (%w)", ErrNotRegular, syscall.EISDIR)
	}
	return ErrNotRegular
}

// Write writes to the temporary file.
func (p *Pending) Write(b []byte) (int, error) { return p.f.Write(b) }

// ReadFrom writes what r gives to the temporary file, with the file's own
// fast paths.
func (p *Pending) ReadFrom(r io.Reader) (int64, error) { return p.f.ReadFrom(r) }

// Commit renames the temporary file over the target, syncing the file
// before and the folder after when durable is true. It returns the file's
// stat taken through the still open file once it is in place (nil if that
// failed): a later replacement of the target by another writer is a
// different file. A failure to rename leaves the target as it was; the
// temporary file is gone either way.
func (p *Pending) Commit(durable bool) (fs.FileInfo, error) {
	return p.finish(p.root.Rename, durable)
}

// link links the temporary file at the target, which fails where anything
// is there, and removes the temporary's name.
func (p *Pending) link(durable bool) (fs.FileInfo, error) {
	fi, err := p.finish(p.root.Link, durable)
	if p.tmp != "" {
		p.root.Remove(p.tmp)
	}
	return fi, err
}

func (p *Pending) finish(place func(tmp, name string) error, durable bool) (fs.FileInfo, error) {
	var err error
	if durable {
		err = p.f.Sync()
	}
	placed := false
	if err == nil && p.tmp == "" {
		placed, err = p.nameUnnamed()
	}
	if err == nil && !placed {
		err = place(p.tmp, p.name)
	}
	if err != nil {
		p.Discard()
		return nil, err
	}
	var fi fs.FileInfo
	if !p.noStat {
		var statErr error
		if fi, statErr = p.f.Stat(); statErr != nil { // after placing it, which may move its ctime
			fi = nil
		}
	}
	p.closed = true
	err = p.f.Close()
	p.closeFolder()
	if err == nil && durable {
		err = syncDir(p.root, p.dir)
	}
	return fi, err
}

// closeFolder closes the folder's handle if it was opened for this file.
func (p *Pending) closeFolder() {
	if p.ownFolder && p.folder != nil {
		p.folder.Close()
	}
	p.folder = nil
}

// Discard closes and removes the temporary file, unless it was put in
// place; it may be called any number of times.
func (p *Pending) Discard() {
	if p.closed {
		return
	}
	p.closed = true
	p.f.Close()
	p.closeFolder()
	if p.tmp != "" {
		p.root.Remove(p.tmp)
	}
}

// write writes what r gives to path through a Pending in its folder.
func write(path string, r io.Reader, perm fs.FileMode, place func(*Pending, bool) (fs.FileInfo, error), durable bool, accept func(int64) error) (n int64, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return 0, err
	}
	defer root.Close()
	return writeIn(root, nil, filepath.Base(path), r, perm, place, durable, accept)
}

// writeIn writes what r gives to name inside root through a Pending; self,
// when not nil, is root's own folder.
func writeIn(root *os.Root, self *os.File, name string, r io.Reader, perm fs.FileMode, place func(*Pending, bool) (fs.FileInfo, error), durable bool, accept func(int64) error) (int64, error) {
	p, err := startIn(root, self, name, perm)
	if err != nil {
		return 0, err
	}
	p.noStat = true
	defer p.Discard()
	n, err := io.Copy(p, r)
	if err == nil && accept != nil {
		err = accept(n)
	}
	if err == nil {
		err = p.setMode(perm)
	}
	if err != nil {
		return n, err
	}
	_, err = place(p, durable)
	return n, err
}

// setMode gives the temporary file the mode asked for, whatever the umask:
// a chmod only where the umask took a bit away, since a chmod dirties the
// inode (a journal write on ext4) and a stat of the open file does not.
func (p *Pending) setMode(perm fs.FileMode) error { return setMode(p.f, perm) }

func setMode(f *os.File, perm fs.FileMode) error {
	if fi, err := f.Stat(); err == nil && perm == perm.Perm() && fi.Mode().Perm() == perm {
		return nil
	}
	return f.Chmod(perm)
}

// syncDir makes a folder's entries last.
func syncDir(root *os.Root, dir string) error {
	if dir == "" {
		dir = "."
	}
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
