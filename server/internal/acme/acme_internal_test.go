package acme

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/mholt/acmez/v3/acme"
)

func TestBackoff(t *testing.T) {
	m := New(Options{StateDir: t.TempDir(), RetryMin: time.Second, RetryMax: 8 * time.Second, ClockSynced: func() bool { return true }})
	defer m.Close()
	for n, base := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 9: 8 * time.Second} {
		for range 20 {
			d := m.backoff(n, errors.New("x"))
			if d < base || d > base+base/4 {
				t.Errorf("attempt %d: %v, want %v plus up to 25%%", n, d, base)
			}
		}
	}
	// A rate-limited CA's "retry after" wins over a shorter backoff.
	now := time.Now().UTC()
	p := acme.Problem{Type: acme.ProblemTypeRateLimited,
		Detail: fmt.Sprintf("too many certificates (5) already issued for this exact set of identifiers in the last 168h0m0s, retry after %s UTC: see https://letsencrypt.org/docs/rate-limits/", now.Add(3*time.Hour).Format(time.DateTime))}
	if d := m.backoff(1, fmt.Errorf("obtain: %w", p)); d < 2*time.Hour+59*time.Minute || d > 3*time.Hour {
		t.Errorf("rate-limited backoff %v, want about 3h", d)
	}
	if d, ok := retryAfter(acme.Problem{Type: acme.ProblemTypeRateLimited, Detail: "slow down"}, now); !ok || d != time.Hour {
		t.Errorf("rate limit without a time: %v %v, want 1h", d, ok)
	}
	if _, ok := retryAfter(acme.Problem{Type: acme.ProblemTypeMalformed}, now); ok {
		t.Error("a malformed problem is not a rate limit")
	}
}

func TestErrText(t *testing.T) {
	p := acme.Problem{Type: "urn:ietf:params:acme:error:rejectedIdentifier", Detail: "forbidden by policy"}
	if got := errText(fmt.Errorf("[x] Obtain: %w", p)); got != "rejectedIdentifier: forbidden by policy" {
		t.Errorf("errText = %q", got)
	}
}

// BenchmarkCertificate is the cost the TLS handshake of a managed name
// pays for the lookup (compare a TLS handshake: hundreds of µs).
func BenchmarkCertificate(b *testing.B) {
	m := New(Options{StateDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler), ClockSynced: func() bool { return false }})
	defer m.Close()
	const name = "www.arka-web.org"
	if err := m.Apply([]Site{{Names: []string{name}, CA: "https://127.0.0.1:1/dir"}}); err != nil {
		b.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	leaf, _ := x509.ParseCertificate(der)
	st := (*m.served.Load())[name]
	if _, err := st.g.magic.CacheUnmanagedTLSCertificate(context.Background(), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil); err != nil {
		b.Fatal(err)
	}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	hello := &tls.ClientHelloInfo{ServerName: name, SupportedProtos: []string{"h2", "http/1.1"}, Conn: c1}
	if c, ok, err := m.Certificate(hello); !ok || err != nil || c.Leaf == nil {
		b.Fatalf("Certificate: %v %v", ok, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Certificate(hello)
	}
}

// On a machine whose clock is past the floor and not a gokrazy appliance,
// the clock is trusted.
func TestClockSyncedHere(t *testing.T) {
	if onGokrazy() || time.Now().Before(clockFloor) {
		t.Skip("not a PC with a set clock")
	}
	if !ClockSynced() {
		t.Error("ClockSynced() = false on a PC whose clock is set")
	}
}
