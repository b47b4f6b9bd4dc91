// Package pebbletest runs Pebble, Let's Encrypt's test ACME CA
// (github.com/letsencrypt/pebble/v2), inside a test process on loopback,
// with its challenge test DNS server (github.com/letsencrypt/challtestsrv)
// answering every name with 127.0.0.1, so a test's ACME client gets real
// certificates for public-looking names without reaching the internet.
package pebbletest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"
	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	"github.com/arkaweb/arka/tests/testkit"
)

// Options configure a CA.
type Options struct {
	// HTTPPort and TLSPort are where Pebble's validation authority checks
	// HTTP-01 and TLS-ALPN-01 challenges (on 127.0.0.1); a port nobody
	// listens on makes that challenge fail.
	HTTPPort, TLSPort int
	// Validity of issued certificates (default Pebble's, 90 days); whole
	// seconds.
	Validity time.Duration
	// Blocked names are refused by the CA (rejectedIdentifier).
	Blocked []string
}

// CA is a running Pebble.
type CA struct {
	// DirectoryURL is the ACME directory (RFC 8555 section 7.1.1).
	DirectoryURL string
	// APIRootFile is a PEM file with the certificate of the ACME API's
	// HTTPS server: an ACME client's ca_root.
	APIRootFile string
	// Roots trusts the certificates Pebble issues (its root, fetched from
	// the management API); RootFile is that root as a PEM file (curl
	// --cacert).
	Roots    *x509.CertPool
	RootFile string
	// DNS is the challenge test DNS server Pebble resolves names with.
	DNS *challtestsrv.ChallSrv

	api, mgmt *httptest.Server
	logs      *testkit.LogBuffer
}

// Start runs a CA until the test ends.
func Start(t testing.TB, o Options) *CA {
	t.Helper()
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")      // validate at once, not after 0-5 s
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0") // no deliberate badNonce errors
	t.Setenv("PEBBLE_AUTHZREUSE", "0")      // every order validates its challenge
	t.Setenv("PEBBLE_VA_ALWAYS_VALID", "")  // the challenges are really checked
	logs := &testkit.LogBuffer{}
	lg := log.New(logs, "pebble ", log.Lmicroseconds)

	dnsAddr := testkit.FreeAddr(t)
	dns, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{dnsAddr}, Log: lg})
	if err != nil {
		t.Fatal(err)
	}
	dns.SetDefaultDNSIPv4("127.0.0.1")
	dns.SetDefaultDNSIPv6("")
	go dns.Run()
	t.Cleanup(dns.Shutdown)

	store := db.NewMemoryStore()
	for _, b := range o.Blocked {
		store.AddBlockedDomain(b)
	}
	profiles := map[string]ca.Profile{"default": {Description: "test", ValidityPeriod: uint64(o.Validity / time.Second)}}
	c := &CA{DNS: dns, logs: logs}
	authority := ca.New(lg, store, "", "ecdsa", 0, 1, profiles)
	vaImpl := va.New(lg, o.HTTPPort, o.TLSPort, false, dnsAddr, store)
	front := wfe.New(lg, store, vaImpl, authority, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	c.api = httptest.NewTLSServer(front.Handler())
	c.api.Config.ErrorLog = lg
	t.Cleanup(c.api.Close)
	c.mgmt = httptest.NewTLSServer(front.ManagementHandler())
	t.Cleanup(c.mgmt.Close)
	c.DirectoryURL = c.api.URL + wfe.DirectoryPath

	c.APIRootFile = filepath.Join(t.TempDir(), "pebble-api.pem")
	pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.api.Certificate().Raw})
	if err := os.WriteFile(c.APIRootFile, pemData, 0o644); err != nil {
		t.Fatal(err)
	}
	// The issuing root, from the management API, as a test would from
	// `GET /roots/0` of a Pebble binary.
	resp, err := c.mgmt.Client().Get(c.mgmt.URL + wfe.RootCertPath + "0")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.Roots = x509.NewCertPool()
	if !c.Roots.AppendCertsFromPEM(root) {
		t.Fatalf("pebble root: %q", root)
	}
	c.RootFile = filepath.Join(filepath.Dir(c.APIRootFile), "pebble-root.pem")
	if err := os.WriteFile(c.RootFile, root, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pebble log:\n%s", logs.String())
		}
	})
	return c
}

// Log is what Pebble and its DNS server logged so far.
func (c *CA) Log() string { return c.logs.String() }

// Client returns a TLS configuration that verifies servers against the
// CA's root, for serverName.
func (c *CA) Client(serverName string) *tls.Config {
	return &tls.Config{RootCAs: c.Roots, ServerName: serverName}
}

// StopAPI closes the ACME API: the CA is down from then on (its directory
// URL refuses connections).
func (c *CA) StopAPI() {
	c.api.CloseClientConnections()
	c.api.Close()
}
