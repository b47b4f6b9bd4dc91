// Package testkit holds the helpers every package's tests share: a
// throwaway TLS certificate, a loopback address, and a log buffer that is
// safe to write from the code under test while the test reads it. It
// imports nothing of Arka, so any test (config's own included) can use it.
package testkit

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cert makes a self-signed ECDSA P-256 certificate for names, 127.0.0.1
// and ::1, valid from an hour ago for a day, and returns it PEM-encoded
// (certificate, then key) and ready for a tls.Config.
func Cert(t testing.TB, names ...string) (certPEM, keyPEM []byte, cert tls.Certificate) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "arka test"},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames:    names,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, cert
}

// WriteCert writes a Cert for names to dir/cert.pem and dir/key.pem
// (creating dir) and returns their paths.
func WriteCert(t testing.TB, dir string, names ...string) (certFile, keyFile string) {
	t.Helper()
	c, k, _ := Cert(t, names...)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, c, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, k, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// Listen binds a TCP socket on 127.0.0.1 with a port the kernel picks,
// closed when the test ends. Prefer it to FreeAddr: nothing else can take
// the port between choosing and using it.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// FreeAddr returns "127.0.0.1:port" with a port that was free a moment
// ago, for what must bind the address itself (another process, a site
// file). Another program may take the port before it is bound again.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// LogBuffer collects log output: safe to write from other goroutines (or
// a child process's output copier) while the test reads it.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// OpenFiles counts this process's open files whose path contains name
// (e.g. "arka-response-", the spool's unlinked files) and sums their sizes
// in bytes. It skips the test where /proc/self/fd is missing.
func OpenFiles(t testing.TB, name string) (files int, bytes int64) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	for _, e := range ents {
		p := filepath.Join("/proc/self/fd", e.Name())
		if l, err := os.Readlink(p); err == nil && strings.Contains(l, name) {
			if fi, err := os.Stat(p); err == nil {
				files++
				bytes += fi.Size()
			}
		}
	}
	return files, bytes
}
