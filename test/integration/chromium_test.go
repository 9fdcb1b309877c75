package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// chromium is a headless Chromium driven over its DevTools protocol.
type chromium struct {
	t        *testing.T
	devtools string // 127.0.0.1:<port>
}

// startChromium starts headless Chromium with extra flags and one page at
// url, and stops it (and its helpers) at the end of the test. It skips the
// test when Chromium is not installed.
func startChromium(t *testing.T, url string, flags ...string) *chromium {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (make test-deps installs Debian's chromium as root); skipping the browser test")
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
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	// Chromium writes its DevTools port into the profile once it listens.
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort")); err == nil {
			if port, _, ok := strings.Cut(string(b), "\n"); ok && port != "" {
				return &chromium{t: t, devtools: "127.0.0.1:" + port}
			}
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("chromium did not start")
		}
	}
}

// open opens another page at url.
func (c *chromium) open(url string) {
	c.t.Helper()
	req, _ := http.NewRequest("PUT", "http://"+c.devtools+"/json/new?"+url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		c.t.Fatalf("opening %s: %v %v", url, err, resp)
	}
	resp.Body.Close()
}

// pages lists the open pages' DevTools socket URLs.
func (c *chromium) pages() []string {
	resp, err := http.Get("http://" + c.devtools + "/json/list")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var targets []struct{ Type, WebSocketDebuggerURL string }
	json.NewDecoder(resp.Body).Decode(&targets)
	var out []string
	for _, tg := range targets {
		if tg.Type == "page" {
			out = append(out, tg.WebSocketDebuggerURL)
		}
	}
	return out
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
func (p *tab) eval(expr string, v any) error {
	id := p.id.Add(1)
	if err := p.ws.WriteJSON(map[string]any{"id": id, "method": "Runtime.evaluate",
		"params": map[string]any{"expression": expr, "returnByValue": true}}); err != nil {
		return err
	}
	p.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var m struct {
			ID     int64
			Result struct {
				Result struct {
					Value json.RawMessage
				}
				ExceptionDetails *struct{ Text string }
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
		if m.Result.ExceptionDetails != nil {
			return fmt.Errorf("evaluating %q: %s", expr, m.Result.ExceptionDetails.Text)
		}
		if v == nil || len(m.Result.Result.Value) == 0 {
			return nil
		}
		return json.Unmarshal(m.Result.Result.Value, v)
	}
}
