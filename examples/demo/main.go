// Command demo is the smoke check of the demo: it runs `hoster dev` on a
// temporary copy of the example sites as `make demo` does, reads the game's
// URL from its output, loads the page, makes one socket round trip (welcome,
// a command, the update that shows it) from the page's origin, and stops it
// with Ctrl-C (SIGINT), which must end it cleanly. CI runs it as
// `make demo-smoke`.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the hoster binary")
	sites := flag.String("sites", "examples/sites", "the sites tree (a temporary copy is run)")
	flag.Parse()
	if err := run(*bin, *sites); err != nil {
		fmt.Fprintf(os.Stderr, "demo-smoke: %v\n", err)
		os.Exit(1)
	}
}

func run(bin, sites string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tmp, err := os.MkdirTemp("", "hoster-demo-smoke-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "sites")
	if err := os.CopyFS(root, os.DirFS(sites)); err != nil {
		return fmt.Errorf("copying %s: %w", sites, err)
	}

	cmd := exec.Command(filepath.Join(bin, "hoster"), "dev", "--port", "0", root)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting hoster dev: %w", err)
	}
	defer cmd.Process.Kill()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Println(sc.Text())
			if _, u, ok := strings.Cut(sc.Text(), "example.com/arena  "); ok {
				urls <- u
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	var page string
	select {
	case page = <-urls:
	case <-ctx.Done():
		return errors.New("hoster dev printed no URL for example.com/arena")
	}
	if err := roundTrip(ctx, page); err != nil {
		return err
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("hoster dev after Ctrl-C: %w", err)
	}
	fmt.Println("demo-smoke: ok: hoster dev stopped cleanly")
	return nil
}

// roundTrip loads the page, joins the game from the page's origin, moves,
// and waits for the update that shows it. Every name is dialled at
// 127.0.0.1, as browsers resolve *.localhost.
func roundTrip(ctx context.Context, page string) error {
	u, err := url.Parse(page)
	if err != nil {
		return err
	}
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+u.Port())
	}
	client := &http.Client{Transport: &http.Transport{DialContext: dial}}
	resp, err := client.Get(page)
	if err != nil {
		return fmt.Errorf("loading %s: %w", page, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "hoster.client.js") {
		return fmt.Errorf("loading %s: %s", page, resp.Status)
	}
	dialer := websocket.Dialer{NetDialContext: dial}
	origin := "http://" + u.Host
	conn, _, err := dialer.DialContext(ctx, "ws://"+u.Host+strings.TrimSuffix(u.Path, "/")+"?name=smoke", http.Header{"Origin": {origin}})
	if err != nil {
		return fmt.Errorf("joining the game: %w", err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	var welcome struct{ T, Player, Instance string }
	if err := conn.ReadJSON(&welcome); err != nil || welcome.T != "welcome" {
		return fmt.Errorf("want a welcome, got %+v, %v", welcome, err)
	}
	if err := conn.WriteJSON(map[string]any{"c": "move", "a": map[string]any{"dx": 1, "dy": 0}}); err != nil {
		return fmt.Errorf("sending a command: %w", err)
	}
	for {
		var m struct {
			T      string
			Error  string
			Change []struct{ ID string }
		}
		if err := conn.ReadJSON(&m); err != nil {
			return fmt.Errorf("waiting for an update: %w", err)
		}
		if m.T == "error" {
			return fmt.Errorf("the server refused the command: %s", m.Error)
		}
		for _, c := range m.Change {
			if c.ID == welcome.Player {
				fmt.Printf("demo-smoke: ok: loaded %s, joined instance %s as %s, moved, saw the change\n", page, welcome.Instance, welcome.Player)
				return nil
			}
		}
	}
}
