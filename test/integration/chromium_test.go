package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/waitbuf"
)

// chromium is a headless Chromium driven over its DevTools protocol.
type chromium struct {
	t        *testing.T
	devtools string // 127.0.0.1:<port>
}

// skipWithoutChromium skips the test when Chromium is not installed.
func skipWithoutChromium(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium is not installed (make test-deps installs Debian's chromium as root); skipping the browser test")
	}
}

// copyExampleSites copies examples/sites to a new folder named name, and
// returns its path.
func copyExampleSites(t *testing.T, name string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(root, os.DirFS(filepath.Join(repoRoot(t), "examples", "sites"))); err != nil {
		t.Fatal(err)
	}
	return root
}

// startChromium starts headless Chromium with extra flags and one page at
// url, and stops it (and its helpers) at the end of the test. It skips the
// test when Chromium is not installed.
func startChromium(t *testing.T, url string, flags ...string) *chromium {
	t.Helper()
	skipWithoutChromium(t)
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal(err)
	}
	// Chromium's helpers may outlive it for a moment: the profile is removed
	// without failing the test on their leftovers.
	profile, err := os.MkdirTemp("", "hoster-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--remote-debugging-port=0"}, flags...)
	cmd := exec.Command(bin, append(args, url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // to stop its helpers too
	// Chromium says where DevTools listens on stderr, once it listens.
	stderr := waitbuf.New()
	cmd.Stderr = stderr
	cmd.WaitDelay = 10 * time.Second // a helper left holding stderr does not hang the end
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	var devtools string
	if !stderr.Until(func(s string) bool {
		if m := devtoolsListening.FindStringSubmatch(s); m != nil {
			devtools = m[1]
		}
		return devtools != ""
	}, 30*time.Second) { // a hang guard
		t.Fatalf("chromium did not start:\n%s", stderr)
	}
	return &chromium{t: t, devtools: devtools}
}

// devtoolsListening is Chromium's line saying where DevTools listens.
var devtoolsListening = regexp.MustCompile(`DevTools listening on ws://([^/\s]+)/`)

// open opens another page at url and returns its DevTools socket URL.
func (c *chromium) open(url string) string {
	c.t.Helper()
	req, _ := http.NewRequest("PUT", "http://"+c.devtools+"/json/new?"+url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		c.t.Fatalf("opening %s: %v %v", url, err, resp)
	}
	defer resp.Body.Close()
	var target struct{ WebSocketDebuggerURL string }
	if err := json.NewDecoder(resp.Body).Decode(&target); err != nil || target.WebSocketDebuggerURL == "" {
		c.t.Fatalf("opening %s: no DevTools socket for the page: %v", url, err)
	}
	return target.WebSocketDebuggerURL
}

// tab is one page's DevTools connection.
type tab struct {
	ws *websocket.Conn
	id atomic.Int64
}

func (c *chromium) attach(wsURL string) *tab {
	c.t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		c.t.Fatalf("attaching to a page: %v", err)
	}
	c.t.Cleanup(func() { ws.Close() })
	return &tab{ws: ws}
}

// eval evaluates expr in the page and decodes its JSON-able value into v.
func (p *tab) eval(expr string, v any) error { return p.evaluate(expr, false, 10*time.Second, v) }

// await evaluates expr, a promise, in the page and decodes the value it
// resolves to into v: the page says when, woken by its own events. timeout
// is a hang guard.
func (p *tab) await(expr string, timeout time.Duration, v any) error {
	return p.evaluate(expr, true, timeout, v)
}

func (p *tab) evaluate(expr string, await bool, timeout time.Duration, v any) error {
	id := p.id.Add(1)
	if err := p.ws.WriteJSON(map[string]any{"id": id, "method": "Runtime.evaluate",
		"params": map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": await}}); err != nil {
		return err
	}
	p.ws.SetReadDeadline(time.Now().Add(timeout))
	for {
		var m struct {
			ID     int64
			Result struct {
				Result struct {
					Value json.RawMessage
				}
				ExceptionDetails *struct {
					Text      string
					Exception *struct{ Description string }
				}
			}
			Error *struct{ Message string }
		}
		if err := p.ws.ReadJSON(&m); err != nil {
			return err
		}
		if m.ID != id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("evaluating %q: %s", expr, m.Error.Message)
		}
		if e := m.Result.ExceptionDetails; e != nil {
			if e.Exception != nil {
				return fmt.Errorf("evaluating %q: %s %s", expr, e.Text, e.Exception.Description)
			}
			return fmt.Errorf("evaluating %q: %s", expr, e.Text)
		}
		if v == nil || len(m.Result.Result.Value) == 0 {
			return nil
		}
		return json.Unmarshal(m.Result.Result.Value, v)
	}
}
