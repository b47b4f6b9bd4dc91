package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// storeSelfSigned writes a self-signed certificate for localhost valid
// from notBefore to notAfter where selfSigned looks for it.
func storeSelfSigned(t *testing.T, dir string, notBefore, notAfter time.Time) *big.Int {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial := big.NewInt(time.Now().UnixNano())
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: notBefore, NotAfter: notAfter, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	data := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})...)
	sum := sha256.Sum256([]byte("localhost"))
	file := filepath.Join(dir, "tls", "self-signed-"+hex.EncodeToString(sum[:6])+".pem")
	os.MkdirAll(filepath.Dir(file), 0o700)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return serial
}

// TestSelfSignedValidity: a stored self-signed certificate is reused only
// while the clock lies inside its validity; one made under a clock that
// was ahead (valid 2069 to 2080) or one about to expire is replaced.
func TestSelfSignedValidity(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name      string
		from, to  time.Time
		wantReuse bool
	}{
		{"valid", now.Add(-time.Hour), now.AddDate(5, 0, 0), true},
		{"made under a clock ahead", time.Date(2069, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2080, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"expiring", now.AddDate(-1, 0, 0), now.Add(24 * time.Hour), false},
	} {
		dir := t.TempDir()
		serial := storeSelfSigned(t, dir, c.from, c.to)
		got, err := selfSigned(dir, []string{"localhost"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		reused := got.Leaf.SerialNumber.Cmp(serial) == 0
		if reused != c.wantReuse {
			t.Errorf("%s: reused %v, want %v", c.name, reused, c.wantReuse)
		}
		if !reused && (got.Leaf.NotBefore.After(now) || got.Leaf.NotAfter.Before(now.AddDate(9, 0, 0))) {
			t.Errorf("%s: new certificate valid %s to %s", c.name, got.Leaf.NotBefore, got.Leaf.NotAfter)
		}
	}
}
