package mirror

// Op is one transfer or deletion, as reported.
type Op struct {
	// Kind is "upload", "delete" or "fetch".
	Kind string
	// Path is the path it concerns, relative to its tree.
	Path string
	// Size is the bytes it moves (0 for a delete).
	Size int64
}

// Reporter is told what a run does, as it does it. Calls may come from
// several goroutines at once.
type Reporter interface {
	// Begin announces a phase: how many operations and bytes it holds.
	Begin(kind string, ops int, bytes int64)
	// Done reports one finished operation, failed when err is not nil.
	Done(op Op, err error)
}

// Failure is one operation that failed, for the final summary.
type Failure struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Error string `json:"error"`
	// noSpace: the server's disk was full (outOfSpace), so the failure
	// may go once the deletes have freed space.
	noSpace bool
}

// NopReporter reports nothing.
type NopReporter struct{}

func (NopReporter) Begin(string, int, int64) {}
func (NopReporter) Done(Op, error)           {}
