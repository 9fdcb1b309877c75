package game

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// The definition folders at the top of a game folder: its hooks and
// schemas, the server's alone (hoster gen reads them; the pages never serve
// them).
const (
	InstanceFolder = "hoster-instance" // the instance's hooks
	PlayerFolder   = "hoster-player"   // the player's hooks and fields.json
	EntitiesFolder = "hoster-entities" // a folder per entity type: its hooks and fields.json
	CommandsFolder = "hoster-commands" // a folder per command: run and args.json
)

// The schema files of the definition folders.
const (
	FieldsFile = "fields.json" // in PlayerFolder and each entity type's folder
	ArgsFile   = "args.json"   // in each command's folder
)

var definitionFolders = []string{InstanceFolder, PlayerFolder, EntitiesFolder, CommandsFolder}

// IsDefinitionFolder reports whether name, at the top of a game folder, is
// one of the definition folders (hoster-instance/, hoster-player/,
// hoster-entities/, hoster-commands/).
func IsDefinitionFolder(name string) bool { return slices.Contains(definitionFolders, name) }

// checkPublic validates the entries of the "public" setting: each a path
// relative to the game folder, slash-separated, that may use the wildcards
// of [path.Match] within a segment (*, ?, [...]), and that may end in "/" to
// name everything below a folder.
func checkPublic(entries []string) []error {
	var errs []error
	for _, e := range entries {
		if err := checkPublicEntry(e); err != nil {
			errs = append(errs, fmt.Errorf("public: %q: %w", e, err))
		}
	}
	return errs
}

func checkPublicEntry(e string) error {
	p := strings.TrimSuffix(e, "/")
	if p == "" {
		return errors.New(`want a path inside the game folder, such as "lib/shared.js" or "shared/"`)
	}
	if strings.ContainsAny(p, "\\\x00") || strings.HasPrefix(p, "/") {
		return errors.New(`want a path relative to the game folder, with "/" between names, such as "lib/shared.js"`)
	}
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." || s == ".." {
			return errors.New(`want a clean path inside the game folder: no empty, "." or ".." part`)
		}
	}
	if _, err := path.Match(p, ""); err != nil {
		return errors.New("a malformed pattern (wildcards are *, ? and [...] within one name)")
	}
	return nil
}

// MadePublic reports whether the "public" setting names file (a clean path
// relative to the game folder): an entry matches it whole, or, ending in
// "/", matches a folder above it.
func (c Config) MadePublic(file string) bool {
	for _, e := range c.Public {
		if p, folder := strings.CutSuffix(e, "/"); folder {
			n := strings.Count(p, "/") + 1
			segs := strings.Split(file, "/")
			if len(segs) > n {
				if ok, _ := path.Match(p, strings.Join(segs[:n], "/")); ok {
					return true
				}
			}
		} else if ok, _ := path.Match(e, file); ok {
			return true
		}
	}
	return false
}

// BundledModule matches the comment esbuild writes before each module it
// bundles, on a line of its own: submatch 1 is the module's path relative
// to the folder it bundled in.
var BundledModule = regexp.MustCompile(`(?m)^[ \t]*// (\S+\.(?:[cm]?[jt]sx?|json))\r?$`)

// ServerSources lists the files of a game folder that went into its
// hoster.server.js (module), as clean slash-separated paths relative to the
// folder, sorted: the "sources" of its source map (sourceMap, the pushed
// hoster.server.js.map, whose sources esbuild writes relative to the map,
// at the top of the folder), or, without a readable map, the paths esbuild
// writes as a comment before each module it bundles. Sources outside the
// folder, and the generator's own synthesised entry, may be among them;
// none is invented.
func ServerSources(module, sourceMap []byte) []string {
	var m struct {
		SourceRoot string   `json:"sourceRoot"`
		Sources    []string `json:"sources"`
	}
	var names []string
	if len(sourceMap) > 0 && json.Unmarshal(sourceMap, &m) == nil && m.Sources != nil {
		for _, s := range m.Sources {
			names = append(names, path.Join(m.SourceRoot, s))
		}
	} else {
		for _, sub := range BundledModule.FindAllSubmatch(module, -1) {
			names = append(names, string(sub[1]))
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		n = path.Clean(strings.ReplaceAll(n, "\\", "/"))
		if n == "." || n == ".." || strings.HasPrefix(n, "../") || strings.HasPrefix(n, "/") || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
