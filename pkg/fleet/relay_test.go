package fleet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// relayThrough starts an owner whose socket handler is serve, and a relay
// in front of it that pipes each connection to the owner (as carry does,
// without the preamble); it returns the relay's address.
func relayThrough(t *testing.T, serve func(*websocket.Conn)) string {
	t.Helper()
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		serve(ws)
	}))
	t.Cleanup(owner.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", owner.Listener.Addr().String())
			if err != nil {
				down.Close()
				continue
			}
			go pipe(down, up)
		}
	}()
	return ln.Addr().String()
}

// closeOf reads ws until its end and returns the close code.
func closeOf(t *testing.T, ws *websocket.Conn) int {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			t.Fatalf("the socket ended without a close: %v", err)
		}
	}
}

// An owner whose connection ends between two frames (its node died) gives
// the relayed player the going-away close, whatever the frames' sizes; an
// owner's own close passes through unchanged.
func TestRelayGoesAwayWhenTheOwnerDies(t *testing.T) {
	for _, sizes := range [][]int{{}, {3}, {125, 126, 1000, 70000, 5}} {
		addr := relayThrough(t, func(ws *websocket.Conn) {
			for _, n := range sizes {
				ws.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("x", n)))
			}
			ws.NetConn().Close() // no close frame
		})
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if code := closeOf(t, ws); code != websocket.CloseGoingAway {
			t.Errorf("after frames of %v the player got %d, want 1001", sizes, code)
		}
		ws.Close()
	}
	addr := relayThrough(t, func(ws *websocket.Conn) {
		ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4003, "bye"))
		ws.NetConn().Close()
	})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if code := closeOf(t, ws); code != 4003 {
		t.Errorf("the owner's close came through as %d, want 4003", code)
	}
}

// testTLS is a TLS config for the relay between nodes on loopback: one
// self-signed certificate for 127.0.0.1, which each side shows and trusts.
func testTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fleet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		RootCAs: pool, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

// A socket of a room another node owns is carried to the owner's relay, in
// the clear or over TLS, and served there as a relayed request from the
// player's address (the preamble's, not the relaying node's).
func TestRelayCarriesASocketToTheOwner(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", secure), func(t *testing.T) {
			var cfg *tls.Config
			if secure {
				cfg = testTLS(t)
			}
			nodes := joinFleet(t, 2)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var rooms []*Rooms
			for _, n := range nodes {
				rs, err := n.Rooms(ctx, RoomsOptions{Listen: "127.0.0.1:0", TTL: time.Minute, TLS: cfg})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rs.Close() })
				rooms = append(rooms, rs)
			}
			go rooms[0].Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				relayed := r.Context().Value(relayedKey{}) != nil
				ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
				if err != nil {
					return
				}
				defer ws.Close()
				_, msg, _ := ws.ReadMessage()
				ws.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf("%s relayed=%v %s", r.RemoteAddr, relayed, msg)))
			}))
			const key = "a.example/arena/r1"
			if c, _, err := rooms[0].claim(ctx, key); c != nil || err != nil {
				t.Fatalf("node 0's claim: %+v, %v", c, err)
			}
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, served := rooms[1].Enter(w, r, key, 0); !served {
					http.Error(w, "served by the wrong node", http.StatusInternalServerError)
				}
			}))
			defer front.Close()
			ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(front.URL, "http")+"/arena?room=r1",
				http.Header{"X-Forwarded-For": {"203.0.113.9"}})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			ws.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard
			ws.WriteMessage(websocket.TextMessage, []byte("hi"))
			if _, got, err := ws.ReadMessage(); err != nil || string(got) != "203.0.113.9:0 relayed=true hi" {
				t.Fatalf("the owner answered %q, %v", got, err)
			}
		})
	}
}
