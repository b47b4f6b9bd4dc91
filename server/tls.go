package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/internal/atomicfile"
)

// selfSignedNames are the names of a generated certificate for a site that
// lists no server_names.
var selfSignedNames = []string{"localhost", "127.0.0.1", "::1"}

// selfSigned returns a self-signed certificate for names, reading it from
// stateDir/tls when one was generated before (and still covers names and
// is usable at now, see selfSignedUsable), else generating an ECDSA P-256
// certificate valid from an hour before now for ten years and storing
// certificate and key in one PEM file of mode 0600.
//
// A certificate that cannot be stored (the state directory full, read-only
// or not a directory) is still returned, made in memory, with an error
// wrapping errNotStored that says why: the caller serves it and warns (a
// new one is made at each start until it can be stored). An error with a
// nil certificate means none could be made.
func selfSigned(stateDir string, names []string, now time.Time) (*tls.Certificate, error) {
	if len(names) == 0 {
		names = selfSignedNames
	}
	names = append([]string(nil), names...)
	sort.Strings(names)
	sum := sha256.Sum256([]byte(strings.Join(names, "\n")))
	dir := filepath.Join(stateDir, "tls")
	file := filepath.Join(dir, "self-signed-"+hex.EncodeToString(sum[:6])+".pem")
	if data, err := os.ReadFile(file); err == nil {
		if c, err := tls.X509KeyPair(data, data); err == nil && selfSignedUsable(&c, now) {
			return &c, nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: names[0], Organization: []string{"Arka self-signed"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})...)
	c, err := tls.X509KeyPair(data, data)
	if err != nil {
		return nil, err
	}
	err = os.MkdirAll(dir, 0o700)
	if err == nil {
		err = atomicfile.Write(file, data, 0o600)
	}
	if err != nil {
		return &c, fmt.Errorf("%w in %s: %w", errNotStored, dir, err)
	}
	return &c, nil
}

// errNotStored is wrapped by selfSigned's error beside a certificate it
// made but could not store.
var errNotStored = errors.New("self-signed certificate could not be stored")

// warnNotStored logs selfSigned's errNotStored for the site file site.
func (s *Server) warnNotStored(site string, err error) {
	s.log.Warn("serving a self-signed certificate made in memory; a new one is made at each start until it can be stored", "site", site, "err", err)
}

// selfSignedUsable reports whether a self-signed certificate may be
// served at now: now lies inside its validity (a certificate made while
// the clock was wrong, not yet valid by the right clock, is not) and more
// than a week of it is left.
func selfSignedUsable(c *tls.Certificate, now time.Time) bool {
	return c.Leaf != nil && !now.Before(c.Leaf.NotBefore) && c.Leaf.NotAfter.Sub(now) > 7*24*time.Hour
}

// LoadCertificate loads the PEM certificate chain and key a site names
// (tls.cert and tls.key; nil, nil when it names none). It is the one place
// Arka reads them: the server calls it once per site when it builds a
// configuration (for `arka -t` too). An error is a config.Errors saying
// which file and why, located where the mistake is: at tls.cert for a
// certificate that cannot be read or parsed, at tls.key for a key that
// cannot be read or parsed and for a key that is not the certificate's
// (naming the certificate's line).
func LoadCertificate(cs *config.Site) (*tls.Certificate, error) {
	if cs.TLS.Cert == "" {
		return nil, nil
	}
	at := func(path, msg string) error {
		line, col := cs.ValuePosition(path)
		return config.Errors{{File: cs.File, Line: line, Col: col, Msg: msg}}
	}
	certErr := func(err error) error {
		return at("tls.cert", fmt.Sprintf("cannot load certificate %s with key %s: %s", cs.TLS.Cert, cs.TLS.Key, fileErr(err)))
	}
	keyErr := func(err error) error {
		return at("tls.key", fmt.Sprintf("cannot load key %s for certificate %s: %s", cs.TLS.Key, cs.TLS.Cert, fileErr(err)))
	}
	certPEM, err := os.ReadFile(cs.TLS.Cert)
	if err != nil {
		return nil, certErr(err)
	}
	keyPEM, err := os.ReadFile(cs.TLS.Key)
	if err != nil {
		return nil, keyErr(err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err == nil {
		return &c, nil
	}
	// crypto/tls checks the certificate first, then the key, then that
	// they belong together; its messages say which input failed.
	switch msg := err.Error(); {
	case strings.Contains(msg, "certificate input"):
		return nil, certErr(err)
	case strings.Contains(msg, "does not match"):
		line, _ := cs.ValuePosition("tls.cert")
		return nil, at("tls.key", fmt.Sprintf("key %s does not match certificate %s (line %d): %s", cs.TLS.Key, cs.TLS.Cert, line, fileErr(err)))
	case strings.Contains(msg, "key input"), strings.Contains(msg, "private key"):
		return nil, keyErr(err)
	}
	return nil, certErr(err) // the certificate did not parse (x509)
}

// fileErr is err's text without the package prefix crypto/tls adds, and
// for a file that cannot be read "path: why".
func fileErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: %v", pe.Path, pe.Err)
	}
	return strings.TrimPrefix(err.Error(), "tls: ")
}
