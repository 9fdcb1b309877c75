package servercmd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/deploy"
	"github.com/spf13/cobra"
)

// initOptions are the flags of hoster-server init.
type initOptions struct {
	HostingRoot string
	LogsRoot    string
	IP          string
	Listen      string
	AskListen   string
	HTTPPort    int
	HTTPSPort   int
	Email       string
	Binary      string
}

func init() {
	commands = append(commands, newInitCmd)
}

func newInitCmd(out, _ io.Writer) *cobra.Command {
	opts := initOptions{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Prepare a host: directories, token, IP certificate, Caddyfile, systemd unit",
		Long: `init creates the directories under the two roots, the API token (32 random
bytes as hex, mode 600, printed once and never overwritten), a ten-year
self-signed certificate for the server's IP address, a Caddyfile that puts
Caddy in front of hoster-server, and a systemd unit. It prints the
certificate's SHA-256 fingerprint and the client settings to paste.
Running it again keeps the token and a certificate for the same IP, and
rewrites the Caddyfile and the unit.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), nil); err != nil {
				return err
			}
			return runInit(opts, out, time.Now())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.HostingRoot, "hosting-root", "/srv/hoster", "the hosting root: games, token, certificate, Caddyfile")
	f.StringVar(&opts.LogsRoot, "logs-root", "/var/log/hoster", "the logs root")
	f.StringVar(&opts.IP, "ip", "", "the server's public IP address (default: the first non-loopback address)")
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:8787", "the address hoster-server serve listens on (Caddy proxies to it)")
	f.StringVar(&opts.AskListen, "ask-listen", "127.0.0.1:8788", "the address of hoster-server's ask gate")
	f.IntVar(&opts.HTTPPort, "http-port", 0, "Caddy's HTTP port (default 80)")
	f.IntVar(&opts.HTTPSPort, "https-port", 0, "Caddy's HTTPS port (default 443)")
	f.StringVar(&opts.Email, "email", "", "ACME account e-mail for the game domains' certificates")
	f.StringVar(&opts.Binary, "binary", "/usr/local/bin/hoster-server", "where hoster-server is installed, for the systemd unit")
	return cmd
}

// runInit prepares the host and reports what it did on out.
func runInit(o initOptions, out io.Writer, now time.Time) error {
	ip, err := pickIP(o.IP)
	if err != nil {
		return err
	}
	hostingRoot, err := filepath.Abs(o.HostingRoot)
	if err != nil {
		return usageError{fmt.Errorf("reading --hosting-root: %w", err)}
	}
	logsRoot, err := filepath.Abs(o.LogsRoot)
	if err != nil {
		return usageError{fmt.Errorf("reading --logs-root: %w", err)}
	}
	for _, a := range []struct{ flag, addr string }{{"--listen", o.Listen}, {"--ask-listen", o.AskListen}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return usageError{fmt.Errorf("reading %s: %w", a.flag, err)}
		}
	}

	tlsDir := filepath.Join(hostingRoot, "tls")
	for _, d := range []struct {
		path string
		perm os.FileMode
	}{
		{hostingRoot, 0o755},
		{filepath.Join(hostingRoot, api.GamesDir), 0o755},
		{tlsDir, 0o700},
		{logsRoot, 0o755},
		{filepath.Join(logsRoot, api.WebLogsDir), 0o755},
		{filepath.Join(logsRoot, api.ServerLogsDir), 0o755},
		{filepath.Join(logsRoot, api.GameLogsDir), 0o755},
	} {
		if err := os.MkdirAll(d.path, d.perm); err != nil {
			return fmt.Errorf("creating directories: %w", err)
		}
	}

	// The token: created once, never overwritten.
	tokenPath := filepath.Join(hostingRoot, api.TokenFile)
	token, err := deploy.NewToken()
	if err != nil {
		return err
	}
	tokenNote := "created, shown once below"
	switch err := deploy.WriteToken(tokenPath, token); {
	case errors.Is(err, deploy.ErrTokenExists):
		token = ""
		tokenNote = "exists, kept (not overwritten, not shown; to rotate, remove it, run init, restart the server)"
	case err != nil:
		return err
	}

	// The certificate: kept when it is for the same IP.
	certPath, keyPath := filepath.Join(tlsDir, "ip.crt"), filepath.Join(tlsDir, "ip.key")
	certNote := "kept"
	certPEM, err := os.ReadFile(certPath)
	_, keyErr := os.Stat(keyPath)
	if err != nil || keyErr != nil || !deploy.CertIP(certPEM).Equal(ip) {
		certNote = "created"
		if err == nil {
			certNote = fmt.Sprintf("replaced (it was for %v; clients must update their pin)", deploy.CertIP(certPEM))
		}
		c, err := deploy.NewIPCertificate(ip, now)
		if err != nil {
			return err
		}
		// Key first: a certificate never stands without its key.
		if err := deploy.WriteFileAtomic(keyPath, c.KeyPEM, 0o600); err != nil {
			return err
		}
		if err := deploy.WriteFileAtomic(certPath, c.CertPEM, 0o644); err != nil {
			return err
		}
		certPEM = c.CertPEM
	}
	fingerprint, err := deploy.Fingerprint(certPEM)
	if err != nil {
		return err
	}

	caddyfile, err := deploy.Caddyfile(deploy.CaddyConfig{
		IP: ip, CertFile: certPath, KeyFile: keyPath,
		Upstream: o.Listen, Ask: o.AskListen, LogsRoot: logsRoot,
		HTTPPort: o.HTTPPort, HTTPSPort: o.HTTPSPort, Email: o.Email,
	})
	if err != nil {
		return err
	}
	caddyPath := filepath.Join(hostingRoot, "Caddyfile")
	if err := deploy.WriteFileAtomic(caddyPath, caddyfile, 0o644); err != nil {
		return err
	}
	unitPath := filepath.Join(hostingRoot, "hoster-server.service")
	unit := deploy.SystemdUnit(o.Binary, hostingRoot, logsRoot, o.Listen, o.AskListen)
	if err := deploy.WriteFileAtomic(unitPath, unit, 0o644); err != nil {
		return err
	}

	serverURL := "https://" + hostPort(ip, o.HTTPSPort)
	tokenValue := token
	if tokenValue == "" {
		tokenValue = "<the token in " + tokenPath + ">"
	}
	fmt.Fprintf(out, `hoster-server init: ready
  games        %s
  logs         %s
  token        %s: %s
  certificate  %s for %s: %s
  Caddyfile    %s
  systemd unit %s

Certificate SHA-256 fingerprint:
  %s

Client settings: save as hoster.json beside your sites, or as
$XDG_CONFIG_HOME/hoster/hoster.json (the token may instead go in the
environment as HOSTER_CONFIG_APITOKEN, or in a file named by --token-file):
  {
    "hoster-config-server": %q,
    "hoster-config-apiToken": %q,
    "hoster-config-certSha256": %q
  }

Next:
  1. Let Caddy use the Caddyfile: put "import %s" in /etc/caddy/Caddyfile
     (or replace it), then: systemctl reload caddy
  2. Install and start the server: cp %s /etc/systemd/system/ &&
     systemctl daemon-reload && systemctl enable --now hoster-server
  3. Open only ports 80 and 443 (%s and %s stay on loopback).
`, filepath.Join(hostingRoot, api.GamesDir), logsRoot, tokenPath, tokenNote,
		certPath, ip, certNote, caddyPath, unitPath, fingerprint,
		serverURL, tokenValue, fingerprint, caddyPath, unitPath, o.Listen, o.AskListen)
	return nil
}

// pickIP parses --ip, or finds the first global unicast address of the host.
func pickIP(s string) (net.IP, error) {
	if s != "" {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, usageError{fmt.Errorf("reading --ip: %q is not an IP address", s)}
		}
		return ip, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && n.IP.To4() != nil {
				return n.IP, nil
			}
		}
	}
	return nil, usageError{errors.New("finding the server's IP address: none found; pass --ip")}
}

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
