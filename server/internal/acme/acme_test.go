package acme_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/internal/acme"
	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/server/status"
	"github.com/arkaweb/arka/tests/pebbletest"
	"github.com/arkaweb/arka/tests/testkit"
)

// Names the tests get certificates for: public-looking (so Arka manages
// them), resolved to 127.0.0.1 by Pebble's test DNS server only.
const (
	nameA = "www.arka-pebble.net"
	nameB = "blog.arka-pebble.net"
)

// env is an Arka server and a Pebble CA, on loopback.
type env struct {
	t      *testing.T
	ca     *pebbletest.CA
	srv    *server.Server
	dir    string // site files and www
	state  string
	http   string // plain listener, "" for none
	https  string
	file   string
	logs   *testkit.LogBuffer
	clock  *atomic.Bool
	closed bool
	email  string
}

type envOptions struct {
	noHTTP          bool // the site has no plain listener
	pebbleNoHTTP    bool // the CA's HTTP-01 check goes to a closed port
	pebbleNoTLS     bool // the CA's TLS-ALPN-01 check goes to a closed port
	validity        time.Duration
	blocked         []string
	names           []string
	state           string // reuse a state directory
	ca              *pebbletest.CA
	http, https     string
	clockNotSynced  bool
	renewalWindow   float64
	extraSiteConfig string
	noEmail         bool
}

func port(t testing.TB, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

func start(t *testing.T, o envOptions) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), logs: &testkit.LogBuffer{}, clock: &atomic.Bool{}}
	e.clock.Store(!o.clockNotSynced)
	if !o.noEmail {
		e.email = "admin@arka-pebble.net"
	}
	e.state = o.state
	if e.state == "" {
		e.state = filepath.Join(t.TempDir(), "state")
	}
	e.http, e.https = o.http, o.https
	if e.https == "" {
		e.https = servertest.FreeAddr(t)
	}
	if e.http == "" && !o.noHTTP {
		e.http = servertest.FreeAddr(t)
	}
	closed := port(t, servertest.FreeAddr(t)) // nothing listens there
	e.ca = o.ca
	if e.ca == nil {
		po := pebbletest.Options{HTTPPort: closed, TLSPort: closed, Validity: o.validity, Blocked: o.blocked}
		if !o.pebbleNoHTTP && e.http != "" {
			po.HTTPPort = port(t, e.http)
		}
		if !o.pebbleNoTLS {
			po.TLSPort = port(t, e.https)
		}
		e.ca = pebbletest.Start(t, po)
	}
	names := o.names
	if names == nil {
		names = []string{nameA}
	}
	os.MkdirAll(filepath.Join(e.dir, "www"), 0o755)
	os.WriteFile(filepath.Join(e.dir, "www", "index.html"), []byte("hello over https\n"), 0o644)
	e.file = filepath.Join(e.dir, "site.toml")
	e.write(names, o.extraSiteConfig)
	// As arka does: Load, then the environment check (which reads
	// ca_root, once).
	sites, err := config.LoadFiles([]string{e.file})
	if err == nil {
		err = config.CheckEnvironment(sites)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.srv = server.New(server.Options{
		StateDir: e.state,
		Logger:   slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ACME: acme.Options{
			RetryMin:           300 * time.Millisecond,
			RetryMax:           2 * time.Second,
			RenewCheckInterval: time.Second,
			RenewalWindowRatio: o.renewalWindow,
			ClockSynced:        e.clock.Load,
		},
	})
	if err := e.srv.Apply(sites); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.stop()
		if t.Failed() {
			t.Logf("arka log:\n%s", e.logs.String())
		}
	})
	return e
}

func (e *env) write(names []string, extra string) {
	e.t.Helper()
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	src := "server_names = [" + strings.Join(quoted, ", ") + "]\n"
	if e.http != "" {
		src += fmt.Sprintf("listen = [%q]\n", e.http)
	}
	src += extra
	src += fmt.Sprintf("[tls]\nlisten = [%q]\nca = %q\nca_root = %q\n", e.https, e.ca.DirectoryURL, e.ca.APIRootFile)
	if e.email != "" {
		src += fmt.Sprintf("email = %q\n", e.email)
	}
	src += "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n"
	src += "[[routes]]\npath = \"/status\"\nhandler = { type = \"status\" }\n"
	if err := os.WriteFile(e.file, []byte(src), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) reload(names []string) {
	e.t.Helper()
	e.write(names, "")
	sites, err := config.LoadFiles([]string{e.file})
	if err == nil {
		err = config.CheckEnvironment(sites)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.srv.Apply(sites); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) stop() {
	if e.closed {
		return
	}
	e.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.srv.Shutdown(ctx)
}

// handshake connects to the TLS listener for name and returns the leaf
// certificate served, and the error of verifying it against Pebble's root.
func (e *env) handshake(name string) (*x509.Certificate, error) {
	cfg := &tls.Config{ServerName: name, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", e.https, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	st := c.ConnectionState()
	leaf := st.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, ic := range st.PeerCertificates[1:] {
		inter.AddCert(ic)
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: e.ca.Roots, Intermediates: inter})
	return leaf, err
}

// waitValid waits until the server presents, for name, a certificate that
// verifies against Pebble's root, and returns it.
func (e *env) waitValid(name string, within time.Duration) *x509.Certificate {
	e.t.Helper()
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		leaf, err := e.handshake(name)
		if err == nil {
			return leaf
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("%s: no verifiable certificate within %v: %v", name, within, last)
	return nil
}

// client is an HTTPS client that verifies against Pebble's root and dials
// the test listener whatever the name.
func (e *env) client() *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: e.ca.Roots},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, e.https)
			},
			ForceAttemptHTTP2: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (e *env) cert(name string) status.Certificate {
	for _, c := range e.srv.Snapshot().Certificates {
		if c.Name == name {
			return c
		}
	}
	e.t.Fatalf("%s is not on the status page: %+v", name, e.srv.Snapshot().Certificates)
	return status.Certificate{}
}

func (e *env) waitCert(name string, within time.Duration, ok func(status.Certificate) bool) status.Certificate {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		c := e.cert(name)
		if ok(c) {
			return c
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: status never got there: %+v", name, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The certificate is obtained by HTTP-01 alone (the CA's TLS-ALPN-01
// check reaches nothing), served at once to a verifying client over
// HTTP/1.1 and HTTP/2, and plain requests are redirected to HTTPS, except
// the challenge path.
func TestHTTP01Only(t *testing.T) {
	e := start(t, envOptions{pebbleNoTLS: true, extraSiteConfig: "hsts = \"max-age=600\"\n"})
	// Serving starts before the certificate exists: self-signed meanwhile.
	if _, err := e.handshake(nameA); err == nil {
		t.Log("certificate was already obtained at the first handshake")
	}
	leaf := e.waitValid(nameA, 30*time.Second)
	if !strings.Contains(leaf.Issuer.CommonName, "Pebble") {
		t.Errorf("issuer %q, want Pebble's intermediate", leaf.Issuer.CommonName)
	}
	if !strings.Contains(e.ca.Log(), "validate w/ HTTP") {
		t.Errorf("Pebble's log shows no http-01 validation")
	}
	c := e.client()
	for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
		if proto == "HTTP/1.1" {
			c.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"http/1.1"}
			c.Transport.(*http.Transport).ForceAttemptHTTP2 = false
			c.Transport.(*http.Transport).TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		} else {
			c = e.client()
		}
		resp, err := c.Get("https://" + nameA + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "hello over https\n" || resp.Proto != proto {
			t.Errorf("%s: %s %s %q", proto, resp.Proto, resp.Status, body)
		}
		if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=600" {
			t.Errorf("%s: Strict-Transport-Security %q", proto, got)
		}
	}
	// ACME sites redirect plain HTTP by default: 301 for GET, 308 for POST.
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/a/b?x=1", "301"},
		{"HEAD", "/", "301"},
		{"POST", "/form", "308"},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+e.http+tc.path, strings.NewReader("x"))
		req.Host = nameA
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		wantLoc := "https://" + nameA + ":" + strconv.Itoa(port(t, e.https)) + tc.path
		if !strings.HasPrefix(resp.Status, tc.want) || resp.Header.Get("Location") != wantLoc {
			t.Errorf("%s %s: %s Location %q, want %s %s", tc.method, tc.path, resp.Status, resp.Header.Get("Location"), tc.want, wantLoc)
		}
		if resp.Header.Get("Strict-Transport-Security") != "" {
			t.Errorf("HSTS sent over plain HTTP (RFC 6797 section 7.2 forbids it)")
		}
	}
	req, _ := http.NewRequest("GET", "http://"+e.http+"/.well-known/acme-challenge/unknown-token", nil)
	req.Host = nameA
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown challenge token: %s, want 404 (not a redirect)", resp.Status)
	}
	// Status page, JSON and Prometheus show the certificate.
	st := e.waitCert(nameA, 5*time.Second, func(c status.Certificate) bool { return c.State == "valid" })
	if st.Issuer == "" || !st.NotAfter.Equal(leaf.NotAfter) || st.NextAttempt.IsZero() || !st.NextAttempt.Before(st.NotAfter) || st.LastError != "" {
		t.Errorf("status: %+v (leaf not after %v)", st, leaf.NotAfter)
	}
	resp, err = e.client().Get("https://" + nameA + "/status?format=prometheus")
	if err != nil {
		t.Fatal(err)
	}
	prom, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `arka_certificate_valid{name="` + nameA + `"} 1`; !strings.Contains(string(prom), want) {
		t.Errorf("prometheus output lacks %s:\n%s", want, prom)
	}
	// Storage: 0700 directories, 0600 files (lock files aside).
	filepath.WalkDir(filepath.Join(e.state, "acme"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		switch {
		case d.IsDir() && fi.Mode().Perm() != 0o700:
			t.Errorf("%s: mode %v, want 0700", p, fi.Mode().Perm())
		case !d.IsDir() && !strings.HasSuffix(p, ".lock") && fi.Mode().Perm() != 0o600:
			t.Errorf("%s: mode %v, want 0600", p, fi.Mode().Perm())
		}
		return nil
	})
}

// The certificate is obtained by TLS-ALPN-01 alone: the site has no plain
// listener at all.
func TestTLSALPN01Only(t *testing.T) {
	e := start(t, envOptions{noHTTP: true})
	leaf := e.waitValid(nameA, 30*time.Second)
	if !strings.Contains(e.logs.String(), "served key authentication certificate") {
		t.Errorf("Arka's log shows no tls-alpn-01 validation")
	}
	if leaf.DNSNames[0] != nameA {
		t.Errorf("names %v", leaf.DNSNames)
	}
	// A client offering only acme-tls/1 for a name with no challenge
	// pending gets no certificate and no HTTP.
	_, err := tls.Dial("tcp", e.https, &tls.Config{ServerName: nameA, InsecureSkipVerify: true, NextProtos: []string{acme.ALPNProto}})
	if err == nil {
		t.Errorf("acme-tls/1 handshake without a pending challenge succeeded")
	}
}

// A certificate that lives a few seconds is renewed by itself, swapped in
// without a reload, and requests made all along never fail.
func TestRenewalWithoutFailedRequests(t *testing.T) {
	e := start(t, envOptions{validity: 12 * time.Second, renewalWindow: 0.5})
	first := e.waitValid(nameA, 30*time.Second)
	c := e.client()
	var fails, n int
	deadline := time.Now().Add(40 * time.Second)
	var renewed *x509.Certificate
	for time.Now().Before(deadline) && renewed == nil {
		resp, err := c.Get("https://" + nameA + "/")
		n++
		if err != nil {
			fails++
			t.Errorf("request %d: %v", n, err)
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				fails++
				t.Errorf("request %d: %s", n, resp.Status)
			}
			if leaf := resp.TLS.PeerCertificates[0]; leaf.SerialNumber.Cmp(first.SerialNumber) != 0 {
				renewed = leaf
			}
		}
		c.CloseIdleConnections() // a new handshake each time, to see the swap
		time.Sleep(50 * time.Millisecond)
	}
	if renewed == nil {
		t.Fatalf("certificate (not after %v) was not renewed within 40 s", first.NotAfter)
	}
	if !renewed.NotAfter.After(first.NotAfter) {
		t.Errorf("renewed certificate ends %v, before the first's %v", renewed.NotAfter, first.NotAfter)
	}
	t.Logf("%d requests, %d failed; renewed %v after issuance", n, fails, time.Since(first.NotBefore).Round(time.Second))
	if !strings.Contains(e.logs.String(), "certificate renewed") {
		t.Errorf("no renewal in the log")
	}
}

// With the CA down at start, a stored certificate serves at once; a name
// without one gets the self-signed certificate and the status page says
// why.
func TestCADownAtStart(t *testing.T) {
	first := start(t, envOptions{})
	leaf := first.waitValid(nameA, 30*time.Second)
	first.stop()
	first.ca.StopAPI()

	e := start(t, envOptions{ca: first.ca, state: first.state, names: []string{nameA, nameB}, http: first.http, https: first.https})
	got := e.waitValid(nameA, 5*time.Second)
	if got.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
		t.Errorf("served serial %v, want the stored %v", got.SerialNumber, leaf.SerialNumber)
	}
	self, err := e.handshake(nameB)
	if err == nil || len(self.Subject.Organization) == 0 || self.Subject.Organization[0] != "Arka self-signed" {
		t.Errorf("%s without a stored certificate: %v, %v; want the self-signed one", nameB, self.Subject, err)
	}
	st := e.waitCert(nameB, 10*time.Second, func(c status.Certificate) bool { return c.LastError != "" })
	if st.State != "error" || st.NextAttempt.IsZero() {
		t.Errorf("status of %s: %+v", nameB, st)
	}
	if a := e.cert(nameA); a.State != "valid" || a.LastError != "" {
		t.Errorf("status of %s: %+v", nameA, a)
	}
}

// A name the CA refuses: the CA's problem detail on the status page, tried
// again later with growing waits, and the server keeps serving.
func TestCARefuses(t *testing.T) {
	e := start(t, envOptions{blocked: []string{nameB}, names: []string{nameA, nameB}})
	e.waitValid(nameA, 30*time.Second)
	st := e.waitCert(nameB, 10*time.Second, func(c status.Certificate) bool { return c.LastError != "" })
	if !strings.Contains(st.LastError, "rejectedIdentifier") || !strings.Contains(st.LastError, "forbidden") {
		t.Errorf("last error %q lacks the CA's problem type and detail", st.LastError)
	}
	if !st.NextAttempt.After(st.LastErrorAt) {
		t.Errorf("next attempt %v is not after the error at %v", st.NextAttempt, st.LastErrorAt)
	}
	// Retried: at least three attempts within a few seconds (waits of
	// 0.3 s doubling, with jitter).
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(e.logs.String(), "could not get a certificate") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("not retried: %d attempts", strings.Count(e.logs.String(), "could not get a certificate"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := e.client().Get("https://" + nameA + "/status?format=json")
	if err != nil {
		t.Fatal(err)
	}
	var snap status.Snapshot
	json.NewDecoder(resp.Body).Decode(&snap)
	resp.Body.Close()
	found := false
	for _, c := range snap.Certificates {
		found = found || c.Name == nameB && strings.Contains(c.LastError, "rejectedIdentifier")
	}
	if !found {
		t.Errorf("status JSON lacks the error of %s: %+v", nameB, snap.Certificates)
	}
	resp, err = e.client().Get("https://" + nameA + "/status")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"<h2>Certificates</h2>", nameA, nameB, "rejectedIdentifier", "Pebble Intermediate"} {
		if resp.StatusCode != 200 || !strings.Contains(string(page), want) {
			t.Errorf("status page (%s) lacks %q", resp.Status, want)
		}
	}
}

// A reload that adds a name obtains it; the name kept is not ordered
// again; a name removed is no longer managed.
func TestReloadAddsName(t *testing.T) {
	e := start(t, envOptions{})
	a := e.waitValid(nameA, 30*time.Second)
	e.reload([]string{nameA, nameB})
	e.waitValid(nameB, 30*time.Second)
	if again, _ := e.handshake(nameA); again.SerialNumber.Cmp(a.SerialNumber) != 0 {
		t.Errorf("%s was ordered again on reload", nameA)
	}
	if n := strings.Count(e.logs.String(), `msg="certificate obtained" `); n != 2 {
		t.Errorf("%d certificates obtained, want 2 (one per name)", n)
	}
	e.reload([]string{nameB})
	for _, c := range e.srv.Snapshot().Certificates {
		if c.Name == nameA {
			t.Errorf("%s still managed after it was removed", nameA)
		}
	}
}

// A stored certificate that does not parse is moved aside and obtained
// again.
func TestCorruptStoredCertificate(t *testing.T) {
	first := start(t, envOptions{})
	first.waitValid(nameA, 30*time.Second)
	first.stop()
	var crt string
	filepath.WalkDir(filepath.Join(first.state, "acme"), func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, nameA+".crt") {
			crt = p
		}
		return nil
	})
	if crt == "" {
		t.Fatal("no stored certificate")
	}
	os.WriteFile(crt, []byte("-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n"), 0o600)

	e := start(t, envOptions{ca: first.ca, state: first.state, http: first.http, https: first.https})
	e.waitValid(nameA, 30*time.Second)
	if m, _ := filepath.Glob(filepath.Dir(crt) + ".corrupt-*"); len(m) != 1 {
		t.Errorf("the unusable certificate was not kept aside: %v", m)
	}
}

// Before the clock is synchronised, nothing is ordered.
func TestWaitsForClock(t *testing.T) {
	e := start(t, envOptions{clockNotSynced: true})
	time.Sleep(1500 * time.Millisecond)
	if st := e.cert(nameA); st.State != "waiting for clock" || !e.srv.Snapshot().ClockWaiting {
		t.Errorf("status %+v, want waiting for clock", st)
	}
	if strings.Contains(e.ca.Log(), "new-order") || strings.Contains(e.ca.Log(), "POST /order-plz") {
		t.Errorf("an order was made before the clock was synchronised")
	}
	e.clock.Store(true)
	e.waitValid(nameA, 30*time.Second)
}

// Without an email, nothing is asked on the terminal (certmagic prompts
// in its "interactive" mode) and the certificate is obtained.
func TestNoEmailNoPrompt(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	e := start(t, envOptions{noEmail: true})
	e.waitValid(nameA, 30*time.Second)
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	if len(out) > 0 {
		t.Errorf("written to standard output: %q", out)
	}
}

// A stored ACME account whose key or registration does not decode (a torn
// write, a bad SD card) is moved aside and a new account registered: an
// account holds nothing that cannot be made again, and the appliance has
// no shell to delete it.
func TestCorruptStoredAccount(t *testing.T) {
	first := start(t, envOptions{})
	first.waitValid(nameA, 30*time.Second)
	first.stop()
	var keys []string
	filepath.WalkDir(filepath.Join(first.state, "acme"), func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, ".key") {
			keys = append(keys, p) // the account's key and the certificate's
		}
		return nil
	})
	var users string
	for _, k := range keys {
		if strings.Contains(k, string(filepath.Separator)+"users"+string(filepath.Separator)) {
			users = filepath.Dir(k)
		}
		if err := os.WriteFile(k, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if users == "" {
		t.Fatalf("no account key among %v", keys)
	}
	e := start(t, envOptions{ca: first.ca, state: first.state, http: first.http, https: first.https})
	e.waitValid(nameA, 30*time.Second)
	if m, _ := filepath.Glob(users + ".corrupt-*"); len(m) != 1 {
		t.Errorf("the unusable account was not kept aside: %v", m)
	}
}
