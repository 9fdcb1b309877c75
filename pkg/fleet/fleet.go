// Package fleet joins a hoster-server to a fleet of them that share one NATS
// JetStream: either a NATS server embedded in each hoster-server (the nodes
// form a NATS cluster among themselves over routes, so a small fleet needs
// no other program) or an external NATS reached by nats:// URLs.
//
// [Join] gives a [Node]: its name and id, a connection to the fleet's NATS
// and a JetStream handle, on which the fleet's parts keep their state
// ([Node.KeyValue] and [Node.ObjectStore] make a bucket with the fleet's
// replica count). [StartSync] is one of those parts: one sync for the whole
// fleet (sync.go says how).
//
// Nothing here knows the command line; hoster-server serve builds the
// [Options] from its --cluster-* flags, and starts no NATS without them.
package fleet

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ClusterName is the NATS cluster name of an embedded fleet: every node's
// routes must carry it.
const ClusterName = "hoster"

// MaxReplicas is the most copies the fleet keeps of each bucket.
const MaxReplicas = 3

// MaxPayload is the largest message an embedded fleet's NATS takes: room
// for a game's manifest and for large chunks of the files' bodies.
const MaxPayload = 8 << 20

// Options configure Join. Either URLs (an external NATS) or Listen (an
// embedded one) is set.
type Options struct {
	// Name is the node's name in the fleet, unique in it (the NATS server
	// name of an embedded node); "" is the host name.
	Name string
	// URLs are the nats:// URLs of an external NATS with JetStream.
	URLs []string
	// Listen is the address (host:port) the embedded NATS server takes the
	// other nodes' routes on.
	Listen string
	// Peers are the route addresses (host:port) of the other nodes of an
	// embedded fleet.
	Peers []string
	// Dir holds the embedded server's JetStream data (never in the games
	// root).
	Dir string
	// Replicas is how many copies of each bucket JetStream keeps; 0 is
	// min(3, nodes) for an embedded fleet (the peers and this node) and 1
	// for an external NATS.
	Replicas int
	// TLS, if set, secures the routes between embedded nodes with NATS's
	// own TLS (each node verifies the others' certificates).
	TLS *tls.Config
	// Logger receives the node's lines, the embedded server's warnings and
	// errors among them; nil discards them.
	Logger *slog.Logger
}

// Node is this hoster-server in its fleet.
type Node struct {
	name     string
	id       string
	replicas int
	ns       *server.Server // nil: an external NATS
	// systemURL is the embedded server's system account's URL, and
	// systemFile the file it is written to (system.go).
	systemURL, systemFile string
	nc                    *nats.Conn
	js                    jetstream.JetStream
	log                   *slog.Logger
}

// Join starts the embedded NATS server (Options.Listen) or connects to the
// external one (Options.URLs), and waits until JetStream answers or ctx
// ends. Close leaves the fleet.
func Join(ctx context.Context, o Options) (*Node, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Name == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("joining the fleet: naming the node: %w", err)
		}
		o.Name = h
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("joining the fleet: %w", err)
	}
	n := &Node{name: o.Name, replicas: o.replicas(), log: o.Logger}
	var err error
	if len(o.URLs) > 0 {
		n.nc, err = nats.Connect(strings.Join(o.URLs, ","), n.connOptions()...)
		if err != nil {
			return nil, fmt.Errorf("joining the fleet: connecting to %s: %w", strings.Join(o.URLs, ","), err)
		}
	} else if err = n.embed(o); err != nil {
		return nil, fmt.Errorf("joining the fleet: %w", err)
	}
	if n.js, err = jetstream.New(n.nc); err != nil {
		n.Close()
		return nil, fmt.Errorf("joining the fleet: %w", err)
	}
	n.id = n.nc.ConnectedServerId()
	if n.ns != nil {
		n.id = n.ns.ID()
	}
	if err := n.waitJetStream(ctx); err != nil {
		n.Close()
		return nil, err
	}
	n.log.Info("joined the fleet", "node", n.name, "id", n.id, "replicas", n.replicas)
	return n, nil
}

func (o Options) check() error {
	switch {
	case len(o.URLs) > 0 && o.Listen != "":
		return errors.New("an external NATS (URLs) and an embedded one (a listen address) exclude each other")
	case len(o.URLs) == 0 && o.Listen == "":
		return errors.New("neither an external NATS (URLs) nor an embedded one (a listen address)")
	case o.Listen != "" && o.Dir == "":
		return errors.New("an embedded NATS needs a data folder")
	case o.Replicas < 0:
		return fmt.Errorf("replicas must be 1 or more, not %d", o.Replicas)
	}
	for _, u := range o.URLs {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "nats" && p.Scheme != "tls") || p.Host == "" {
			return fmt.Errorf("%q is not a nats:// URL", u)
		}
	}
	for _, a := range append([]string{o.Listen}, o.Peers...) {
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("reading the address %q: %w", a, err)
		}
	}
	return nil
}

func (o Options) replicas() int {
	switch {
	case o.Replicas > 0:
		return o.Replicas
	case len(o.URLs) > 0:
		return 1
	}
	return min(MaxReplicas, len(o.Peers)+1)
}

// embed starts the embedded NATS server, its routes to the peers, and
// connects to it in process.
func (n *Node) embed(o Options) error {
	host, port, _ := net.SplitHostPort(o.Listen)
	p, perr := strconv.Atoi(port)
	if perr != nil {
		return fmt.Errorf("reading the listen address %q: the port is not a number", o.Listen)
	}
	token, err := randomToken()
	if err != nil {
		return err
	}
	sysToken, err := randomToken()
	if err != nil {
		return err
	}
	// The client port is on loopback, on a port of its own choosing, behind
	// passwords only this process knows: the server's routing starts only
	// once a client port is open (DontListen would leave it waiting). The
	// node's own user is in the global account, which holds the fleet's
	// JetStream; the system account's (NATS's administration: removing a
	// node, system.go) is written for local operators to Dir/SystemURLFile.
	sys := server.NewAccount(server.DEFAULT_SYSTEM_ACCOUNT)
	so := &server.Options{
		ServerName:    o.Name,
		Host:          "127.0.0.1",
		Port:          server.RANDOM_PORT,
		Accounts:      []*server.Account{sys},
		SystemAccount: server.DEFAULT_SYSTEM_ACCOUNT,
		Users: []*server.User{{Username: nodeUser, Password: token},
			{Username: systemUser, Password: sysToken, Account: sys}},
		JetStream:  true,
		MaxPayload: MaxPayload,
		StoreDir:   filepath.Join(o.Dir, "jetstream"),
		NoSigs:     true,
	}
	if len(o.Peers) > 0 {
		so.Cluster = server.ClusterOpts{Name: ClusterName, Host: host, Port: p, TLSConfig: o.TLS}
		if o.TLS != nil {
			so.Cluster.TLSTimeout = 2
		}
		scheme := "nats"
		if o.TLS != nil {
			scheme = "tls"
		}
		for _, a := range o.Peers {
			so.Routes = append(so.Routes, &url.URL{Scheme: scheme, Host: a})
		}
	}
	if err := os.MkdirAll(so.StoreDir, 0o700); err != nil {
		return fmt.Errorf("making the data folder: %w", err)
	}
	if n.ns, err = server.NewServer(so); err != nil {
		return fmt.Errorf("starting the embedded NATS server: %w", err)
	}
	fatal := make(chan error, 1)
	n.ns.SetLoggerV2(natsLogger{n.log, fatal}, false, false, false)
	n.ns.Start()
	if err := n.ready(fatal); err != nil {
		n.ns.Shutdown()
		return fmt.Errorf("starting the embedded NATS server: %w", err)
	}
	if n.nc, err = nats.Connect("", append(n.connOptions(), nats.InProcessServer(n.ns), nats.UserInfo(nodeUser, token))...); err != nil {
		n.ns.Shutdown()
		return fmt.Errorf("connecting to the embedded NATS server: %w", err)
	}
	if err := n.writeSystemURL(o.Dir, sysToken); err != nil {
		n.nc.Close()
		n.ns.Shutdown()
		return err
	}
	return nil
}

// ready waits until the embedded server takes connections, or says it
// cannot (fatal: its route port taken, say), which it would otherwise
// only report after the wait.
func (n *Node) ready(fatal <-chan error) error {
	ready := make(chan bool, 1)
	go func() { ready <- n.ns.ReadyForConnections(30 * time.Second) }()
	select {
	case err := <-fatal:
		return err
	case ok := <-ready:
		if !ok {
			return errors.New("not ready after 30s")
		}
		return nil
	}
}

// randomToken is a fresh secret of 32 random bytes, hex.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making the embedded server's token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// connOptions are the connection's: named after the node, and reconnecting
// for as long as it lives.
func (n *Node) connOptions() []nats.Option {
	return []nats.Option{nats.Name("hoster-server " + n.name), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				n.log.Warn("fleet: disconnected from NATS", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { n.log.Info("fleet: reconnected to NATS") }),
	}
}

// waitJetStream waits until JetStream answers: an embedded cluster has
// elected its meta leader, which takes a quorum of the nodes.
func (n *Node) waitJetStream(ctx context.Context) error {
	return retry(ctx, func(ctx context.Context) error {
		_, err := n.js.AccountInfo(ctx)
		return err
	}, func(err error) error { return fmt.Errorf("joining the fleet: waiting for JetStream: %w", err) })
}

// retry calls f until it succeeds or ctx ends; fail wraps the last error.
// Each call is bounded, by 1 s at first and up to 5 s: a request JetStream
// drops (the nodes creating the same bucket at once) is sent again soon,
// while a slow one gets time.
func retry(ctx context.Context, f func(context.Context) error, fail func(error) error) error {
	wait, bound := 50*time.Millisecond, time.Second
	for {
		cctx, cancel := context.WithTimeout(ctx, bound)
		err := f(cctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fail(err)
		case <-time.After(wait):
		}
		wait, bound = min(2*wait, time.Second), min(2*bound, 5*time.Second)
	}
}

// Name is the node's name in the fleet.
func (n *Node) Name() string { return n.name }

// ID is the id of the node's NATS server (embedded), or of the server its
// connection reached (external); a restarted embedded node keeps neither
// its id nor its connections, only its name.
func (n *Node) ID() string { return n.id }

// Replicas is how many copies JetStream keeps of each of the fleet's
// buckets.
func (n *Node) Replicas() int { return n.replicas }

// Conn is the node's connection to the fleet's NATS.
func (n *Node) Conn() *nats.Conn { return n.nc }

// JetStream is the node's JetStream handle.
func (n *Node) JetStream() jetstream.JetStream { return n.js }

// KeyValue creates or opens the key-value bucket cfg names, with the
// fleet's replica count when cfg sets none, retrying until JetStream can
// place it (a quorum of the nodes is up) and its stream has a leader, or
// ctx ends.
func (n *Node) KeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = n.replicas
	}
	var kv jetstream.KeyValue
	err := retry(ctx, func(ctx context.Context) (err error) {
		if kv, err = n.js.CreateOrUpdateKeyValue(ctx, cfg); err != nil {
			return err
		}
		st, err := kv.Status(ctx)
		if err != nil {
			return err
		}
		if st, ok := st.(*jetstream.KeyValueBucketStatus); ok {
			return led(st.StreamInfo())
		}
		return nil
	}, func(err error) error { return fmt.Errorf("opening the fleet's bucket %s: %w", cfg.Bucket, err) })
	return kv, err
}

// ObjectStore creates or opens the object store cfg names, as KeyValue does
// a key-value bucket.
func (n *Node) ObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = n.replicas
	}
	var os jetstream.ObjectStore
	err := retry(ctx, func(ctx context.Context) (err error) {
		if os, err = n.js.CreateOrUpdateObjectStore(ctx, cfg); err != nil {
			return err
		}
		st, err := os.Status(ctx)
		if err != nil {
			return err
		}
		if st, ok := st.(*jetstream.ObjectBucketStatus); ok {
			return led(st.StreamInfo())
		}
		return nil
	}, func(err error) error { return fmt.Errorf("opening the fleet's object store %s: %w", cfg.Bucket, err) })
	return os, err
}

// led is nil once a bucket's stream has elected its leader. Just made, or
// just after a node joined, it has none for a moment: a write then gets no
// response and a read no responder.
func led(si *jetstream.StreamInfo) error {
	if si != nil && si.Cluster != nil && si.Cluster.Leader == "" {
		return errors.New("its stream has no leader yet")
	}
	return nil
}

// Close leaves the fleet: the connection is drained and the embedded
// server, if any, shut down.
func (n *Node) Close() error {
	if n.nc != nil {
		n.nc.Close()
	}
	if n.ns != nil {
		n.removeSystemURL()
		n.ns.Shutdown()
		n.ns.WaitForShutdown()
	}
	return nil
}

// natsLogger passes the embedded server's warnings and errors on; its
// notices and traces are left out (a started server says a page of them).
// Its first fatal error goes to fatal too.
type natsLogger struct {
	log   *slog.Logger
	fatal chan<- error
}

func (l natsLogger) Noticef(string, ...any) {}
func (l natsLogger) Debugf(string, ...any)  {}
func (l natsLogger) Tracef(string, ...any)  {}
func (l natsLogger) Warnf(format string, v ...any) {
	l.log.Warn("nats: " + fmt.Sprintf(format, v...))
}
func (l natsLogger) Errorf(format string, v ...any) {
	l.log.Error("nats: " + fmt.Sprintf(format, v...))
}
func (l natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error("nats: " + msg)
	select {
	case l.fatal <- errors.New(msg):
	default:
	}
}
