package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A folder that is not there yet can be made whole instead of a file at a
// time: [StageFolder] writes its files plainly (one create each, no
// temporary file and no link or rename per file) into a hidden folder
// beside it, named as a temporary file is ("." + name + ".tmp-" + digits,
// which [TargetOf] reads back), and [Folder.Place] renames that folder to
// its name once they are all there. A reader, or a crash, sees no folder
// or the folder with every file whole: a failed file is removed before
// Copy returns, and a crash leaves only the hidden folder, which the next
// StageFolder of the same folder removes (unless the run that made it
// still writes there: on Linux it holds a lock on it).

// stage is a Folder's hidden folder, while it is not yet placed; the
// Folder's own handle of it (self) holds its lock (tryLock) until closed.
type stage struct {
	path string // the folder's own path
	tmp  string // the hidden folder's path, beside it
}

// StageFolder starts the folder at path, which must not exist, as a
// hidden folder beside it that [Folder.Place] puts in place; until then,
// [Folder.Copy] writes each file plainly, and after it as [OpenFolder]'s
// folder does. The hidden folders an earlier run left beside it are
// removed first (removeStages). path's parent must exist. Close the folder when done:
// one not placed is removed then.
func StageFolder(path string) (*Folder, error) {
	parent, base := filepath.Split(path)
	if parent == "" {
		parent = "."
	}
	removeStages(parent, base)
	for range 10000 {
		tmp := filepath.Join(parent, tempFor(base))
		err := os.Mkdir(tmp, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		f, err := OpenFolder(tmp)
		if err != nil {
			os.Remove(tmp)
			return nil, err
		}
		if f.self == nil {
			f.self, _ = f.root.Open(".") // for copyPlainAt and the lock; nil: through root, unlocked
		}
		if f.self != nil {
			tryLock(f.self)
		}
		f.stage = &stage{path: path, tmp: tmp}
		return f, nil
	}
	return nil, fmt.Errorf("making a hidden folder beside %s: %w", path, fs.ErrExist)
}

// removeStages removes the hidden folders in parent that no running
// StageFolder holds: those a run that was killed left. Where stages are
// locked, that is every one of them, whichever folder it was for (a
// folder a killed run staged may never be staged again: the server
// dropped it); elsewhere only base's, as no lock tells a running run's.
func removeStages(parent, base string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		target, ok := TargetOf(e.Name())
		if !ok || !e.IsDir() || (target != base && !locksStages) {
			continue
		}
		tmp := filepath.Join(parent, e.Name())
		if l := lockStage(tmp); l != nil || !locksStages {
			os.RemoveAll(tmp)
			if l != nil {
				l.Close()
			}
		}
	}
}

// Staged reports whether the folder is a hidden one not yet placed.
func (f *Folder) Staged() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.stage != nil
}

// Place renames the hidden folder of a [StageFolder] to its name; the
// files written after it are written as in any folder. Where something
// took that name meanwhile (another run), each file is moved into that
// folder where it holds none of that name, and the rest removed. It does
// nothing for a folder that is not staged.
func (f *Folder) Place() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stage
	if s == nil {
		return nil
	}
	err := renameNoReplace(s.tmp, s.path)
	if errors.Is(err, fs.ErrExist) {
		err = f.moveInto(s)
	}
	if err != nil {
		return fmt.Errorf("putting %s in place: %w", s.path, err)
	}
	f.stage = nil
	return nil
}

// moveInto moves each file of the stage s into its folder, which exists
// now, leaving any file of the same name there as it is, and then reopens
// the folder there.
func (f *Folder) moveInto(s *stage) error {
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return err
	}
	for _, e := range entries {
		err := renameNoReplace(filepath.Join(s.tmp, e.Name()), filepath.Join(s.path, e.Name()))
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	g, err := OpenFolder(s.path)
	if err != nil {
		return err
	}
	f.closeHandles()
	f.root, f.self = g.root, g.self
	return os.RemoveAll(s.tmp)
}

// discardStage removes a staged folder's hidden folder; f.mu is held.
func (f *Folder) discardStage() {
	if s := f.stage; s != nil {
		os.RemoveAll(s.tmp)
		f.stage = nil
	}
}

// copyPlain writes what r gives to name, inside a staged folder that no
// one sees yet, with no temporary file: the file is removed unless accept
// takes the bytes received. A name in the folder itself is created on
// Linux straight through the folder's handle (copyPlainAt: a create, the
// writes and a close, none of an *os.File's further syscalls); a file's
// mode is looked at only until one shows the umask leaves perm as it is.
func (f *Folder) copyPlain(name string, r io.Reader, perm fs.FileMode, accept func(int64) error) (int64, error) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	if plainAt && f.self != nil && name != "." && name != ".." && !strings.ContainsRune(name, filepath.Separator) {
		return copyPlainAt(f.self, name, r, *buf, perm, accept, &f.exactPerm)
	}
	out, err := f.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return 0, err
	}
	n, err := io.CopyBuffer(writerOnly{out}, r, *buf)
	if err == nil && accept != nil {
		err = accept(n)
	}
	if err == nil {
		err = setMode(out, perm)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.root.Remove(name)
	}
	return n, err
}

// copyBufs are copyPlain's buffers: one a file would be a 32 KiB
// allocation (io.Copy's) for each of a first pull's 4 KiB files.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// writerOnly hides a writer's ReadFrom, so that io.CopyBuffer uses the
// buffer it is given.
type writerOnly struct{ io.Writer }

// renameIfFree renames old to new where nothing is at new, as far as a
// look before the rename can tell.
func renameIfFree(old, new string) error {
	if _, err := os.Lstat(new); err == nil {
		return &os.LinkError{Op: "rename", Old: old, New: new, Err: fs.ErrExist}
	}
	return os.Rename(old, new)
}
