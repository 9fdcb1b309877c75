// Package waitfs lets a test wait for something to appear on disk, woken
// by the file system (inotify, through fsnotify) instead of polling.
package waitfs

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ErrTimeout is returned when the condition did not hold within the guard.
var ErrTimeout = errors.New("waiting on the file system: timed out")

// Until waits until cond holds, checking it again whenever something
// changes in dir, which need not exist yet. It returns ErrTimeout after
// guard, a hang guard rather than a timing.
func Until(dir string, cond func() bool, guard time.Duration) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	expired := time.After(guard)
	for {
		watch(w, dir)
		if cond() {
			return nil
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			return err
		case <-expired:
			return ErrTimeout
		}
	}
}

// watch watches dir, or while it does not exist, the folders on the way
// to it that do. They are added from the top down: a folder is watched
// before its child is looked for, so a child made after the look still
// wakes the watcher (bottom up, a folder made between two looks would be
// missed, and then every change inside it).
func watch(w *fsnotify.Watcher, dir string) {
	path := []string{filepath.Clean(dir)}
	for d := path[0]; ; {
		if _, err := os.Stat(d); err == nil {
			break
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		path, d = append(path, up), up
	}
	for i := len(path) - 1; i >= 0; i-- {
		if w.Add(path[i]) != nil {
			return
		}
	}
}
