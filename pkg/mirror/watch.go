package mirror

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hoster-dev/hoster/pkg/api"
)

// generated are the files hoster gen writes: changes to them are the
// generator's own and never start another round.
var generated = map[string]bool{api.ServerModule: true, api.ServerModule + ".map": true, api.ClientLibrary: true, "hoster.client.d.ts": true}

// Watch calls changed whenever something under root changes and then stays
// quiet for debounce, until ctx ends. Hidden entries, node_modules and the
// generated files are ignored; folders created later are watched too.
func Watch(ctx context.Context, root string, debounce time.Duration, changed func()) error {
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
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-w.Errors:
			return fmt.Errorf("watching %s: %w", root, err)
		case ev := <-w.Events:
			name := filepath.Base(ev.Name)
			if ignored(name) || generated[name] {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					add(ev.Name)
				}
			}
			timer.Reset(debounce)
		case <-timer.C:
			changed()
		}
	}
}

func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules"
}
