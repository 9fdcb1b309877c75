package cli

import (
	"bytes"
	"testing"

	"github.com/hoster-dev/hoster/pkg/mirror"
)

// counts are the bar's file counts and total bytes.
func (o *output) counts() (done, total int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done, o.total, o.bytes
}

// A pull begins fetching each part's files as its listing comes: a second
// Begin of the same kind adds to the bar under way, the files already done
// still counted (where it finished the bar instead, the bar's wait would
// never end: mpb completes a bar on a writer that is not a terminal only
// as its bytes reach its total, and go test's -timeout reports it).
func TestOutputBeginAddsToThePhaseUnderWay(t *testing.T) {
	var errOut bytes.Buffer
	o := newOutput(&IO{ErrOut: &errOut, ErrIsTerminal: true}, &globals{})
	o.Begin("fetch", 2, 100)
	o.Done(mirror.Op{Kind: "fetch", Path: "a", Size: 60}, nil)
	o.Begin("fetch", 3, 50)
	if done, total, bytes := o.counts(); done != 1 || total != 5 || bytes != 150 {
		t.Errorf("after two fetch phases: %d/%d files, %d bytes; want 1/5, 150", done, total, bytes)
	}
	for _, size := range []int64{40, 20, 20, 10} {
		o.Done(mirror.Op{Kind: "fetch", Path: "b", Size: size}, nil)
	}
	// The bar is full: the files of a third listing get a bar of their
	// own, the files counted on.
	o.Begin("fetch", 1, 30)
	if done, total, bytes := o.counts(); done != 5 || total != 6 || bytes != 30 {
		t.Errorf("after the bar was full: %d/%d files, %d bytes; want 5/6, 30", done, total, bytes)
	}
	o.Done(mirror.Op{Kind: "fetch", Path: "c", Size: 30}, nil)
	o.Begin("upload", 4, 10)
	if done, total, _ := o.counts(); done != 0 || total != 4 || o.kind != "upload" {
		t.Errorf("a phase of another kind: %d/%d files of %q; want 0/4 of upload", done, total, o.kind)
	}
	o.Done(mirror.Op{Kind: "upload", Path: "d", Size: 10}, nil)
	o.Finish()
}
