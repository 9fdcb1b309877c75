package pages

import (
	"path"
	"strings"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/hoster-dev/hoster/pkg/store"
)

// private are the names at the top of a game folder that are the game's
// machinery, never its public files: the configuration, the server module
// and its source map (the definition folders of the hooks are
// [game.IsDefinitionFolder]).
var private = map[string]bool{
	api.GameConfigFile:  true,
	api.ServerModule:    true,
	api.ServerModuleMap: true,
}

// Public reports whether file, a path relative to a game folder, may be
// served by its name alone: a clean relative path (no "", "." or ".."
// segment, no backslash or NUL), no segment hidden or starting with "_", not
// the game's machinery (hoster-game.json, hoster.server.js and its map,
// hoster-instance/, hoster-player/, hoster-entities/, hoster-commands/), and
// not a TypeScript project or declaration file (tsconfig.json,
// tsconfig.*.json, *.d.ts), which are for editors and tsc, never for a page.
// What went into hoster.server.js is kept private besides, by the game's
// own module: see [Files.Serve].
func Public(file string) bool {
	segs, err := store.CleanPath(file)
	if err != nil || private[segs[0]] || game.IsDefinitionFolder(segs[0]) || tooling(segs[len(segs)-1]) {
		return false
	}
	for _, s := range segs {
		if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "_") {
			return false
		}
	}
	return true
}

// tooling reports whether a file name is a TypeScript project or
// declaration file, compared without regard to case (a case-insensitive
// disk would open it under any spelling).
func tooling(name string) bool {
	name = strings.ToLower(name)
	if name == "tsconfig.json" || strings.HasPrefix(name, "tsconfig.") && strings.HasSuffix(name, ".json") {
		return true
	}
	for _, ext := range []string{".d.ts", ".d.mts", ".d.cts"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// contentTypes are the types of what games are made of. Other names get
// application/octet-stream; with nosniff, a browser does not guess.
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".htm":   "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".json":  "application/json",
	".map":   "application/json",
	".txt":   "text/plain; charset=utf-8",
	".md":    "text/markdown; charset=utf-8",
	".csv":   "text/csv; charset=utf-8",
	".xml":   "application/xml",
	".wasm":  "application/wasm",
	".png":   "image/png",
	".jpg":   "image/jpeg",
	".jpeg":  "image/jpeg",
	".gif":   "image/gif",
	".webp":  "image/webp",
	".avif":  "image/avif",
	".svg":   "image/svg+xml",
	".ico":   "image/vnd.microsoft.icon",
	".bmp":   "image/bmp",
	".ogg":   "audio/ogg",
	".oga":   "audio/ogg",
	".opus":  "audio/ogg",
	".mp3":   "audio/mpeg",
	".wav":   "audio/wav",
	".m4a":   "audio/mp4",
	".flac":  "audio/flac",
	".mp4":   "video/mp4",
	".webm":  "video/webm",
	".ogv":   "video/ogg",
	".woff2": "font/woff2",
	".woff":  "font/woff",
	".ttf":   "font/ttf",
	".otf":   "font/otf",
	".glb":   "model/gltf-binary",
	".gltf":  "model/gltf+json",
	".pdf":   "application/pdf",
	".zip":   "application/zip",
	".gz":    "application/gzip",
	".bin":   "application/octet-stream",
}

// ContentType is the Content-Type of a file by its extension (case
// ignored): a fixed table, so that every machine serves the same types.
func ContentType(file string) string {
	if t, ok := contentTypes[strings.ToLower(path.Ext(file))]; ok {
		return t
	}
	return "application/octet-stream"
}
