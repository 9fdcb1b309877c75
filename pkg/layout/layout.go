// Package layout is the contract's layout on disk, each rule written once for
// every side that applies it:
//
//   - which folders of a sites tree, or of the server's games mirror, are
//     games ([Games], [IsGame]): the generator, sync's walk, hoster dev and
//     the runtime all find games with it, so they cannot disagree;
//   - the names of the health day-files under {logs_root}/server-logs
//     ([StatsFileName], [ParseStatsFileName]), written by the sampler, listed
//     and served by the tools API and pulled by the client;
//   - the names and paths of the game-log hour files under
//     {logs_root}/hoster-logs ([GameLogPath], [ParseGameLogFileName],
//     [IsGameLogPath]), written by the runtime, listed and served by the
//     tools API, pruned by the sampler and pulled by the client;
//   - the client's name for a rotated access log ([RotatedLogName]).
//
// The folder and file names themselves are pkg/api's constants; the rules of
// one name (domain, game, reserved, skipped) are pkg/game's.
package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
)

// Games lists the games under root, a sites tree or the games mirror, as
// "<domain>/<game>", sorted: by the contract's structure rules, a folder
// named by [game.IsGameName] inside a folder named by [game.IsDomainName],
// that [IsGame]. A symbolic link to a folder is not followed, as sync's walk
// follows none. A domain folder that cannot be read is an error, returned
// with the games of the others: a sync must stop (the games it could not see
// are not gone), the runtime loads what it can.
func Games(root string) ([]string, error) {
	domains, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("finding games: %w", err)
	}
	var games []string
	var errs []error
	for _, d := range domains {
		if !d.IsDir() || !game.IsDomainName(d.Name()) {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, d.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since root was read: no game
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("finding games: %w", err))
			continue
		}
		for _, g := range entries {
			if g.IsDir() && game.IsGameName(g.Name()) && IsGame(filepath.Join(root, d.Name(), g.Name())) {
				games = append(games, d.Name()+"/"+g.Name())
			}
		}
	}
	sort.Strings(games)
	return games, errors.Join(errs...)
}

// IsGame reports whether the folder dir holds a game's configuration,
// hoster-game.json, as a regular file of its own. A symbolic link in its
// place makes no game: a sync sends no symbolic links (nor does the server
// keep any), so a game whose configuration is one could never reach the
// server; hoster gen, hoster sync and the runtime all pass it over alike.
func IsGame(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, api.GameConfigFile))
	return err == nil && fi.Mode().IsRegular()
}

// StatsFileName is the name of the health day-file of the statistic type
// typ (one of [api.StatsTypes]) for the UTC date of t: <type>-YYYY-MM-DD.log.
func StatsFileName(typ string, t time.Time) string {
	return typ + "-" + t.UTC().Format(time.DateOnly) + ".log"
}

// ParseStatsFileName reads a health day-file name made by [StatsFileName],
// exactly: a type of [api.StatsTypes] and a real date. It returns the type
// and the UTC date.
func ParseStatsFileName(name string) (typ string, day time.Time, ok bool) {
	rest, ok := strings.CutSuffix(name, ".log")
	if !ok || len(rest) < len("-2006-01-02") {
		return "", time.Time{}, false
	}
	typ, date := rest[:len(rest)-len("-2006-01-02")], rest[len(rest)-len("2006-01-02"):]
	day, ok = parseDigits(time.DateOnly, date)
	if !ok || rest[len(typ)] != '-' || !slices.Contains(api.StatsTypes, typ) {
		return "", time.Time{}, false
	}
	return typ, day, true
}

// The families of game-log hour files: one file of each per game, process
// and UTC hour.
const (
	// GameLogStats holds one [api.GameStatsLine] per instance per interval.
	GameLogStats = "stats"
	// GameLogSnapshot holds one [api.GameSnapshotLine] per live instance,
	// taken on the hour.
	GameLogSnapshot = "snapshot"
)

// hourLayout is a game-log hour file's time in its name.
const hourLayout = "2006-01-02-15"

// GameLogFileName is the name of the game-log hour file of family (a
// GameLog constant) for the UTC hour of t: <family>-YYYY-MM-DD-HH.jsonl.
func GameLogFileName(family string, t time.Time) string {
	return family + "-" + t.UTC().Format(hourLayout) + ".jsonl"
}

// ParseGameLogFileName reads a game-log hour file name made by
// [GameLogFileName], exactly: a family and a real hour. It returns the
// family and the UTC hour.
func ParseGameLogFileName(name string) (family string, hour time.Time, ok bool) {
	rest, ok := strings.CutSuffix(name, ".jsonl")
	if !ok {
		return "", time.Time{}, false
	}
	family, stamp, _ := strings.Cut(rest, "-")
	if family != GameLogStats && family != GameLogSnapshot {
		return "", time.Time{}, false
	}
	hour, ok = parseDigits(hourLayout, stamp)
	return family, hour, ok
}

// GameLogPath is the path of the game-log hour file of family for the UTC
// hour of t, written by the process process for the game domain/name,
// relative to {logs_root}/hoster-logs and slash-separated:
// <domain>/<game>/hoster-processes/<process>/<family>-YYYY-MM-DD-HH.jsonl.
func GameLogPath(domain, name, process, family string, t time.Time) string {
	return domain + "/" + name + "/" + api.ProcessesDir + "/" + process + "/" + GameLogFileName(family, t)
}

// IsGameLogPath reports whether p is a game-log file's path as
// [GameLogPath] makes it and the tools API lists it, exactly:
// <domain>/<game>/hoster-processes/<process>/<file>, with a domain and a game
// name by pkg/game's rules, a process id of 6 bytes in lowercase hex, and a
// file name of [ParseGameLogFileName]. Such a path is clean and stays inside
// the folder it is relative to.
func IsGameLogPath(p string) bool {
	folder, name, ok := cutLast(p, "/")
	if !ok || !IsGameLogFolder(folder) {
		return false
	}
	_, _, ok = ParseGameLogFileName(name)
	return ok
}

// IsGameLogFolder reports whether p is the folder of game-log files of
// [IsGameLogPath]: <domain>/<game>/hoster-processes/<process>, by the same
// rules; a listing checks it once for all the files of a folder.
func IsGameLogFolder(p string) bool {
	segs := strings.Split(p, "/")
	if len(segs) != 4 || !game.IsDomainName(segs[0]) || !game.IsGameName(segs[1]) ||
		segs[2] != api.ProcessesDir || !isProcessID(segs[3]) {
		return false
	}
	for _, s := range segs[:2] {
		if strings.ContainsAny(s, "\\\x00") {
			return false
		}
	}
	return true
}

// cutLast slices s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// isProcessID reports whether s is a process id: [api.IDBytes] random bytes
// in lowercase hex.
func isProcessID(s string) bool {
	if len(s) != 2*api.IDBytes {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RotatedLogName is the client's name for its copy of the rotated access log
// keyed ts (its [api.RotatedLog.TS]): access-<ts>.log.
func RotatedLogName(ts int64) string { return "access-" + strconv.FormatInt(ts, 10) + ".log" }

// IsRotatedLogName reports whether name is one that [RotatedLogName] makes.
func IsRotatedLogName(name string) bool {
	digits, ok := strings.CutPrefix(name, "access-")
	digits, ok2 := strings.CutSuffix(digits, ".log")
	if !ok || !ok2 || digits == "" {
		return false
	}
	ts, err := strconv.ParseInt(digits, 10, 64)
	return err == nil && RotatedLogName(ts) == name
}

// parseDigits parses s by layout, a time layout of digits and '-' only, when
// s is exactly as long and has a digit wherever the layout has one (no sign,
// no space), in UTC.
func parseDigits(layout, s string) (time.Time, bool) {
	if len(s) != len(layout) {
		return time.Time{}, false
	}
	for i := range len(s) {
		if (layout[i] == '-') != (s[i] == '-') || s[i] != '-' && (s[i] < '0' || s[i] > '9') {
			return time.Time{}, false
		}
	}
	t, err := time.Parse(layout, s)
	return t, err == nil
}
