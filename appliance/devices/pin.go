package devices

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
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Fingerprint is the SHA-256 of a certificate's public key (its
// SubjectPublicKeyInfo), in hex: it stays the same when the device
// renews the certificate with the same key.
func Fingerprint(cert *x509.Certificate) string {
	s := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(s[:])
}

// CertChangedError says the device presents another key than the one
// pinned on first use.
type CertChangedError struct {
	Name, PinFile, Pinned, Got string
}

func (e *CertChangedError) Error() string {
	return fmt.Sprintf("the certificate of device %q changed: pinned key %s, now %s.\n"+
		"  If you wrote a new image to its card (or replaced the device), accept the new one by deleting %s and trying again.\n"+
		"  Otherwise something between you and the device may be intercepting the connection: nothing was sent",
		e.Name, short(e.Pinned), short(e.Got), e.PinFile)
}

func short(fp string) string {
	if len(fp) > 16 {
		return "SHA256:" + fp[:16] + "…"
	}
	return fp
}

// PinnedClient returns an HTTP client for the device's HTTPS API that
// trusts the device's self-signed certificate the way SSH trusts host
// keys: the first connection records the key's fingerprint in the pin
// file (announce is called with it), later connections must present the
// same key or fail with CertChangedError before anything is sent.
func PinnedClient(name, pinFile string, announce func(fingerprint string)) *http.Client {
	var mu sync.Mutex
	verify := func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the device presented no certificate")
		}
		got := Fingerprint(cs.PeerCertificates[0])
		mu.Lock()
		defer mu.Unlock()
		b, err := os.ReadFile(pinFile)
		if errors.Is(err, os.ErrNotExist) {
			if err := WriteFile(pinFile, []byte(got+"\n")); err != nil {
				return fmt.Errorf("pinning the device's certificate: %v", err)
			}
			if announce != nil {
				announce(got)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if pinned := strings.TrimSpace(string(b)); pinned != got {
			return &CertChangedError{Name: name, PinFile: pinFile, Pinned: pinned, Got: got}
		}
		return nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{
		// The certificate is self-signed: it is checked against the pin
		// below instead of a CA (crypto/tls still verifies the handshake
		// signature with the presented key).
		InsecureSkipVerify: true,
		VerifyConnection:   verify,
	}
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	return &http.Client{Transport: tr}
}

// DeviceCert loads the device's HTTPS certificate from dir (cert.pem,
// key.pem), creating a self-signed one for hostname (and hostname.local)
// on first use: an ECDSA P-256 key, valid from the current clock for 20
// years (the client pins the key, not the dates).
func DeviceCert(dir, hostname string) (tls.Certificate, error) {
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if c, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	now := time.Now().Add(-time.Hour)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hostname + " (Arka appliance update API)"},
		DNSNames:     []string{hostname, hostname + ".local"},
		NotBefore:    now,
		NotAfter:     now.AddDate(20, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	if err := WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})); err != nil {
		return tls.Certificate{}, err
	}
	if err := WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(certFile, keyFile)
}

// ProbeFingerprint connects to the device's HTTPS API at hostport, reads
// the fingerprint of the key its certificate presents (Fingerprint), and
// closes the connection: nothing is sent, so a first use can be confirmed
// before the password travels. timeout bounds the connection and the TLS
// handshake.
func ProbeFingerprint(hostport string, timeout time.Duration) (string, error) {
	d := &net.Dialer{Timeout: timeout}
	conn, err := tls.DialWithDialer(d, "tcp", hostport, &tls.Config{InsecureSkipVerify: true}) // the person checks the key
	if err != nil {
		return "", err
	}
	defer conn.Close()
	cs := conn.ConnectionState()
	if len(cs.PeerCertificates) == 0 {
		return "", errors.New("the device presented no certificate")
	}
	return Fingerprint(cs.PeerCertificates[0]), nil
}
