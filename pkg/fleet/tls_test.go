package fleet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// testCA makes a CA and, for each name, a certificate it signed for
// 127.0.0.1, usable by a route's both ends.
func testCA(t *testing.T, n int) (*x509.CertPool, []tls.Certificate) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test fleet CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	var certs []tls.Certificate
	for i := range n {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: fmt.Sprintf("n%d", i)},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k})
	}
	return pool, certs
}

// TestRoutesOverTLS: three nodes whose routes use TLS, each verifying the
// others against the fleet's CA, share a bucket.
func TestRoutesOverTLS(t *testing.T) {
	pool, certs := testCA(t, 3)
	nodes := joinAll(t, 3, func(i int, addrs []string) Options {
		cfg := &tls.Config{Certificates: certs[i : i+1], RootCAs: pool, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
		return Options{Name: fmt.Sprintf("n%d", i), Listen: addrs[i], Peers: others(addrs, i), Dir: t.TempDir(), TLS: cfg}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := nodes[0].KeyValue(ctx, jetstream.KeyValueConfig{Bucket: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	c, err := nodes[2].KeyValue(ctx, jetstream.KeyValueConfig{Bucket: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := c.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("node 2 read %v, %v", e, err)
	}
}
