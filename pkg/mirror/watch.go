package mirror

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
)

// generated are the files hoster gen writes: changes to them are the
// generator's own and never start another round.
var generated = map[string]bool{api.ServerModule: true, api.ServerModuleMap: true, api.ClientLibrary: true, api.ClientTypes: true}

// Watch calls ready (which may be nil) once root is watched, then changed
// whenever something under root changes and then stays quiet for debounce,
// until ctx ends. Hidden entries, node_modules and the generated files are
// ignored; folders created later are watched too.
func Watch(ctx context.Context, root string, debounce time.Duration, ready, changed func()) error {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return watch(ctx, root, changed, realQuiet{t, debounce}, watchHooks{ready: ready})
}

// quietClock is the debounce: restart begins a quiet period, fired delivers
// once one has passed with no restart.
type quietClock interface {
	restart()
	fired() <-chan time.Time
}

type realQuiet struct {
	t *time.Timer
	d time.Duration
}

func (q realQuiet) restart()                { q.t.Reset(q.d) }
func (q realQuiet) fired() <-chan time.Time { return q.t.C }

// watchHooks let a test see the watcher's steps; nil ones are skipped.
type watchHooks struct {
	ready func()                         // root is watched
	event func(name string, counts bool) // an event was handled (a new folder already watched)
}

func watch(ctx context.Context, root string, changed func(), quiet quietClock, hooks watchHooks) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", root, err)
	}
	defer w.Close()
	add := func(dir string) error {
		return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if p != dir && ignored(d.Name()) {
				return filepath.SkipDir
			}
			return w.Add(p)
		})
	}
	if err := add(root); err != nil {
		return fmt.Errorf("watching %s: %w", root, err)
	}
	if hooks.ready != nil {
		hooks.ready()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-w.Errors:
			return fmt.Errorf("watching %s: %w", root, err)
		case ev := <-w.Events:
			name := filepath.Base(ev.Name)
			counts := !ignored(name) && !generated[name]
			if counts {
				if ev.Has(fsnotify.Create) {
					if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
						add(ev.Name)
					}
				}
				quiet.restart()
			}
			if hooks.event != nil {
				hooks.event(name, counts)
			}
		case <-quiet.fired():
			changed()
		}
	}
}

// ignored: the walk skips these too (hidden entries, node_modules, hoster-env.d.ts).
func ignored(name string) bool { return game.IsSkipped(name) }
