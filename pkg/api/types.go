package api

// VersionInfo is the body of GET /api/version, the only route that needs no
// token.
type VersionInfo struct {
	// API is the server's API/protocol version.
	API int `json:"api"`
	// BatchUpload is hoster-server's extension beyond the contract (absent
	// from other servers' answers): PUT PathFiles takes many files in one
	// request, so a push across a long round trip does not pay one per file.
	BatchUpload bool `json:"batchUpload,omitempty"`
	// BatchMaxFiles, BatchMaxBytes and BatchMaxNameBytes bound one batch
	// upload: its number of files, the length of its tar stream (headers,
	// contents and padding, as its Content-Length), and the length of its
	// file names added up. A batch over one of them is refused as a whole.
	// 0 (absent: a server from before the bounds) is no bound the server
	// tells; a client then sends the batches it would anyway.
	BatchMaxFiles     int   `json:"batchMaxFiles,omitempty"`
	BatchMaxBytes     int64 `json:"batchMaxBytes,omitempty"`
	BatchMaxNameBytes int64 `json:"batchMaxNameBytes,omitempty"`
	// BatchDownload is hoster-server's other extension (absent from other
	// servers' answers): POST ToolsPath(PathFilesBatch) sends many of the
	// tools routes' files whole in one answer, so a pull across a long
	// round trip does not pay one per file. BatchDownloadMaxFiles bounds
	// the files of one request; a request over it is refused as a whole.
	BatchDownload         bool `json:"batchDownload,omitempty"`
	BatchDownloadMaxFiles int  `json:"batchDownloadMaxFiles,omitempty"`
}

// BatchResult is the body of a PUT /api/files answer (the batch upload
// extension): one entry per file of the batch, in its order.
type BatchResult struct {
	Files []BatchFileResult `json:"files"`
	// Tree, when the batch asked for it (QueryTree), is the server's tree
	// as it stands after the batch was written: the check after a sync
	// then needs no request of its own.
	Tree *Tree `json:"tree,omitempty"`
}

// BatchFileResult is how one file of a batch went.
type BatchFileResult struct {
	// Path is the file's path, as in the batch.
	Path string `json:"path"`
	// Size is the number of bytes written on disk.
	Size int64 `json:"size"`
	// SHA256 is the lowercase hex sha256 of the bytes written, as the
	// tree will show them; absent when the file was not written.
	SHA256 string `json:"sha256,omitempty"`
	// Error, when present, is why the file was not written (for a path
	// outside the games root: "invalid path", in both variants).
	Error string `json:"error,omitempty"`
	// Cause, when present, says why machine-readably (see [CauseNoSpace]).
	Cause string `json:"cause,omitempty"`
}

// Tree is the body of GET /api/tree: file paths relative to the games root
// (<domain>/<game>/<file path>, slash-separated) mapped to the lowercase hex
// sha256 of the file's bytes. An empty games root is {}.
type Tree map[string]string

// WriteResult is the body of a PUT /api/file answer.
type WriteResult struct {
	// Size is the number of bytes written on disk.
	Size int64 `json:"size"`
	// OK is variant 2 only: true on success, false when the write failed.
	OK *bool `json:"ok,omitempty"`
	// Error is variant 2 only, present only when OK is false.
	Error string `json:"error,omitempty"`
	// Cause is variant 2's machine-readable cause beside Error, when the
	// server tells one (see [CauseNoSpace]).
	Cause string `json:"cause,omitempty"`
}

// DeleteResult is the body of a DELETE /api/file answer. Variant 1 sets
// Deleted, variant 2 sets OK; each is true once the path is gone or was
// already absent.
type DeleteResult struct {
	// Deleted is variant 1's flag.
	Deleted *bool `json:"deleted,omitempty"`
	// OK is variant 2's flag.
	OK *bool `json:"ok,omitempty"`
	// Error is variant 2 only, present when OK is false.
	Error string `json:"error,omitempty"`
	// Cause is variant 2's machine-readable cause beside Error, when the
	// server tells one (see [CauseNoSpace]).
	Cause string `json:"cause,omitempty"`
}

// ErrorBody is variant 1's JSON error body: {"error": "invalid path"} with
// status 400 for an unsafe path, {"error": "..."} with 500 (or 413 for an
// upload over the limit) when the write itself fails.
type ErrorBody struct {
	Error string `json:"error"`
	// Cause, when the server tells one, says why machine-readably (see
	// [CauseNoSpace]).
	Cause string `json:"cause,omitempty"`
}

// The machine-readable causes of a failure, in the "cause" field that a
// failure's body may carry beside its "error" text, in both variants
// ([ErrorBody], [WriteResult], [DeleteResult], [BatchFileResult]). It is
// hoster-server's extension of the contract: a client decides on the cause,
// never on the words of error (which are for people and may change); a
// server from before it, or another server, sends none, and an absent cause
// tells nothing. A client meeting a cause it does not know treats it as
// absent.
const (
	// CauseNoSpace: the server's disk is full (ENOSPC), so the write failed
	// for want of space, not for anything in the request; the same request
	// may succeed once space is freed (a sync runs its deletes first, then
	// sends such uploads again).
	CauseNoSpace = "no-space"
)

// ErrInvalidPath is the error text variant 1 answers for an unsafe path.
const ErrInvalidPath = "invalid path"

// Bool returns a pointer to b, for the optional flags of the result types.
func Bool(b bool) *bool { return &b }

// LogListing is the body of GET /api/v1/logs.
type LogListing struct {
	// Active is the live access log, or nil when there is none.
	Active *ActiveLog `json:"active"`
	// Rotated has one entry per rotated file, oldest first.
	Rotated []RotatedLog `json:"rotated"`
}

// ActiveLog describes the live access log.
type ActiveLog struct {
	// Size in bytes.
	Size int64 `json:"size"`
}

// RotatedLog describes one rotated access log. It is keyed by its
// modification time, never by its name: no server file name crosses the wire.
type RotatedLog struct {
	// TS is the rotation time in Unix milliseconds; the client names its copy
	// access-<ts>.log and passes it as which= to logs/file.
	TS int64 `json:"ts"`
	// Size in bytes; a changed size means the client must re-fetch the file.
	Size int64 `json:"size"`
}

// StatsListing is the body of GET /api/v1/stats.
type StatsListing struct {
	// Interval is the number of milliseconds between samples (15000).
	Interval int64 `json:"interval"`
	// Files has one entry per day-file, sorted by name.
	Files []StatsFile `json:"files"`
}

// StatsFile describes one health day-file.
type StatsFile struct {
	// Name is the exact file name, <type>-YYYY-MM-DD.log.
	Name string `json:"name"`
	// Type is one of cpu, memory, disk, diskio, netio.
	Type string `json:"type"`
	// Date is the UTC date YYYY-MM-DD.
	Date string `json:"date"`
	// Size in bytes.
	Size int64 `json:"size"`
}

// The statistic types of the health day-files, one file per type per UTC
// day (pkg/layout names them).
const (
	StatsCPU    = "cpu"
	StatsMemory = "memory"
	StatsDisk   = "disk"
	StatsDiskIO = "diskio"
	StatsNetIO  = "netio"
)

// StatsTypes are the statistic types of the health day-files.
var StatsTypes = []string{StatsCPU, StatsMemory, StatsDisk, StatsDiskIO, StatsNetIO}

// GameLogListing is the body of GET /api/v1/gamelogs (variant 1 only).
type GameLogListing struct {
	// Files has one entry per game-log file across all games and processes,
	// sorted by path.
	Files []GameLogFile `json:"files"`
}

// GameLogFile describes one game-log hour file.
type GameLogFile struct {
	// Path is <domain>/<game>/hoster-processes/<process>/<file>, relative to
	// {logs_root}/hoster-logs; it names the file to request and the client's
	// local copy.
	Path string `json:"path"`
	// Size in bytes.
	Size int64 `json:"size"`
}

// Health is the live health snapshot of GET /api/v1/stats/now. A metric the
// host cannot report is null.
type Health struct {
	// TS is the server's Unix time in seconds.
	TS int64 `json:"ts"`
	// Uptime is the number of seconds since boot.
	Uptime int64 `json:"uptime"`
	// Hostname is the machine's hostname.
	Hostname string `json:"hostname"`
	// Load is the 1, 5 and 15-minute load averages.
	Load [3]float64 `json:"load"`
	// CPU is the model and the cumulative times of each core.
	CPU CPUInfo `json:"cpu"`
	// Memory is in bytes.
	Memory MemoryInfo `json:"memory"`
	// Disk is the filesystem holding /, or nil.
	Disk *DiskInfo `json:"disk"`
	// DiskIO is cumulative, or nil.
	DiskIO *DiskIOInfo `json:"diskIo"`
	// NetIO is cumulative, or nil.
	NetIO *NetIOInfo `json:"netIo"`
}

// CPUInfo is the cpu part of [Health].
type CPUInfo struct {
	Model string    `json:"model"`
	Cores []CPUTime `json:"cores"`
}

// CPUTime is one core's cumulative times in seconds.
type CPUTime struct {
	User float64 `json:"user"`
	Nice float64 `json:"nice"`
	Sys  float64 `json:"sys"`
	Idle float64 `json:"idle"`
	IRQ  float64 `json:"irq"`
}

// MemoryInfo is the memory part of [Health], in bytes.
type MemoryInfo struct {
	Total     uint64 `json:"total"`
	Used      uint64 `json:"used"`
	Available uint64 `json:"available"`
	Free      uint64 `json:"free"`
}

// DiskInfo is the disk part of [Health], in bytes.
type DiskInfo struct {
	Path  string `json:"path"`
	Total uint64 `json:"total"`
	Used  uint64 `json:"used"`
	Free  uint64 `json:"free"`
}

// DiskIOInfo is the cumulative disk IO of [Health].
type DiskIOInfo struct {
	ReadBytes  uint64 `json:"readBytes"`
	WriteBytes uint64 `json:"writeBytes"`
}

// NetIOInfo is the cumulative network IO of [Health].
type NetIOInfo struct {
	RxBytes uint64 `json:"rxBytes"`
	TxBytes uint64 `json:"txBytes"`
}

// SumCount is a {sum, count} pair; the average is Sum/Count.
type SumCount struct {
	Sum   float64 `json:"sum"`
	Count int64   `json:"count"`
}

// DeltaCounts counts the players and entities that appeared in, changed
// within, or left the updates sent to players.
type DeltaCounts struct {
	Appeared int64 `json:"appeared"`
	Changed  int64 `json:"changed"`
	Gone     int64 `json:"gone"`
}

// GameStatsLine is one line of a stats-YYYY-MM-DD-HH.jsonl file: one per
// instance per sample interval.
type GameStatsLine struct {
	// T is Unix seconds at the end of the sample interval.
	T int64 `json:"t"`
	// Process is the id (6-byte hex) of the process that wrote the line.
	Process string `json:"process"`
	// Node is the name of the fleet's node that wrote the line (absent
	// from a server alone), so that a game's lines of every node join.
	// hoster-server's extension.
	Node string `json:"node,omitempty"`
	// Instance is the instance id (6-byte hex).
	Instance string `json:"instance"`
	// Players in the instance at the sample.
	Players int `json:"players"`
	// Entities in the instance at the sample.
	Entities int `json:"entities"`
	// Arrivals is the number of players who joined during the interval.
	Arrivals int64 `json:"arrivals"`
	// Departures is the number of players who left during the interval.
	Departures int64 `json:"departures"`
	// Playtime is the seconds of sessions completed in the interval.
	Playtime SumCount `json:"playtime"`
	// Commands counts each command received in the interval, by name.
	Commands map[string]int64 `json:"commands"`
	// CmdBytes is the bytes of command packets received.
	CmdBytes SumCount `json:"cmdBytes"`
	// UpdBytes is the bytes of update packets sent.
	UpdBytes SumCount `json:"updBytes"`
	// Delta counts appeared, changed and gone in the updates sent.
	Delta DeltaCounts `json:"delta"`
	// Errors counts the hook errors of the interval: hooks that threw
	// (refusals are not errors) and field values of the wrong type.
	Errors int64 `json:"errors"`
	// Ended marks an instance's last line, written when it ends: its
	// interval is partial, from the instance's previous line (or its
	// start) to T, and its players left with it.
	Ended bool `json:"ended,omitempty"`
}

// GameSnapshotLine is one line of a snapshot-YYYY-MM-DD-HH.jsonl file: one per
// live instance, written on the hour.
type GameSnapshotLine struct {
	// T is Unix seconds when taken.
	T int64 `json:"t"`
	// Process is the process id (6-byte hex).
	Process string `json:"process"`
	// Node is the fleet node's name, as in GameStatsLine.
	Node string `json:"node,omitempty"`
	// Instance is the instance id (6-byte hex).
	Instance string `json:"instance"`
	// State is what the game's serialise hook returned (the instance state
	// when there is none); its shape is the game's own.
	State any `json:"state"`
}

// FetchRequest is the body of a POST ToolsPath(PathFilesBatch) request
// (the batch download extension): the files wanted whole, each named as
// its own route names it (Route with its query's value).
type FetchRequest struct {
	Files []FetchFile `json:"files"`
}

// FetchFile is one file of a batch download: Route is PathLogsFile (with
// Which), PathStatsFile (with Name) or PathGameLogsFile (with Path).
type FetchFile struct {
	Route string `json:"route"`
	Which string `json:"which,omitempty"`
	Name  string `json:"name,omitempty"`
	Path  string `json:"path,omitempty"`
}
