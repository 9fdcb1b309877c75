package mirror

import (
	"os"
	"path/filepath"

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

// removeStaleParts removes the temporary files an earlier pull that was cut
// off (killed, or its machine stopped) left in the folders this run writes
// to. Only files of a pull's own naming, for a name a pull writes, are
// removed; a pull running at the same moment into the same folder may lose
// a transfer to this, which it reports, and its next run completes.
func removeStaleParts(list []*fileJob) {
	dirs := map[string]bool{}
	for _, j := range list {
		dirs[filepath.Dir(j.dst)] = true
	}
	for dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // not there yet: nothing stale in it
		}
		for _, e := range entries {
			// A pull's temporary files are pkg/atomicfile's, named after
			// the file they were to become.
			target, ok := atomicfile.TargetOf(e.Name())
			if !ok || !e.Type().IsRegular() || !mirrorName(target) {
				continue
			}
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
