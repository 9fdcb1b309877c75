package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/fleettest"
	"github.com/hoster-dev/hoster/internal/socktest"
	"github.com/hoster-dev/hoster/pkg/deploy"
)

// The local development loop: a player stays connected while the author
// saves a hook and hoster sync --watch pushes it; the player's next move
// runs the new code, on the same socket.
func TestWatchReloadsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bin := buildBinaries(t)
	dir := t.TempDir()
	srv := filepath.Join(dir, "srv")
	os.MkdirAll(srv, 0o755)
	token, _ := deploy.NewToken()
	deploy.WriteToken(filepath.Join(srv, "hoster-token"), token)
	server := startProcess(t, "hoster-server", exec.Command(filepath.Join(bin, "hoster-server"), "serve",
		"--hosting-root", srv, "--logs-root", filepath.Join(dir, "logs"), "--listen", "127.0.0.1:0", "--ask-listen", "127.0.0.1:0",
		"--reload-debounce", "100ms"))
	if !server.Until(fleettest.ServingLine.MatchString, 30*time.Second) { // a hang guard
		t.Fatalf("the server never served:\n%s", server)
	}
	listen := fleettest.ServingLine.FindStringSubmatch(server.String())[1]

	sites := filepath.Join(dir, "sites")
	os.CopyFS(sites, os.DirFS(filepath.Join(repoRoot(t), "examples", "sites")))
	cfg, _ := json.Marshal(map[string]string{"hoster-config-server": "http://" + listen, "hoster-config-apiToken": token})
	os.WriteFile(filepath.Join(dir, "hoster.json"), cfg, 0o600)
	watch := exec.Command(filepath.Join(bin, "hoster"), "--config", filepath.Join(dir, "hoster.json"), "sync", "--watch", sites)
	watching := startProcess(t, "hoster sync --watch", watch)
	watching.waitFor(t, "for changes")
	server.waitFor(t, `msg="game loaded" game=example.com/arena`)

	conn, _, err := websocket.DefaultDialer.Dial("ws://"+listen+"/arena?name=dev", http.Header{"Host": {"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var welcome struct{ Player string }
	conn.ReadJSON(&welcome)
	names := socktest.Names(conn, welcome.Player)

	// The author makes a move rename the player, and saves.
	run := filepath.Join(sites, "example.com", "arena", "hoster-commands", "move", "run.js")
	os.WriteFile(run, []byte(`export default function run(instance, player, args) { player.name = "edited"; }`), 0o644)
	took := socktest.MoveUntilNamed(t, conn, names, "edited", 100*time.Millisecond)
	t.Logf("the new code answered %v after the save, on the same socket", took.Round(10*time.Millisecond))
}
