// Package deploy prepares a host for hoster-server ([Provision], behind
// hoster-server init): the directory layout, the API token, the ten-year
// self-signed certificate for the bare IP, the Caddyfile that puts Caddy in
// front (TLS for the IP with that certificate, on-demand TLS for game domains
// gated by the ask endpoint, every request proxied to the loopback server,
// the access log rolled as the contract says) and the systemd unit.
package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"strings"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/atomicfile"
)

// CertLifetime is the life of the bare-IP certificate.
const CertLifetime = 10 * 365 * 24 * time.Hour

// NewToken returns a fresh API token: 32 random bytes as hex.
func NewToken() (string, error) {
	b := make([]byte, api.TokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ErrTokenExists is returned by WriteToken when a token file is already
// there: a token is never overwritten (rotating one is a deliberate act).
var ErrTokenExists = errors.New("a token file already exists")

// WriteToken creates path holding token, mode 0600, failing with
// ErrTokenExists when the file exists, even against another init racing it;
// a crash never leaves a half-written token.
func WriteToken(path, token string) error {
	err := atomicfile.CreateFile(path, []byte(token+"\n"), 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ErrTokenExists
	}
	if err != nil {
		return fmt.Errorf("writing the token: %w", err)
	}
	return nil
}

// Certificate is a PEM certificate and its key.
type Certificate struct {
	CertPEM []byte // one CERTIFICATE block
	KeyPEM  []byte // one EC PRIVATE KEY block
}

// NewIPCertificate makes a self-signed ECDSA P-256 certificate for ip, valid
// from an hour ago for CertLifetime, usable as a TLS server certificate.
func NewIPCertificate(ip net.IP, now time.Time) (Certificate, error) {
	if ip == nil {
		return Certificate{}, errors.New("making the certificate: no IP address")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certificate{}, fmt.Errorf("making the certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return Certificate{}, fmt.Errorf("making the certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: ip.String(), Organization: []string{"hoster"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CertLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IPAddresses:           []net.IP{ip},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Certificate{}, fmt.Errorf("making the certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Certificate{}, fmt.Errorf("encoding the certificate key: %w", err)
	}
	return Certificate{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// Fingerprint returns the SHA-256 fingerprint of the first certificate in a
// PEM block, as lowercase hex: the value of hoster-config-certSha256.
func Fingerprint(certPEM []byte) (string, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", errors.New("reading the certificate: no PEM certificate found")
	}
	sum := sha256.Sum256(block.Bytes)
	return hex.EncodeToString(sum[:]), nil
}

// CertIP returns the IP address a PEM certificate was made for, or nil.
func CertIP(certPEM []byte) net.IP {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil || len(c.IPAddresses) == 0 {
		return nil
	}
	return c.IPAddresses[0]
}

// quote makes s a single Caddyfile token.
func quote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\"'`{}#") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
