package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RoomsBucket is the key-value bucket of the private rooms' claims: one key
// per room ("<domain>/<game>/<code>"), whose value names the node the room
// lives on and how the others reach it.
const RoomsBucket = "hoster-rooms"

// DefaultRoomTTL is how long a claim lives unless its owner refreshes it,
// which it does each third of it: a room whose node died can be made again
// on another node this long after the node's last refresh.
const DefaultRoomTTL = 3 * time.Second

// RoomsOptions configure [Node.Rooms].
type RoomsOptions struct {
	// Listen is the address (host:port) the relay listens on: the other
	// nodes carry the sockets of this node's rooms to it.
	Listen string
	// Advertise is the host name or address the other nodes dial to reach
	// the relay (its port is the listener's); "" is the listener's host,
	// or this machine's host name when the listener takes every address.
	Advertise string
	// TTL is a claim's time to live: DefaultRoomTTL.
	TTL time.Duration
	// TLS, if set, secures the relay between nodes: the listener shows its
	// certificate and, as the config says, asks the dialler for one; a
	// dialling node shows the same certificate and verifies the owner's
	// against the advertised host.
	TLS *tls.Config
}

// claim is a room's value in RoomsBucket: what a node needs to carry a
// socket to the room's owner.
type claim struct {
	// Node is the owner's name.
	Node string `json:"node"`
	// Relay is the host:port of the owner's relay.
	Relay string `json:"relay"`
	// Secret is the owner's relay secret (hex), minted at its start: a
	// relayed socket is admitted only with it. Only the fleet reads the
	// bucket.
	Secret string `json:"secret"`
}

// Rooms places the private rooms of a fleet: a room lives on the node that
// claimed it first, and the other nodes relay its sockets there. It is the
// runtime's Options.Rooms.
type Rooms struct {
	node   *Node
	kv     jetstream.KeyValue
	ttl    time.Duration
	value  []byte // this node's claim, encoded
	secret []byte
	tls    *tls.Config
	relay  *relayListener
	srv    *http.Server
	// presence and nodes answer on presenceSubject and nodesSubject while
	// this node is in the fleet.
	presence, nodes *nats.Subscription
	log             *slog.Logger

	mu    sync.Mutex
	owned map[string]*owned // the rooms this node holds, by key
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// owned is a room this node holds: its claim's revision, its sockets here
// and, once it has none, the timer that releases it.
type owned struct {
	rev     uint64
	sockets int
	release *time.Timer
	gen     int // bumped by each hold: a release timer of an earlier gen does nothing
}

// Rooms opens the fleet's rooms bucket and this node's relay listener.
// Serve starts taking relayed sockets; Close releases the rooms.
func (n *Node) Rooms(ctx context.Context, o RoomsOptions) (*Rooms, error) {
	if o.TTL <= 0 {
		o.TTL = DefaultRoomTTL
	}
	secret, err := randomToken()
	if err != nil {
		return nil, fmt.Errorf("starting the rooms' relay: %w", err)
	}
	kv, err := n.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: RoomsBucket, TTL: o.TTL, History: 1,
		Description: "hoster: each private room's node"})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("starting the rooms' relay: listening on %s: %w", o.Listen, err)
	}
	advertise, err := advertised(o.Advertise, ln.Addr())
	if err != nil {
		ln.Close()
		return nil, err
	}
	if o.TLS != nil {
		ln = tls.NewListener(ln, o.TLS)
	}
	rs := &Rooms{node: n, kv: kv, ttl: o.TTL, secret: []byte(secret), tls: o.TLS, log: n.log,
		owned: map[string]*owned{}, stop: make(chan struct{}), done: make(chan struct{})}
	rs.value, _ = json.Marshal(claim{Node: n.name, Relay: advertise, Secret: secret})
	answer := func(m *nats.Msg) { m.Respond(rs.value) }
	if rs.presence, err = n.nc.Subscribe(presenceSubject(n.name), answer); err == nil {
		rs.nodes, err = n.nc.Subscribe(nodesSubject, answer)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("starting the rooms' relay: %w", err)
	}
	rs.relay = newRelayListener(ln, rs.secret, n.log)
	go rs.refresh()
	n.log.Info("fleet: rooms relay listening", "addr", ln.Addr().String(), "advertise", advertise)
	return rs, nil
}

// advertised is the host:port the other nodes dial for the relay
// listening on a.
func advertised(host string, a net.Addr) (string, error) {
	h, port, _ := net.SplitHostPort(a.String())
	if host == "" {
		host = h
		if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
			var err error
			if host, err = os.Hostname(); err != nil {
				return "", fmt.Errorf("starting the rooms' relay: naming its host: %w", err)
			}
		}
	}
	return net.JoinHostPort(host, port), nil
}

// Addr is the relay listener's address.
func (rs *Rooms) Addr() net.Addr { return rs.relay.Addr() }

// Serve serves the relayed sockets with h, as sockets of this node (h is
// the node's handler, without its access log: the relaying node logs
// them). It returns when Close is called.
func (rs *Rooms) Serve(h http.Handler) error {
	rs.mu.Lock()
	rs.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, relayedKey{}, true)
		},
		ErrorLog: slog.NewLogLogger(rs.log.Handler(), slog.LevelWarn)}
	srv := rs.srv
	rs.mu.Unlock()
	err := srv.Serve(rs.relay)
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// relayedKey marks the context of a request that came over the relay.
type relayedKey struct{}

// opTimeout bounds each of Enter's questions to the bucket: while the
// bucket's stream elects a new leader (its leader's node died), writes wait
// for seconds; Enter asks again, or decides without the bucket.
const opTimeout = time.Second

// Enter is the runtime's question for a socket of a private room: a room
// this node holds, or may claim, is served here; else the socket is relayed
// to the owner. An owner whose relay does not answer and that has left the
// fleet (it died) is succeeded at once by one live node, the same for
// every node (succeed); an owner still in the fleet is waited for, up to
// twice the time to live and 5 s (then 503).
func (rs *Rooms) Enter(w http.ResponseWriter, r *http.Request, key string, linger time.Duration) (func(), bool) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*rs.ttl+5*time.Second)
	defer cancel()
	relayed := r.Context().Value(relayedKey{}) != nil
	wait := 25 * time.Millisecond
	waited := ""     // the owner in the fleet whose relay did not answer
	var failed error // the bucket's or the fleet's last failure
	for {
		c, rev, err := rs.claim(ctx, key)
		switch {
		case err != nil:
			failed = err
		case c == nil:
			return rs.leave(key, linger), false
		case !relayed && rs.carry(w, r, *c) == nil:
			return nil, true
		case rs.present(ctx, c.Node):
			if relayed {
				// The relaying node read a claim that has moved on
				// since: its client tries again.
				http.Error(w, "this room moved to another server: try again", http.StatusServiceUnavailable)
				return nil, true
			}
			waited = c.Node
		default:
			next, err := rs.succeed(ctx, key, rev)
			switch {
			case err != nil:
				failed = fmt.Errorf("succeeding node %s, which left: %w", c.Node, err)
			case next == nil:
				return rs.leave(key, linger), false
			case relayed:
				http.Error(w, "this room moved to another server: try again", http.StatusServiceUnavailable)
				return nil, true
			case rs.carry(w, r, *next) == nil:
				return nil, true
			}
		}
		select {
		case <-ctx.Done():
			switch {
			case waited != "":
				// In the fleet, yet its relay refuses or does not
				// answer: its --cluster-relay or --cluster-advertise,
				// or a firewall between the nodes.
				rs.log.Warn("fleet: a room's node is in the fleet but its relay does not answer; the socket got 503", "room", key, "node", waited)
			case failed != nil:
				rs.log.Warn("fleet: a room's node could not be found; the socket got 503", "room", key, "err", failed)
			}
			http.Error(w, "the room's server does not answer: try again", http.StatusServiceUnavailable)
			return nil, true
		case <-time.After(wait):
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

// get reads key's claim, asking again while no JetStream server answers
// (the bucket's stream has no leader yet, as just after a node joined)
// until ctx ends.
func (rs *Rooms) get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	wait := 20 * time.Millisecond
	for {
		e, err := rs.kv.Get(ctx, key)
		if !errors.Is(err, nats.ErrNoResponders) {
			return e, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

// claim holds the room key here when this node has it or can claim it
// (nil), else returns the owner's claim and its revision. The claim is read
// first: a replica answers a read, so that a room whose owner died is
// found even while the bucket waits for a new leader to take writes.
func (rs *Rooms) claim(ctx context.Context, key string) (*claim, uint64, error) {
	if rs.hold(key, 0) {
		return nil, 0, nil
	}
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	for range 2 {
		e, err := rs.get(octx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			rev, err := rs.kv.Create(octx, key, rs.value)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // claimed in between: read whose it is
			}
			if err != nil {
				return nil, 0, fmt.Errorf("claiming %s: %w", key, err)
			}
			rs.hold(key, rev)
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("reading the claim of %s: %w", key, err)
		}
		var c claim
		if err := json.Unmarshal(e.Value(), &c); err != nil || c.Node == "" {
			return nil, 0, fmt.Errorf("reading the claim of %s: not a claim", key)
		}
		if c.Node != rs.node.name {
			return &c, e.Revision(), nil
		}
		// This node's, from an earlier run of it (its relay has moved),
		// or from another socket's claim a moment ago: taken over.
		rev, err := rs.kv.Update(octx, key, rs.value, e.Revision())
		if err != nil {
			return nil, 0, fmt.Errorf("claiming %s: %w", key, err)
		}
		rs.hold(key, rev)
		return nil, 0, nil
	}
	return nil, 0, fmt.Errorf("claiming %s: it was claimed and released while read", key)
}

// present reports whether node is in the fleet: its presence subject has
// an answer (a node that died has none as soon as its connection is gone).
// In doubt (no answer in time), it is.
func (rs *Rooms) present(ctx context.Context, node string) bool {
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := rs.node.nc.RequestWithContext(pctx, presenceSubject(node), nil)
	return !errors.Is(err, nats.ErrNoResponders)
}

// succeed chooses the room key's node after its owner, last claimed at rev,
// left the fleet: of the live nodes, the one that ranks first for the key
// (rendezvous hashing), so that every node chooses the same without the
// bucket, whose writes may wait for a new leader. This node, when chosen,
// holds the room (nil): its claim replaces the dead owner's now, or at the
// next renewal. Another node chosen is returned, to carry the socket to.
func (rs *Rooms) succeed(ctx context.Context, key string, rev uint64) (*claim, error) {
	nodes, err := rs.liveNodes(ctx)
	if err != nil {
		return nil, err
	}
	var best *claim
	var bestRank [32]byte
	for _, c := range nodes {
		rank := sha256.Sum256([]byte(key + "\n" + c.Node))
		if best == nil || bytes.Compare(rank[:], bestRank[:]) > 0 {
			best, bestRank = &c, rank
		}
	}
	if best == nil || best.Node != rs.node.name {
		return best, nil
	}
	// Held at once; the claim is written in place of the dead one's now,
	// or by the next renewal if the bucket has no leader yet.
	rs.hold(key, rev)
	go rs.renew(key, rev)
	rs.log.Info("fleet: a room taken over from a node that left the fleet", "room", key)
	return nil, nil
}

// liveNodes asks every node with rooms for its claim, gathering the answers
// for a moment: the fleet's live nodes, this one among them.
func (rs *Rooms) liveNodes(ctx context.Context) ([]claim, error) {
	inbox := nats.NewInbox()
	sub, err := rs.node.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("asking for the live nodes: %w", err)
	}
	defer sub.Unsubscribe()
	if err := rs.node.nc.PublishRequest(nodesSubject, inbox, nil); err != nil {
		return nil, fmt.Errorf("asking for the live nodes: %w", err)
	}
	var nodes []claim
	ctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	defer cancel()
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nodes, nil
		}
		var c claim
		if json.Unmarshal(m.Data, &c) == nil && c.Node != "" {
			nodes = append(nodes, c)
		}
	}
}

// presenceSubject is where a node with rooms answers while it is in the
// fleet; nodesSubject is where they all do.
func presenceSubject(node string) string {
	return "hoster.rooms.node." + hex.EncodeToString([]byte(node))
}

const nodesSubject = "hoster.rooms.nodes"

// hold counts one more socket of the room key here: with rev, the claim
// just made or renewed; with 0, only if the room is already held (it
// reports whether it was).
func (rs *Rooms) hold(key string, rev uint64) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	o := rs.owned[key]
	if o == nil {
		if rev == 0 {
			return false
		}
		o = &owned{}
		rs.owned[key] = o
	}
	o.rev = max(o.rev, rev)
	o.sockets++
	o.gen++
	if o.release != nil {
		o.release.Stop()
		o.release = nil
	}
	return true
}

// leave is the release of one socket's hold: once the room has no socket
// here for linger, its claim is deleted.
func (rs *Rooms) leave(key string, linger time.Duration) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			rs.mu.Lock()
			defer rs.mu.Unlock()
			o := rs.owned[key]
			if o == nil {
				return
			}
			if o.sockets--; o.sockets > 0 {
				return
			}
			gen := o.gen
			o.release = time.AfterFunc(linger, func() { rs.release(key, gen) })
		})
	}
}

// release deletes the claim of a room left empty since gen.
func (rs *Rooms) release(key string, gen int) {
	rs.mu.Lock()
	o := rs.owned[key]
	if o == nil || o.gen != gen || o.sockets > 0 {
		rs.mu.Unlock()
		return
	}
	delete(rs.owned, key)
	rs.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rs.kv.Delete(ctx, key, jetstream.LastRevision(o.rev)); err != nil {
		rs.log.Debug("fleet: releasing a room (its claim expires)", "room", key, "err", err)
	}
}

// renewals is how many claims a node renews at once.
const renewals = 64

// refresh renews every held claim each third of the time to live, until
// Close.
func (rs *Rooms) refresh() {
	defer close(rs.done)
	t := time.NewTicker(rs.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-rs.stop:
			return
		case <-t.C:
		}
		rs.mu.Lock()
		revs := make(map[string]uint64, len(rs.owned))
		for k, o := range rs.owned {
			revs[k] = o.rev
		}
		rs.mu.Unlock()
		// Each renewal waits for the bucket's quorum: many at once, so
		// that a node with many rooms renews them all within a round.
		var wg sync.WaitGroup
		sem := make(chan struct{}, renewals)
		for k, rev := range revs {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				rs.renew(k, rev)
			}()
		}
		wg.Wait()
	}
}

// renew renews the claim of key, last written at rev. A claim another node
// took in between (this node was cut off past the time to live) is given
// up: this node's sockets of the room stay, new ones go to the new owner.
func (rs *Rooms) renew(key string, rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), rs.ttl/3)
	defer cancel()
	next, err := rs.kv.Update(ctx, key, rs.value, rev)
	lost := false
	if err != nil {
		// Expired (a slow round): made again if nobody else has; renewed
		// in between by this node (a takeover's own renewal): kept.
		var e jetstream.KeyValueEntry
		if e, err = rs.kv.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) {
			next, err = rs.kv.Create(ctx, key, rs.value)
		} else if err == nil {
			var c claim
			json.Unmarshal(e.Value(), &c)
			next, lost = e.Revision(), c.Node != rs.node.name
		}
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	o := rs.owned[key]
	switch {
	case o == nil:
	case err == nil && !lost:
		o.rev = max(o.rev, next)
	case lost || errors.Is(err, jetstream.ErrKeyExists):
		rs.log.Warn("fleet: a room's claim was taken by another node; new sockets go there", "room", key)
		delete(rs.owned, key)
		if o.release != nil {
			o.release.Stop()
		}
	default:
		rs.log.Warn("fleet: renewing a room's claim", "room", key, "err", err)
	}
}

// Close stops relaying to this node and releases its rooms' claims (a node
// that dies instead leaves them to expire). The sockets it serves are the
// runtime's to close.
func (rs *Rooms) Close() error {
	rs.once.Do(func() {
		close(rs.stop)
		<-rs.done
		rs.presence.Unsubscribe()
		rs.nodes.Unsubscribe()
		rs.relay.Close()
		rs.mu.Lock()
		srv := rs.srv
		keys := make(map[string]uint64, len(rs.owned))
		for k, o := range rs.owned {
			keys[k] = o.rev
			if o.release != nil {
				o.release.Stop()
			}
		}
		rs.owned = map[string]*owned{}
		rs.mu.Unlock()
		if srv != nil {
			srv.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for k, rev := range keys {
			rs.kv.Delete(ctx, k, jetstream.LastRevision(rev))
		}
	})
	return nil
}

// secretOf decodes a claim's relay secret.
func secretOf(c claim) ([]byte, error) {
	if _, err := hex.DecodeString(c.Secret); err != nil || c.Secret == "" {
		return nil, fmt.Errorf("the claim of node %s has no valid relay secret", c.Node)
	}
	return []byte(c.Secret), nil
}
