package cli

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
)

// tlsEnv is a real server behind TLS on 127.0.0.1, with httptest's
// self-signed certificate, counting what reaches it.
type tlsEnv struct {
	*cliEnv
	requests, auths atomic.Int32
	fingerprint     string
	certFile        string // the certificate, as PEM, to trust as a root
}

func newTLSEnv(t *testing.T) *tlsEnv {
	e := &tlsEnv{cliEnv: newCLIEnv(t, api.Variant1)}
	s := contracttest.Start(t, contracttest.Options{Token: testToken, TLS: true, Wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e.requests.Add(1)
			if r.Header.Get("Authorization") != "" {
				e.auths.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}})
	e.url = s.URL
	e.fingerprint = apiclient.Fingerprint(s.HTTP.Certificate().Raw)
	e.certFile = filepath.Join(t.TempDir(), "root.pem")
	os.WriteFile(e.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.HTTP.Certificate().Raw}), 0o644)
	e.writeConfig(map[string]string{"hoster-config-server": s.URL, "hoster-config-apiToken": testToken})
	e.game("arena", map[string]string{})
	return e
}

// A server reached by IP whose certificate does not verify, with no pin,
// gets nothing: the command exits 2 saying how to pin, and no request (no
// token) reaches the server.
func TestUnverifiedServerGetsNoToken(t *testing.T) {
	e := newTLSEnv(t)
	for _, args := range [][]string{{"sync", "sites"}, {"version"}, {"pull", "mirror"}} {
		_, errOut, code := e.run(false, args...)
		if code != ExitUsage {
			t.Errorf("hoster %v with an unverified certificate: exit %d, want 2\n%s", args, code, errOut)
		}
		for _, want := range []string{"hoster-config-certSha256", "hoster-server init", e.fingerprint, "--insecure-skip-verify"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("hoster %v: the message does not say %q:\n%s", args, want, errOut)
			}
		}
	}
	if n, a := e.requests.Load(), e.auths.Load(); n != 0 || a != 0 {
		t.Fatalf("the unverified server saw %d requests, %d with an Authorization header; want none", n, a)
	}
}

func TestVerifiedServer(t *testing.T) {
	e := newTLSEnv(t)
	// The right pin: verified by it.
	if _, errOut, code := e.run(false, "--cert-sha256", e.fingerprint, "sync", "sites"); code != 0 || strings.Contains(errOut, "verification is off") {
		t.Fatalf("with the pin: exit %d\n%s", code, errOut)
	}
	// Verification explicitly off: works, and warns.
	_, errOut, code := e.run(false, "--insecure-skip-verify", "sync", "sites")
	if code != 0 || !strings.Contains(errOut, "verification is off") || !strings.Contains(errOut, e.fingerprint) {
		t.Fatalf("--insecure-skip-verify: exit %d, want 0 and a warning\n%s", code, errOut)
	}
	if e.auths.Load() == 0 {
		t.Fatal("the server saw no token")
	}
}

// A certificate from a CA the machine trusts (here through SSL_CERT_FILE,
// as the operators' guide has it for Caddy's local CA) verifies by IP with
// no pin. The system's roots are read once a process, so hoster runs in a
// process of its own: this test binary, through TestHelperHoster.
func TestTrustedRootNeedsNoPin(t *testing.T) {
	e := newTLSEnv(t)
	args, _ := json.Marshal([]string{"sync", "sites"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoster$")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "HOSTER_TEST_HELPER_ARGS="+string(args), "SSL_CERT_FILE="+e.certFile, "SSL_CERT_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "verification is off") {
		t.Fatalf("hoster sync with the server's CA trusted: %v\n%s", err, out)
	}
	if e.auths.Load() == 0 {
		t.Fatal("the server saw no token")
	}
}

// TestHelperHoster runs hoster with the arguments in HOSTER_TEST_HELPER_ARGS
// and exits with its status; without them it does nothing.
func TestHelperHoster(t *testing.T) {
	raw := os.Getenv("HOSTER_TEST_HELPER_ARGS")
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := run(&IO{Out: &out, ErrOut: &out}, args)
	os.Stdout.Write(out.Bytes())
	os.Exit(code)
}
