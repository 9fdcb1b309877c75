package mirror

import (
	"context"
	"errors"
)

// ErrHeldBack is the failure of a game's code file that was not uploaded
// because another upload of the same game failed.
var ErrHeldBack = errors.New("not uploaded: another file of this game failed, so its config and module were held back " +
	"and the server keeps running its previous code")

// uploadKind: uploads are a sync's items of the transfer engine (engine.go). A
// game's code files (hoster-game.json, hoster.server.js) are held until
// every other upload of the sync has landed, and a game's are not uploaded
// at all when one of its other uploads failed: the server reloads a game
// when its files change, and must never find new code beside half of the
// files it expects. Held to the end, the code files of every game go
// together, in one batch where the remote takes batches: the last request
// of the uploads, which can bring back the server's tree for the check.
var uploadKind = kind[Upload]{
	size: func(u Upload) int64 { return u.Size },
	name: func(u Upload) string { return u.Path },
	held: func(u Upload) (string, bool) { return gameOf(u.Path), lastInGame(u.Path) },
}

// Batch limits, when the remote takes many files in one request: files up
// to batchFileMax are sent together, up to batchFiles and batchBytes a
// request; bigger files go alone.
const (
	batchFileMax = 1 << 20
	batchFiles   = 128
	batchBytes   = 4 << 20
)

// uploadRequests is about how many requests uploads of these sizes take:
// one each, or in batches the big ones alone and the small ones together.
// It is how many connections are worth opening ahead of them.
func uploadRequests(sizes []int64, batch bool) int {
	if !batch {
		return len(sizes)
	}
	n, small := 0, 0
	var smallBytes int64
	for _, s := range sizes {
		if s > batchFileMax {
			n++
		} else {
			small++
			smallBytes += s
		}
	}
	if small > 0 {
		n += max((small+batchFiles-1)/batchFiles, int((smallBytes+batchBytes-1)/batchBytes))
	}
	return n
}

// runUploads uploads on jobs workers in the queue's order, calling put for
// each file, or, when putBatch is not nil, putBatch for every upload (the
// small ones several at once, a big one alone, last set for the batch that
// ends the uploads with nothing else in flight), and report for each result
// (held-back code files included), until all are done or ctx ends.
func runUploads(ctx context.Context, list []Upload, jobs int, put func(Upload) error,
	putBatch func(us []Upload, last bool) []error, report func(Upload, error)) {
	run(ctx, list, uploadKind, jobs, put, putBatch, report, ErrHeldBack)
}
