package servercmd

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

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
	Local       bool
}

// The roots of hoster-server init --local when not given: under the
// current directory, which the user can write.
const (
	localHostingRoot = "hoster-trial/hosting"
	localLogsRoot    = "hoster-trial/logs"
)

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
rewrites the Caddyfile and the unit.

With --local, init prepares a trial of the whole path on this machine, as
any user: roots under ./hoster-trial (unless given), Caddy on ports 8880 and
8443 (unless given) with certificates from its own CA ("tls internal") for
127.0.0.1 (unless --ip) and the game domains, and the client settings in
hoster.json in the hosting root; no self-signed certificate, no unit.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), nil); err != nil {
				return err
			}
			if opts.Local {
				if !cmd.Flags().Changed("hosting-root") {
					opts.HostingRoot = localHostingRoot
				}
				if !cmd.Flags().Changed("logs-root") {
					opts.LogsRoot = localLogsRoot
				}
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
	f.IntVar(&opts.HTTPPort, "http-port", 0, "Caddy's HTTP port (default 80; 8880 with --local)")
	f.IntVar(&opts.HTTPSPort, "https-port", 0, "Caddy's HTTPS port (default 443; 8443 with --local)")
	f.BoolVar(&opts.Local, "local", false, "prepare a trial on this machine: Caddy's own CA, ports 8880/8443, roots under ./hoster-trial")
	f.StringVar(&opts.Email, "email", "", "ACME account e-mail for the game domains' certificates")
	f.StringVar(&opts.Binary, "binary", "/usr/local/bin/hoster-server", "where hoster-server is installed, for the systemd unit")
	return cmd
}

// runInit checks the flags, prepares the host and reports what it did on out.
func runInit(o initOptions, out io.Writer, now time.Time) error {
	if o.Local && o.IP == "" {
		o.IP = "127.0.0.1"
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"--http-port", o.HTTPPort}, {"--https-port", o.HTTPSPort}} {
		if p.port < 0 || p.port > 65535 {
			return usageError{fmt.Errorf("reading %s: %d is not a port", p.flag, p.port)}
		}
	}
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
	p, err := deploy.Provision(deploy.Host{
		HostingRoot: hostingRoot, LogsRoot: logsRoot, IP: ip,
		Listen: o.Listen, AskListen: o.AskListen, HTTPPort: o.HTTPPort, HTTPSPort: o.HTTPSPort,
		Email: o.Email, Binary: o.Binary, Now: now, Local: o.Local,
	})
	if err != nil {
		return err
	}
	return p.Report(out)
}

// pickIP parses --ip, or finds the host's address.
func pickIP(s string) (net.IP, error) {
	if s == "" {
		ip, err := deploy.HostIP()
		if err != nil {
			return nil, usageError{err}
		}
		return ip, nil
	}
	ip := net.ParseIP(s)
	if ip == nil {
		return nil, usageError{fmt.Errorf("reading --ip: %q is not an IP address", s)}
	}
	return ip, nil
}
