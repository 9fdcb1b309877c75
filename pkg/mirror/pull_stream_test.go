package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
)

// plantFolders plants n hour files in each of the game-log folders of
// the domains, and returns their paths.
func plantFolders(t *testing.T, e *pullEnv, n int, domains ...string) []string {
	var paths []string
	for _, d := range domains {
		for h := range n {
			p := fmt.Sprintf("%s/g/hoster-processes/0123456789ab/stats-2026-11-22-%02d.jsonl", d, h)
			e.appendTo(t, "hoster-logs/"+p, strings.Repeat("x", h+1))
			paths = append(paths, p)
		}
	}
	return paths
}

// listingCut is a transport that gives the game-log listing's answer up
// to the second entry of the folder of domain next (the first entry that
// tells the folder before is complete), then either holds it until a
// game-log file's answer was read and closed (cut false: only a pull that
// fetches a folder's files while the listing is still coming gets past
// it; one that waits for the whole listing waits for ever, and go test's
// -timeout reports it) or ends it there, cut off (cut true).
type listingCut struct {
	next    http.RoundTripper
	domain  string
	cut     bool
	cutOnce bool // only the first answer is cut
	answers atomic.Int32
	once    sync.Once
	fetched chan struct{}
}

func (h *listingCut) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(r)
	switch {
	case err != nil:
	case r.URL.Path == api.ToolsPath(api.Version, api.PathGameLogs):
		all, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		at := bytes.Index(all, []byte(`"path":"`+h.domain+"/"))
		at += bytes.Index(all[at:], []byte("},{")) + 1
		rest := io.Reader(bytes.NewReader(all[at:]))
		if h.cut || h.cutOnce && h.answers.Add(1) == 1 {
			rest = iotestErr{}
		} else {
			rest = io.MultiReader(waitFor(h.fetched), rest)
		}
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(all[:at]), rest))
		resp.ContentLength = -1
	case strings.HasSuffix(r.URL.Path, api.PathGameLogsFile):
		resp.Body = &onClose{ReadCloser: resp.Body, f: func() { h.once.Do(func() { close(h.fetched) }) }}
	}
	return resp, err
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("the connection was cut") }

// waitFor is a reader of nothing that returns once c is closed.
type waitFor chan struct{}

func (w waitFor) Read([]byte) (int, error) {
	<-w
	return 0, io.EOF
}

type onClose struct {
	io.ReadCloser
	f func()
}

func (b *onClose) Close() error {
	err := b.ReadCloser.Close()
	b.f()
	return err
}

func (e *pullEnv) clientVia(t *testing.T, h *listingCut) *apiclient.Client {
	c, err := apiclient.NewClient(apiclient.ClientConfig{Server: e.base, Token: token, Attempts: 1,
		Wrap: func(t http.RoundTripper) http.RoundTripper { h.next = t; return h }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A pull fetches a game-log folder's files as soon as the listing has
// named them all, while the rest of the listing is still coming: the
// listing of 29,000 files of a month of 40 games is no longer waited for
// whole, nor read whole before any file is looked at.
func TestPullFetchesAFolderWhileTheListingComes(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	plantFolders(t, e, 5, "a.com", "b.com", "c.com")
	h := &listingCut{domain: "b.com", fetched: make(chan struct{})}
	dir := filepath.Join(e.mirror, "hoster-logs")
	s, err := PullGameLogs(context.Background(), e.clientVia(t, h), dir, 4, nil)
	if err != nil || s.Fetched != 15 || len(s.Failures) > 0 {
		t.Fatalf("pull %+v: %v", s, err)
	}
	e.sameTree(t, "hoster-logs")
}

// A game-log listing cut off part-way fails the part, and the files it
// named before are fetched all the same (each is checked as any listed
// file is; the next run fetches the rest).
func TestPullListingCutOff(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	paths := plantFolders(t, e, 5, "a.com", "b.com")
	h := &listingCut{domain: "b.com", cut: true, fetched: make(chan struct{})}
	dir := filepath.Join(e.mirror, "hoster-logs")
	s, err := PullGameLogs(context.Background(), e.clientVia(t, h), dir, 4, nil)
	if err == nil || !strings.Contains(err.Error(), "the connection was cut") || s.Fetched != 6 {
		t.Fatalf("pull %+v: %v", s, err)
	}
	for i, p := range paths {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
		if got := err == nil; got != (i <= 5) {
			t.Errorf("%s in the mirror: %v", p, got)
		}
	}
	if s, err := PullGameLogs(context.Background(), e.c, dir, 4, nil); err != nil || s.Fetched != 4 || s.Unchanged != 6 {
		t.Fatalf("the next pull %+v: %v", s, err)
	}
	e.sameTree(t, "hoster-logs")
}

// A listing cut off once part-way is asked again, and the files it named
// before the cut are not handed on twice: the pull ends with every file,
// none failed as repeated.
func TestPullListingCutOnceIsResumed(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	plantFolders(t, e, 5, "a.com", "b.com")
	h := &listingCut{domain: "b.com", cutOnce: true, fetched: make(chan struct{})}
	dir := filepath.Join(e.mirror, "hoster-logs")
	s, err := PullGameLogs(context.Background(), e.clientVia(t, h), dir, 4, nil)
	if err != nil || s.Fetched != 10 || len(s.Failures) != 0 || h.answers.Load() != 2 {
		t.Fatalf("pull %+v, %d listings asked: %v; want 10 files fetched from 2 listings", s, h.answers.Load(), err)
	}
	e.sameTree(t, "hoster-logs")
}

// unsorted is a remote whose game-log listing names its files out of
// order, a folder's files apart: each folder is read once, before its
// first file is fetched, and the mirror holds every file once.
type unsorted struct{ *apiclient.Client }

func (u unsorted) GameLogsEach(ctx context.Context, each func(api.GameLogFile)) error {
	var files []api.GameLogFile
	err := u.Client.GameLogsEach(ctx, func(f api.GameLogFile) { files = append(files, f) })
	for i := range files {
		each(files[(i*7)%len(files)]) // 7 and 10 are coprime: each once
	}
	return err
}

func TestPullUnsortedListing(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	plantFolders(t, e, 5, "a.com", "b.com")
	dir := filepath.Join(e.mirror, "hoster-logs")
	if s, err := PullGameLogs(context.Background(), unsorted{e.c}, dir, 4, nil); err != nil || s.Fetched != 10 {
		t.Fatalf("pull %+v: %v", s, err)
	}
	e.appendTo(t, "hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-03.jsonl", "more")
	if s, err := PullGameLogs(context.Background(), unsorted{e.c}, dir, 4, nil); err != nil || s.Fetched != 1 || s.Unchanged != 9 || s.Bytes != 4 {
		t.Fatalf("the next pull %+v: %v", s, err)
	}
	e.sameTree(t, "hoster-logs")
}
