package deploy

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestProvision(t *testing.T) {
	dir := t.TempDir()
	o := Host{
		HostingRoot: filepath.Join(dir, "srv"), LogsRoot: filepath.Join(dir, "logs"), IP: net.ParseIP("127.0.0.1"),
		Listen: "127.0.0.1:8787", AskListen: "127.0.0.1:8788", HTTPSPort: 18443, Binary: "/usr/local/bin/hoster-server",
		Now: time.Now(),
	}
	var out bytes.Buffer
	provision := func() {
		t.Helper()
		p, err := Provision(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Report(&out); err != nil {
			t.Fatal(err)
		}
	}
	provision()
	tokenPath := filepath.Join(o.HostingRoot, "hoster-token")
	st, err := os.Stat(tokenPath)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want mode 600", err, st.Mode().Perm())
	}
	raw, _ := os.ReadFile(tokenPath)
	token := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Fatalf("token %q is not 32 bytes of hex", token)
	}
	if n := strings.Count(out.String(), token); n != 1 {
		t.Fatalf("the token must be printed exactly once, got %d times:\n%s", n, out.String())
	}
	for _, d := range []string{"srv/hoster-games", "logs/web-logs", "logs/server-logs", "logs/hoster-logs"} {
		if st, err := os.Stat(filepath.Join(dir, d)); err != nil || !st.IsDir() {
			t.Errorf("directory %s: %v", d, err)
		}
	}

	// The printed fingerprint is the certificate's, and the certificate is a
	// ten-year one for the IP.
	certPEM, err := os.ReadFile(filepath.Join(o.HostingRoot, "tls", "ip.crt"))
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := Fingerprint(certPEM)
	if !strings.Contains(out.String(), `"hoster-config-certSha256": "`+fp+`"`) || !strings.Contains(out.String(), `"hoster-config-server": "https://127.0.0.1:18443"`) {
		t.Fatalf("client settings missing or wrong:\n%s", out.String())
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life < 10*365*24*time.Hour {
		t.Errorf("certificate life %v, want ten years", life)
	}
	if err := cert.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("certificate is not for the IP: %v", err)
	}
	if st, _ := os.Stat(filepath.Join(o.HostingRoot, "tls", "ip.key")); st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 600", st.Mode().Perm())
	}

	caddyfile, _ := os.ReadFile(filepath.Join(o.HostingRoot, "Caddyfile"))
	for _, want := range []string{"roll_size 64MiB", "encode zstd gzip", "roll_keep 50", "roll_keep_for 2160h", "roll_uncompressed", "format json",
		"ask http://127.0.0.1:8788/ask", "reverse_proxy 127.0.0.1:8787", "on_demand", filepath.Join(dir, "logs", "web-logs", "access.log")} {
		if !strings.Contains(string(caddyfile), want) {
			t.Errorf("Caddyfile lacks %q", want)
		}
	}
	if caddy, err := exec.LookPath("caddy"); err != nil {
		t.Log("caddy is not installed: the Caddyfile is not validated by Caddy here (make test-deps installs it)")
	} else {
		cmd := exec.Command(caddy, "validate", "--adapter", "caddyfile", "--config", filepath.Join(o.HostingRoot, "Caddyfile"))
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("caddy validate: %v\n%s", err, b)
		}
	}

	// A second run keeps the token and the certificate, and never shows the token.
	out.Reset()
	provision()
	raw2, _ := os.ReadFile(tokenPath)
	certPEM2, _ := os.ReadFile(filepath.Join(o.HostingRoot, "tls", "ip.crt"))
	if !bytes.Equal(raw, raw2) || !bytes.Equal(certPEM, certPEM2) {
		t.Fatal("a second init must keep the token and the certificate")
	}
	if strings.Contains(out.String(), token) || !strings.Contains(out.String(), "exists, kept") {
		t.Fatalf("second run output:\n%s", out.String())
	}

	// A new IP replaces the certificate and says the pin changes.
	o.IP = net.ParseIP("127.0.0.2")
	out.Reset()
	provision()
	if !strings.Contains(out.String(), "clients must update their pin") {
		t.Fatalf("changed IP output:\n%s", out.String())
	}
}

func TestWriteTokenNeverOverwrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hoster-token")
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() { errs <- WriteToken(path, strings.Repeat("a", 64)) }()
	}
	won := 0
	for i := 0; i < 8; i++ {
		if err := <-errs; err == nil {
			won++
		} else if err != ErrTokenExists {
			t.Fatal(err)
		}
	}
	if won != 1 {
		t.Fatalf("%d concurrent writers succeeded, want exactly 1", won)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %d entries", len(entries))
	}
}

// init's advice follows the ports it was given, and its unit keeps roots
// under /tmp visible (no PrivateTmp: a private /tmp would hide them).
func TestProvisionPortsAndUnit(t *testing.T) {
	dir := t.TempDir()
	p, err := Provision(Host{
		HostingRoot: filepath.Join(dir, "srv"), LogsRoot: filepath.Join(dir, "logs"), IP: net.ParseIP("127.0.0.1"),
		Listen: "127.0.0.1:8787", AskListen: "127.0.0.1:8788", HTTPPort: 8880, HTTPSPort: 8443,
		Binary: "/usr/local/bin/hoster-server", Now: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.Report(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Open only ports 8880 and 8443") || strings.Contains(out.String(), " 80 and 443") {
		t.Errorf("the firewall advice does not follow the ports:\n%s", out.String())
	}
	unit, _ := os.ReadFile(p.UnitPath)
	if strings.Contains(string(unit), "PrivateTmp=true") || !strings.Contains(string(unit), "ReadWritePaths="+p.HostingRoot+" "+p.LogsRoot) {
		t.Errorf("the unit hides or locks roots under %s:\n%s", dir, unit)
	}
}

// A local trial: Caddy's own CA for everything, unprivileged ports, Caddy's
// data under the hosting root, client settings written, no self-signed
// certificate and no unit; Caddy accepts the Caddyfile.
func TestProvisionLocal(t *testing.T) {
	dir := t.TempDir()
	p, err := Provision(Host{
		HostingRoot: filepath.Join(dir, "srv"), LogsRoot: filepath.Join(dir, "logs"), IP: net.ParseIP("127.0.0.1"),
		Listen: "127.0.0.1:8787", AskListen: "127.0.0.1:8788", Local: true, Now: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.Report(&out); err != nil {
		t.Fatal(err)
	}
	caddyfile, _ := os.ReadFile(p.CaddyPath)
	for _, want := range []string{"https_port 8443", "http_port 8880", "skip_install_trust", "admin off",
		"root " + filepath.Join(dir, "srv", "caddy"), "https://127.0.0.1 {\n\ttls internal\n", "tls internal {\n\t\ton_demand\n", "ask http://127.0.0.1:8788/ask"} {
		if !strings.Contains(string(caddyfile), want) {
			t.Errorf("the trial's Caddyfile lacks %q:\n%s", want, caddyfile)
		}
	}
	token, _ := os.ReadFile(filepath.Join(dir, "srv", "hoster-token"))
	var settings map[string]string
	raw, err := os.ReadFile(filepath.Join(dir, "srv", "hoster.json"))
	if err != nil || json.Unmarshal(raw, &settings) != nil {
		t.Fatalf("client settings: %v\n%s", err, raw)
	}
	if settings["hoster-config-server"] != "https://127.0.0.1:8443" || settings["hoster-config-apiToken"] != strings.TrimSpace(string(token)) || len(settings) != 2 {
		t.Errorf("client settings %v", settings)
	}
	if st, _ := os.Stat(filepath.Join(dir, "srv", "hoster.json")); st.Mode().Perm() != 0o600 {
		t.Errorf("client settings mode %v, want 600", st.Mode().Perm())
	}
	for _, absent := range []string{"tls", "hoster-server.service"} {
		if _, err := os.Stat(filepath.Join(dir, "srv", absent)); err == nil {
			t.Errorf("a local trial wrote %s", absent)
		}
	}
	if root := filepath.Join(dir, "srv", "caddy", "pki", "authorities", "local", "root.crt"); !strings.Contains(out.String(), root) {
		t.Errorf("the report does not name Caddy's root %s:\n%s", root, out.String())
	}
	if caddy, err := exec.LookPath("caddy"); err == nil {
		cmd := exec.Command(caddy, "validate", "--adapter", "caddyfile", "--config", p.CaddyPath)
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("caddy validate: %v\n%s", err, b)
		}
	}
}
