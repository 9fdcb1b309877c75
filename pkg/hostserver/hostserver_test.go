package hostserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/httptestutil"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/mirror"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

const token = "7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de"

// isolation stands where serve puts its worker pool, and records what the
// host asks of it.
type isolation struct {
	mu                       sync.Mutex
	handOffs, reloads, shuts []string
	parent                   Parent
}

func (i *isolation) HandOff(domain, name string) (func(runtime.Handed, func()), error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handOffs = append(i.handOffs, domain+"/"+name)
	return nil, errors.New("the test's isolation takes no socket")
}

func (i *isolation) Reload(domain, name string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.reloads = append(i.reloads, domain+"/"+name)
}

func (i *isolation) Shutdown(context.Context) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.shuts = append(i.shuts, "shutdown")
}

// A game synced through the host's Handler is reloaded in every part: the
// runtime runs it (the ask gate knows its domain), the pages serve it, the
// isolation follows it and takes its sockets, and OnReload hears it loaded.
func TestSyncedGameRunsInEveryPart(t *testing.T) {
	iso := &isolation{}
	reloaded := make(chan string, 4)
	h, err := New(Options{
		HostingRoot: t.TempDir(), Token: token, ReloadDebounce: 10 * time.Millisecond,
		Isolate: func(parent Parent) (Isolation, error) {
			iso.parent = parent
			return iso, nil
		},
		OnReload: func(domain, name string, loaded bool) {
			if loaded {
				select { // a long sync may reload the game more than once
				case reloaded <- domain + "/" + name:
				default:
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	ask := httptest.NewServer(h.AskHandler())
	defer ask.Close()

	sites := t.TempDir()
	if err := os.CopyFS(filepath.Join(sites, "example.com", "arena"), os.DirFS("../../examples/sites/example.com/arena")); err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.NewClient(apiclient.ClientConfig{Server: srv.URL, Token: token, Attempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mirror.Sync(context.Background(), sites, client, mirror.SyncOptions{}, nil); err != nil {
		t.Fatalf("syncing: %v", err)
	}
	select {
	case got := <-reloaded:
		if got != "example.com/arena" {
			t.Fatalf("OnReload heard %s", got)
		}
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the synced game never reloaded")
	}

	page, _ := os.ReadFile(filepath.Join(sites, "example.com", "arena", "index.html"))
	if resp, body := httptestutil.Get(t, srv.URL+"/arena/", "example.com", nil); resp.StatusCode != 200 || body != string(page) {
		t.Errorf("GET /arena/: %s", resp.Status)
	}
	if resp, _ := httptestutil.Get(t, ask.URL+"/ask?domain=example.com", "", nil); resp.StatusCode != 200 {
		t.Errorf("the ask gate for the synced game's domain: %s", resp.Status)
	}
	socket := http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}
	if resp, _ := httptestutil.Get(t, srv.URL+"/arena", "example.com", socket); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the game's socket was not handed to the isolation: %s", resp.Status)
	}
	if _, ok := iso.parent.Config("example.com", "arena"); !ok {
		t.Error("the isolation cannot read the loaded game's configuration")
	}
	if src, ok, _ := iso.parent.Source("example.com", "arena"); !ok || len(src.Module) == 0 || src.ID == "" {
		t.Error("the isolation cannot read the loaded game's code")
	}
	if resp, _ := httptestutil.Get(t, srv.URL+"/api/tree", "", nil); resp.StatusCode != 404 {
		t.Errorf("an unauthenticated /api request: %s", resp.Status)
	}

	h.Shutdown(context.Background())
	h.Close()
	iso.mu.Lock()
	defer iso.mu.Unlock()
	if len(iso.reloads) == 0 || slices.ContainsFunc(iso.reloads, func(key string) bool { return key != "example.com/arena" }) {
		t.Errorf("the isolation followed reloads %v; want the synced game's", iso.reloads)
	}
	if strings.Join(iso.handOffs, " ") != "example.com/arena" || len(iso.shuts) != 1 {
		t.Errorf("the isolation got hand-offs %v, shutdowns %v; want the game's socket and one shutdown", iso.handOffs, iso.shuts)
	}
}
