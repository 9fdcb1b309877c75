package mirror

import (
	"github.com/hoster-dev/hoster/pkg/atomicfile"
	"os"
	"path/filepath"
	"regexp"
)

// mirrorName matches the names a pull writes: the access logs, the health
// day-files and the game-log hour files.
var mirrorName = regexp.MustCompile(`^(access(-\d+)?\.log|(cpu|memory|disk|diskio|netio)-\d{4}-\d{2}-\d{2}\.log|(stats|snapshot)-\d{4}-\d{2}-\d{2}-\d{2}\.jsonl)$`)

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
			if !ok || !e.Type().IsRegular() || !mirrorName.MatchString(target) {
				continue
			}
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
