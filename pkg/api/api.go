// Package api is the HTTP contract between hoster and hoster-server: the wire
// types of every resource with their exact JSON names, the route paths, the
// API version, and the limits the contract fixes. Server and client both import
// it, so the two sides cannot drift apart.
//
// The contract exists in two published variants. Variant 1 answers sync
// failures with real HTTP status codes and serves the game-log routes; variant
// 2 answers every authenticated sync call with 200 and an ok flag, and has no
// game-log routes. Types that differ between the variants say so.
package api

import "fmt"

// Version is the API version this build speaks: the value of [VersionInfo.API]
// a server answers, and the N of the tools prefix /api/vN/.
const Version = 1

// Variant selects one of the two published forms of the contract.
type Variant int

const (
	// Variant1 answers sync failures with HTTP status codes and serves game logs.
	Variant1 Variant = 1
	// Variant2 answers authenticated sync calls with 200 {ok:false} on failure
	// and has no game-log routes.
	Variant2 Variant = 2
)

// ParseVariant reads "1" or "2".
func ParseVariant(s string) (Variant, error) {
	switch s {
	case "1":
		return Variant1, nil
	case "2":
		return Variant2, nil
	}
	return 0, fmt.Errorf("parsing variant: %q is not 1 or 2", s)
}

// Route paths. The sync routes sit directly under /api/; the tools routes under
// /api/v<Version>/ (see [ToolsPrefix]).
const (
	PathVersion = "/api/version"
	PathTree    = "/api/tree"
	PathFile    = "/api/file"
	// PathFiles is hoster's own extension, not the contract's: PUT a batch
	// of files as one tar stream. A server offers it with
	// VersionInfo.BatchUpload, and bounds it there; a client uses it only
	// when offered, and within the bounds.
	PathFiles = "/api/files"

	// Tools routes, relative to ToolsPrefix(Version).
	PathLogs         = "logs"
	PathLogsFile     = "logs/file"
	PathStats        = "stats"
	PathStatsFile    = "stats/file"
	PathStatsNow     = "stats/now"
	PathGameLogs     = "gamelogs"
	PathGameLogsFile = "gamelogs/file"
	// PathFilesBatch is hoster's own extension, not the contract's: POST a
	// FetchRequest, get its files whole in one tar stream. A server offers
	// it with VersionInfo.BatchDownload, and bounds it there; a client uses
	// it only when offered, and within the bound.
	PathFilesBatch = "files"
)

// ToolsPrefix is the path prefix of the read-only tools API of version v,
// "/api/v1/" for v = 1.
func ToolsPrefix(v int) string { return fmt.Sprintf("/api/v%d/", v) }

// ToolsPath is the full path of a tools route, e.g. ToolsPath(1, PathLogs) =
// "/api/v1/logs".
func ToolsPath(v int, route string) string { return ToolsPrefix(v) + route }

// FetchMaxFiles bounds the files of one batch download (PathFilesBatch),
// hoster's extension: hoster-server refuses a longer request as a whole,
// and says this bound in VersionInfo.BatchDownloadMaxFiles.
const FetchMaxFiles = 1000

// Query parameter names.
const (
	QueryPath  = "path"  // PUT/DELETE /api/file, GET gamelogs/file
	QueryWhich = "which" // GET logs/file: "active" or a rotated ts
	QueryName  = "name"  // GET stats/file
	// QueryTree ("tree=1") asks PUT /api/files, the extension, to answer
	// with the tree as it stands after the batch (BatchResult.Tree).
	QueryTree = "tree"
)

// WhichActive is the value of the which query that names the live access log.
const WhichActive = "active"

// Limits and constants fixed by the contract.
const (
	StatsIntervalMS       = 15000 // health sampling interval in ms
	StatsRetentionDays    = 60    // stats day-files older than this are pruned
	GameLogRetentionDays  = 30    // game-log hour files older than this are pruned
	TokenBytes            = 32    // random bytes in a token
	IDBytes               = 6     // random bytes in a process or instance id
	AccessLogRollSizeMiB  = 64    // access-log roll_size
	AccessLogRollKeep     = 50    // access-log roll_keep
	AccessLogRollKeepForH = 2160  // access-log roll_keep_for, hours
)

// Layout under the roots, relative to {hosting_root} or {logs_root}.
const (
	GamesDir       = "hoster-games" // {hosting_root}/hoster-games/<domain>/<game>/
	TokenFile      = "hoster-token" // {hosting_root}/hoster-token
	WebLogsDir     = "web-logs"     // {logs_root}/web-logs/access.log
	AccessLogName  = "access.log"   // the active access log
	ServerLogsDir  = "server-logs"  // {logs_root}/server-logs/<type>-YYYY-MM-DD.log
	GameLogsDir    = "hoster-logs"  // {logs_root}/hoster-logs/<domain>/<game>/hoster-processes/<process>/
	ProcessesDir   = "hoster-processes"
	GameConfigFile = "hoster-game.json"
	ServerModule   = "hoster.server.js"
	// ServerModuleMap is ServerModule's source map, pushed beside it so
	// that errors name the author's file:line; never served.
	ServerModuleMap = ServerModule + ".map"
	ClientLibrary   = "hoster.client.js"
	ClientTypes     = "hoster.client.d.ts" // the typings of ClientLibrary, generated beside it
)
