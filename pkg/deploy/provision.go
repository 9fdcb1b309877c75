package deploy

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/atomicfile"
)

// Host is what Provision prepares, as hoster-server init's flags give it.
type Host struct {
	// HostingRoot and LogsRoot are absolute paths.
	HostingRoot, LogsRoot string
	// IP is the server's public address, the one its certificate is for.
	IP net.IP
	// Listen and AskListen are host:port addresses of hoster-server serve.
	Listen, AskListen string
	// HTTPPort and HTTPSPort are Caddy's ports; 0 means 80 and 443, or
	// LocalHTTPPort and LocalHTTPSPort when Local.
	HTTPPort, HTTPSPort int
	// Local prepares a trial of the whole path on one machine: Caddy's own
	// CA issues every certificate (no self-signed IP certificate, no pin),
	// Caddy keeps its data under the hosting root, the client settings are
	// written to hoster.json there, and no systemd unit is written.
	Local bool
	// Email is the ACME account of the game domains' certificates; may be "".
	Email string
	// Binary is where hoster-server is installed, for the systemd unit.
	Binary string
	// Now dates a new certificate.
	Now time.Time
}

// Provisioned is what Provision did, for the operator.
type Provisioned struct {
	Host
	// GamesDir is {hosting_root}/hoster-games.
	GamesDir string
	// TokenPath, CertPath and KeyPath are the token file and the IP
	// certificate's two files (under {hosting_root}/tls).
	TokenPath, CertPath, KeyPath string
	// CaddyPath and UnitPath are the written Caddyfile and systemd unit.
	CaddyPath, UnitPath string
	// Token is set only when this run created it: it is shown once.
	Token string
	// TokenNote and CertNote say what happened to each.
	TokenNote, CertNote string
	// Fingerprint is the certificate's SHA-256, the clients' pin; "" when
	// Local.
	Fingerprint string
	// ServerURL is the clients' hoster-config-server.
	ServerURL string
	// CaddyData and CaddyRoot are Caddy's data directory and its CA's root
	// certificate, which clients trust (Local only).
	CaddyData, CaddyRoot string
	// ClientConfigPath is the client settings file written (Local only).
	ClientConfigPath string
}

// The ports of Caddy in a local trial, unprivileged.
const (
	LocalHTTPPort  = 8880
	LocalHTTPSPort = 8443
)

// Provision prepares a host: the directories under both roots, the token
// (created once, never overwritten), the certificate for h.IP (kept while
// it is for that IP), the Caddyfile and the systemd unit (rewritten each
// time); with h.Local, the trial's Caddyfile and client settings instead of
// the certificate and the unit. Running it again is safe.
func Provision(h Host) (*Provisioned, error) {
	if h.Local {
		h.HTTPPort = cmp.Or(h.HTTPPort, LocalHTTPPort)
		h.HTTPSPort = cmp.Or(h.HTTPSPort, LocalHTTPSPort)
	}
	tlsDir := filepath.Join(h.HostingRoot, "tls")
	p := &Provisioned{
		Host:      h,
		GamesDir:  filepath.Join(h.HostingRoot, api.GamesDir),
		TokenPath: filepath.Join(h.HostingRoot, api.TokenFile),
		CertPath:  filepath.Join(tlsDir, "ip.crt"),
		KeyPath:   filepath.Join(tlsDir, "ip.key"),
		CaddyPath: filepath.Join(h.HostingRoot, "Caddyfile"),
		UnitPath:  filepath.Join(h.HostingRoot, "hoster-server.service"),
		ServerURL: "https://" + hostPort(h.IP, h.HTTPSPort),
	}
	if h.Local {
		p.CaddyData = filepath.Join(h.HostingRoot, "caddy")
		p.CaddyRoot = CaddyRootCert(p.CaddyData)
		p.ClientConfigPath = filepath.Join(h.HostingRoot, "hoster.json")
		p.CertPath, p.KeyPath, p.UnitPath = "", "", ""
	}
	if err := p.directories(); err != nil {
		return nil, err
	}
	if err := p.token(); err != nil {
		return nil, err
	}
	if !h.Local {
		certPEM, err := p.certificate()
		if err != nil {
			return nil, err
		}
		if p.Fingerprint, err = Fingerprint(certPEM); err != nil {
			return nil, err
		}
	}
	caddyfile, err := Caddyfile(CaddyConfig{
		IP: h.IP, CertFile: p.CertPath, KeyFile: p.KeyPath, Local: h.Local, Storage: p.CaddyData,
		Upstream: h.Listen, Ask: h.AskListen, LogsRoot: h.LogsRoot,
		HTTPPort: h.HTTPPort, HTTPSPort: h.HTTPSPort, Email: h.Email,
	})
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(p.CaddyPath, caddyfile, 0o644); err != nil {
		return nil, err
	}
	if h.Local {
		return p, p.clientConfig()
	}
	unit := SystemdUnit(h.Binary, h.HostingRoot, h.LogsRoot, h.Listen, h.AskListen)
	if err := atomicfile.WriteFile(p.UnitPath, unit, 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// directories creates the directories under both roots.
func (p *Provisioned) directories() error {
	for _, d := range []struct {
		path string
		perm os.FileMode
	}{
		{p.HostingRoot, 0o755},
		{p.GamesDir, 0o755},
		{p.LogsRoot, 0o755},
		{filepath.Join(p.LogsRoot, api.WebLogsDir), 0o755},
		{filepath.Join(p.LogsRoot, api.ServerLogsDir), 0o755},
		{filepath.Join(p.LogsRoot, api.GameLogsDir), 0o755},
	} {
		if err := os.MkdirAll(d.path, d.perm); err != nil {
			return fmt.Errorf("creating directories: %w", err)
		}
	}
	if p.CertPath != "" {
		if err := os.MkdirAll(filepath.Dir(p.CertPath), 0o700); err != nil {
			return fmt.Errorf("creating directories: %w", err)
		}
	}
	return nil
}

// clientConfig writes the trial's client settings, mode 600: the server's
// URL and the token (the one in the token file, which this user owns).
func (p *Provisioned) clientConfig() error {
	raw, err := os.ReadFile(p.TokenPath)
	if err != nil {
		return fmt.Errorf("reading the token for the client settings: %w", err)
	}
	b, err := json.MarshalIndent(map[string]string{
		"hoster-config-server":   p.ServerURL,
		"hoster-config-apiToken": strings.TrimSpace(string(raw)),
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("writing the client settings: %w", err)
	}
	if err := atomicfile.WriteFile(p.ClientConfigPath, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the client settings: %w", err)
	}
	return nil
}

// token creates the token file unless one exists.
func (p *Provisioned) token() error {
	token, err := NewToken()
	if err != nil {
		return err
	}
	switch err := WriteToken(p.TokenPath, token); {
	case errors.Is(err, ErrTokenExists):
		p.TokenNote = "exists, kept (not overwritten, not shown; to rotate, remove it, run init, restart the server)"
	case err != nil:
		return err
	default:
		p.Token, p.TokenNote = token, "created, shown once below"
	}
	return nil
}

// certificate keeps the certificate when it is for the same IP and has its
// key, and otherwise makes a new one; it returns the certificate in place.
func (p *Provisioned) certificate() ([]byte, error) {
	certPEM, err := os.ReadFile(p.CertPath)
	_, keyErr := os.Stat(p.KeyPath)
	if err == nil && keyErr == nil && CertIP(certPEM).Equal(p.IP) {
		p.CertNote = "kept"
		return certPEM, nil
	}
	p.CertNote = "created"
	if err == nil {
		p.CertNote = fmt.Sprintf("replaced (it was for %v; clients must update their pin)", CertIP(certPEM))
	}
	c, err := NewIPCertificate(p.IP, p.Now)
	if err != nil {
		return nil, err
	}
	// Key first: a certificate never stands without its key.
	if err := atomicfile.WriteFile(p.KeyPath, c.KeyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(p.CertPath, c.CertPEM, 0o644); err != nil {
		return nil, err
	}
	return c.CertPEM, nil
}

// ClientToken is the token setting to print: the token when this run made
// it, else where to find it.
func (p *Provisioned) ClientToken() string {
	if p.Token != "" {
		return p.Token
	}
	return "<the token in " + p.TokenPath + ">"
}

var report = template.Must(template.New("report").Funcs(template.FuncMap{"quote": strconv.Quote}).Parse(
	`hoster-server init: ready
  games        {{.GamesDir}}
  logs         {{.LogsRoot}}
  token        {{.TokenPath}}: {{.TokenNote}}
  certificate  {{.CertPath}} for {{.IP}}: {{.CertNote}}
  Caddyfile    {{.CaddyPath}}
  systemd unit {{.UnitPath}}

Certificate SHA-256 fingerprint:
  {{.Fingerprint}}

Client settings: save as hoster.json beside your sites, or as
$XDG_CONFIG_HOME/hoster/hoster.json (the token may instead go in the
environment as HOSTER_CONFIG_APITOKEN, or in a file named by --token-file):
  {
    "hoster-config-server": {{quote .ServerURL}},
    "hoster-config-apiToken": {{quote .ClientToken}},
    "hoster-config-certSha256": {{quote .Fingerprint}}
  }

Next:
  1. Let Caddy use the Caddyfile: put "import {{.CaddyPath}}" in /etc/caddy/Caddyfile
     (or replace it), then: systemctl reload caddy
  2. Install and start the server: cp {{.UnitPath}} /etc/systemd/system/ &&
     systemctl daemon-reload && systemctl enable --now hoster-server
  3. Open only ports {{.PublicHTTPPort}} and {{.PublicHTTPSPort}} ({{.Listen}} and {{.AskListen}} stay on loopback).
`))

var localReport = template.Must(template.New("report").Funcs(template.FuncMap{"quote": strconv.Quote}).Parse(
	`hoster-server init --local: ready for a trial on this machine
  games        {{.GamesDir}}
  logs         {{.LogsRoot}}
  token        {{.TokenPath}}: {{.TokenNote}}
  Caddyfile    {{.CaddyPath}} (Caddy's own CA; ports {{.HTTPPort}} and {{.HTTPSPort}})
  client       {{.ClientConfigPath}} (mode 600)

Client settings, written to {{.ClientConfigPath}}:
  {
    "hoster-config-server": {{quote .ServerURL}},
    "hoster-config-apiToken": {{quote .ClientToken}}
  }

Caddy's CA root certificate, there once Caddy has started; the client trusts
it through SSL_CERT_FILE (no pin: Caddy renews its certificates):
  {{.CaddyRoot}}

Next, each in a terminal of its own (docs/operators.md, "Trying it on one machine"):
  hoster-server serve --hosting-root {{.HostingRoot}} --logs-root {{.LogsRoot}} --listen {{.Listen}} --ask-listen {{.AskListen}}
  caddy run --adapter caddyfile --config {{.CaddyPath}}
  SSL_CERT_FILE={{.CaddyRoot}} hoster --config {{.ClientConfigPath}} sync <your sites>
A game's page is then https://<domain>:{{.HTTPSPort}}/<game>/, once <domain> resolves to
{{.IP}} for the browser; its origins must list "https://<domain>:{{.HTTPSPort}}".
`))

// PublicHTTPPort and PublicHTTPSPort are the ports Caddy listens on.
func (p *Provisioned) PublicHTTPPort() int  { return cmp.Or(p.HTTPPort, 80) }
func (p *Provisioned) PublicHTTPSPort() int { return cmp.Or(p.HTTPSPort, 443) }

// Report writes what was done and the client settings to paste.
func (p *Provisioned) Report(w io.Writer) error {
	t := report
	if p.Local {
		t = localReport
	}
	if err := t.Execute(w, p); err != nil {
		return fmt.Errorf("printing the init report: %w", err)
	}
	return nil
}

// HostIP is the host's first global unicast IPv4 address.
func HostIP() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && n.IP.To4() != nil {
				return n.IP, nil
			}
		}
	}
	return nil, errors.New("finding the server's IP address: none found; pass --ip")
}

// hostPort is the host of a URL for ip, with the port unless it is 443.
func hostPort(ip net.IP, port int) string {
	host := ip.String()
	if ip.To4() == nil {
		host = "[" + host + "]"
	}
	if port == 0 || port == 443 {
		return host
	}
	return host + ":" + strconv.Itoa(port)
}
