package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

// A timed bot's effects see its own player change only in the updates
// after its move, on each protocol the bench speaks: hoster's compact and
// JSON updates, and Colyseus's state and patches.
func TestEffectsSeeOnlyTheBotsOwnMove(t *testing.T) {
	g := loadGame{tick: 20, send: 10, capacity: 20, entities: 50, precision: 0.0001}
	root := t.TempDir()
	g.write(root)
	rt, err := runtime.New(runtime.Options{GamesRoot: root, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt)
	t.Cleanup(func() { srv.Close(); rt.Shutdown(context.Background()) })
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/load"
	t.Run("compact", func(t *testing.T) { seesItsMove(t, hosterProtocol{url: url, host: "load.example", compact: true}) })
	t.Run("json", func(t *testing.T) { seesItsMove(t, hosterProtocol{url: url, host: "load.example"}) })
	t.Run("colyseus", func(t *testing.T) {
		dir, _ := filepath.Abs("../colyseus")
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "node")); err != nil {
			t.Skip("bench/colyseus has no node_modules (bench/vs-colyseus.sh installs them)")
		}
		addr := freeAddr()
		_, port, _ := strings.Cut(addr, ":")
		s, err := startServer([]string{filepath.Join(dir, "node_modules", ".bin", "node"), "server.js", port}, nil, dir, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.stop)
		seesItsMove(t, colyseusProtocol{addr: addr, room: "load", http: &http.Client{Timeout: 30 * time.Second}})
	})
}

// seesItsMove joins one bot alone in a room through p, checks that three
// updates (the entities move in each) do not show its player changed, then
// moves and checks that one of the next ten does.
func seesItsMove(t *testing.T, p protocol) {
	ws, j, err := p.join(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	fx, err := p.effects(j)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on a hung server, not a timing
	updates, moved := 0, false
	for updates < 15 {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("reading after %d updates: %v", updates, err)
		}
		if a := p.answer(data); a != nil {
			ws.WriteMessage(websocket.BinaryMessage, a)
		}
		mine, err := fx.mine(data)
		if err != nil {
			t.Fatalf("after %d updates: %v", updates, err)
		}
		if !p.isUpdate(data) {
			continue
		}
		updates++
		switch {
		case moved && mine:
			return
		case mine && updates > 2:
			t.Fatalf("update %d shows the bot's player changed before it moved", updates)
		case updates == 5:
			ft, mv := p.move()
			if err := ws.WriteMessage(ft, mv); err != nil {
				t.Fatal(err)
			}
			moved = true
		}
	}
	t.Fatal("ten updates after its move, none showed the bot's player changed")
}
