package servercmd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hoster-dev/hoster/pkg/fleet"
	"github.com/spf13/pflag"
)

// FleetDir is the folder under the hosting root where an embedded fleet
// node keeps its NATS JetStream data when --cluster-dir is not given: beside
// the games root, never in it.
const FleetDir = "hoster-fleet"

// defaultRelayPort is the rooms' relay's port when --cluster-relay is not
// given.
const defaultRelayPort = "6223"

// clusterOptions are serve's --cluster-* flags: with neither --cluster-listen
// nor --cluster-nats, the server is alone and starts no NATS.
type clusterOptions struct {
	Listen    string   // --cluster-listen: the embedded NATS's route address
	Peers     []string // --cluster-peers: the other nodes' route addresses
	NATS      []string // --cluster-nats: an external NATS's URLs
	Node      string   // --cluster-node: this node's name
	Dir       string   // --cluster-dir: the embedded NATS's data
	Replicas  int      // --cluster-replicas: 0 is fleet.Options' default
	TLSCert   string   // --cluster-tls-cert
	TLSKey    string   // --cluster-tls-key
	TLSCA     string   // --cluster-tls-ca
	Relay     string   // --cluster-relay: the rooms' relay address
	Advertise string   // --cluster-advertise: the host the other nodes reach this one at
}

func (c *clusterOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&c.Listen, "cluster-listen", "", "join a fleet with an embedded NATS: the address its routes listen on, e.g. 0.0.0.0:6222 (off: no fleet)")
	f.StringSliceVar(&c.Peers, "cluster-peers", nil, "the route addresses (host:port) of the fleet's other nodes, comma-separated (with --cluster-listen)")
	f.StringSliceVar(&c.NATS, "cluster-nats", nil, "join a fleet through an external NATS with JetStream: its nats:// URLs, comma-separated (off: no fleet)")
	f.StringVar(&c.Node, "cluster-node", "", "this node's name in the fleet, unique in it (default the host name)")
	f.StringVar(&c.Dir, "cluster-dir", "", "where the embedded NATS keeps its data (default {hosting_root}/"+FleetDir+")")
	f.IntVar(&c.Replicas, "cluster-replicas", 0, "copies JetStream keeps of the fleet's data (default 3, or the node count below three nodes; 1 with --cluster-nats)")
	f.StringVar(&c.TLSCert, "cluster-tls-cert", "", "TLS between the nodes (NATS's own): this node's certificate (PEM)")
	f.StringVar(&c.TLSKey, "cluster-tls-key", "", "the key of --cluster-tls-cert (PEM)")
	f.StringVar(&c.Relay, "cluster-relay", "", "the address the rooms' relay listens on: the other nodes carry the sockets of this node's private rooms to it (default the --cluster-listen address with its port plus one, e.g. 6223; 0.0.0.0:"+defaultRelayPort+" with --cluster-nats)")
	f.StringVar(&c.Advertise, "cluster-advertise", "", "the host name or address the other nodes reach this node's relay at (default the --cluster-relay host, or the host name when that is 0.0.0.0)")
	f.StringVar(&c.TLSCA, "cluster-tls-ca", "", "the CA (PEM) the other nodes' certificates must chain to (with --cluster-tls-cert)")
}

// on reports whether the server joins a fleet.
func (c clusterOptions) on() bool { return c.Listen != "" || len(c.NATS) > 0 }

func (c clusterOptions) validate() error {
	bad := func(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }
	switch {
	case c.Listen != "" && len(c.NATS) > 0:
		return bad("--cluster-listen (an embedded NATS) and --cluster-nats (an external one) exclude each other")
	case !c.on() && (len(c.Peers) > 0 || c.TLSCert != "" || c.Replicas != 0 || c.Relay != "" || c.Advertise != ""):
		return bad("--cluster-peers, --cluster-replicas, --cluster-relay, --cluster-advertise and --cluster-tls-* need --cluster-listen or --cluster-nats")
	case len(c.NATS) > 0 && (len(c.Peers) > 0 || c.TLSCert != ""):
		return bad("--cluster-peers and --cluster-tls-* are the embedded NATS's: an external NATS has its own configuration")
	case (c.TLSCert == "") != (c.TLSKey == "") || (c.TLSCA != "" && c.TLSCert == ""):
		return bad("--cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca go together")
	case c.Replicas < 0:
		return bad("reading --cluster-replicas: must be 1 or more, not %d", c.Replicas)
	}
	return nil
}

// join joins the fleet the flags name.
func (c clusterOptions) join(ctx context.Context, hostingRoot string, log *slog.Logger) (*fleet.Node, error) {
	o := fleet.Options{Name: c.Node, URLs: c.NATS, Listen: c.Listen, Peers: c.Peers, Dir: c.Dir,
		Replicas: c.Replicas, Logger: log}
	if o.Dir == "" {
		o.Dir = filepath.Join(hostingRoot, FleetDir)
	}
	if c.TLSCert != "" {
		var err error
		if o.TLS, err = c.tlsConfig(); err != nil {
			return nil, err
		}
	}
	log.Info("joining the fleet", "node", c.Node, "listen", c.Listen, "peers", c.Peers, "nats", c.NATS)
	return fleet.Join(ctx, o)
}

// rooms opens the node's rooms: their claims and the relay --cluster-relay
// names.
func (c clusterOptions) rooms(ctx context.Context, node *fleet.Node) (*fleet.Rooms, error) {
	o := fleet.RoomsOptions{Listen: c.Relay, Advertise: c.Advertise}
	if o.Listen == "" {
		o.Listen = "0.0.0.0:" + defaultRelayPort
		if c.Listen != "" {
			// Beside the routes: their port plus one (a random one for
			// a random route port).
			host, port, _ := net.SplitHostPort(c.Listen)
			p, err := strconv.Atoi(port)
			if err != nil {
				return nil, usageError{fmt.Errorf("reading --cluster-listen %q: the port is not a number", c.Listen)}
			}
			if p > 0 {
				p++
			}
			o.Listen = net.JoinHostPort(host, strconv.Itoa(p))
		}
	}
	if c.TLSCert != "" {
		var err error
		if o.TLS, err = c.tlsConfig(); err != nil {
			return nil, err
		}
	}
	return node.Rooms(ctx, o)
}

// tlsConfig is the routes' TLS: each node shows its certificate and
// verifies the other's against --cluster-tls-ca (the system's roots when
// unset).
func (c clusterOptions) tlsConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("reading --cluster-tls-cert and --cluster-tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, ClientAuth: tls.RequireAndVerifyClientCert}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("reading --cluster-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("reading --cluster-tls-ca %s: no PEM certificate in it", c.TLSCA)
		}
		cfg.RootCAs, cfg.ClientCAs = pool, pool
	}
	return cfg, nil
}
