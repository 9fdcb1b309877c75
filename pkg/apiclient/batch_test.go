package apiclient

import (
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/transfer"
)

// splitBatch keeps to each bound it is told, keeps the files' order, and
// sends a file too big for any batch in one of its own.
func TestSplitBatch(t *testing.T) {
	f := func(rel string, size int64) transfer.BatchFile { return transfer.BatchFile{Rel: rel, Size: size} }
	files := []transfer.BatchFile{f("a.com/g/1", 10), f("a.com/g/2", 600), f("a.com/g/33", 10), f("a.com/g/4", 5000), f("a.com/g/5", 0)}
	for _, tc := range []struct {
		bounds batchBounds
		want   string
	}{
		{batchBounds{}, "[[1 2 33 4 5]]"},
		{batchBounds{files: 2}, "[[1 2] [33 4] [5]]"},
		// Each file here is a 512-byte header and its blocks; 1,024 end the stream.
		{batchBounds{bytes: 1024 + 512 + 512 + 512 + 1024}, "[[1 2] [33] [4] [5]]"},
		{batchBounds{names: 19}, "[[1 2] [33 4] [5]]"},
	} {
		parts, err := splitBatch(files, tc.bounds)
		var got []string
		for _, p := range parts {
			var names []string
			for _, f := range p {
				names = append(names, strings.TrimPrefix(f.Rel, "a.com/g/"))
			}
			got = append(got, "["+strings.Join(names, " ")+"]")
		}
		if s := "[" + strings.Join(got, " ") + "]"; err != nil || s != tc.want {
			t.Errorf("%+v: %s %v, want %s", tc.bounds, s, err, tc.want)
		}
	}
}
