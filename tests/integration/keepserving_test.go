package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/device/supervise"
	"github.com/arkaweb/arka/server/status"
	"github.com/arkaweb/arka/tests/integration/harness"
)

// Appliance mode (arka -appliance): Arka never exits because of its
// configuration. These tests run the real binary the way arka-init does.

type applianceEnv struct {
	dir, sites, state, www string
}

func newApplianceEnv(t *testing.T) *applianceEnv {
	dir := t.TempDir()
	e := &applianceEnv{dir: dir, sites: filepath.Join(dir, "sites"), state: filepath.Join(dir, "state"), www: filepath.Join(dir, "www")}
	for _, d := range []string{e.sites, e.state, e.www} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *applianceEnv) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.sites, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// args are arka's arguments; the fallback page listens on a free port
// (never the default :80 and :443) unless extra names others.
func (e *applianceEnv) args(t *testing.T, extra ...string) []string {
	return append([]string{"-appliance", "-c", e.sites, "-state", e.state,
		"-fallback-listen", harness.FreeAddr(t), "-fallback-tls-listen", ""}, extra...)
}

// readiness reads the readiness file, waiting up to 10 s for it to be
// written: Arka serves from inside the load that writes it last.
func (e *applianceEnv) readiness(t *testing.T) status.Readiness {
	t.Helper()
	return e.waitReadiness(t, "written", func(status.Readiness) bool { return true })
}

// waitReadiness waits up to 10 s for the readiness file to satisfy ok.
func (e *applianceEnv) waitReadiness(t *testing.T, what string, ok func(status.Readiness) bool) status.Readiness {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var r status.Readiness
		b, err := os.ReadFile(filepath.Join(e.state, "ready.json"))
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err == nil && ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("readiness never %s; last: %v\n%s", what, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tlsSite is the default site a.test on plainAddr and, with cert and key,
// tlsAddr: a status page at /status and static files from www.
func tlsSite(plainAddr, tlsAddr, cert, key, www string) string {
	return `default = true
server_names = ["a.test"]
listen = ["` + plainAddr + `"]
[tls]
listen = ["` + tlsAddr + `"]
cert = "` + cert + `"
key = "` + key + `"
[[routes]]
path = "/status"
handler = { type = "status" }
[[routes]]
path = "/"
handler = { type = "static", root = "` + www + `" }
`
}

// reload sends arka SIGHUP and waits up to 10 s for the reload's verdict:
// one more line of output with verdict ("configuration reloaded", "reload
// failed", ...) than before the signal, so an earlier reload's line does
// not count.
func reload(t *testing.T, p *harness.Proc, verdict string) {
	t.Helper()
	before := strings.Count(p.Output(), verdict)
	p.Signal(syscall.SIGHUP)
	for end := time.Now().Add(10 * time.Second); strings.Count(p.Output(), verdict) <= before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %q after SIGHUP:\n%s", verdict, p.Output())
		}
	}
}

func fetch(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func statusJSON(t *testing.T, url string) statusPage {
	t.Helper()
	h1, _ := harness.Clients()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := h1.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s statusPage
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("status JSON: %v", err)
	}
	return s
}

const goodSite = `listen = ["ADDR"]
[[routes]]
path = "/status"
handler = { type = "status" }
[[routes]]
path = "/"
handler = { type = "static", root = "WWW" }
`

func site(tmpl, addr, www string) string {
	return strings.NewReplacer("ADDR", addr, "WWW", www).Replace(tmpl)
}

// TestApplianceFallbackPage: a site file with a mistake and no
// configuration that loaded before: Arka serves the fallback page (503,
// naming file:line:col) and the status page, reports itself not ready,
// and serves the site once it is corrected and SIGHUP arrives. Without
// -appliance the same file makes arka exit 1 with the same line.
func TestApplianceFallbackPage(t *testing.T) {
	e := newApplianceEnv(t)
	addr, fb := harness.FreeAddr(t), harness.FreeAddr(t)
	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("the site\n"), 0o644)
	broken := site(goodSite, addr, e.www) + "listen_everywhere = true\n"
	e.write(t, "a.toml", broken)
	want := filepath.Join(e.sites, "a.toml") + ":8:1: "

	code, out := harness.Run(t, "-c", e.sites, "-state", e.state)
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("by hand: exit %d, output %q; want exit 1 and %q", code, out, want)
	}

	p := harness.Start(t, nil, e.args(t, "-fallback-listen", fb), fb)
	h1, _ := harness.Clients()
	code, body := fetch(t, h1, "http://"+fb+"/any/page")
	if code != 503 || !strings.Contains(body, want) || !strings.Contains(body, "listen_everywhere") {
		t.Errorf("fallback page: %d %q", code, body)
	}
	s := statusJSON(t, "http://"+fb+"/status")
	if s.Serving != status.ServingFallback || len(s.Problems) == 0 || !strings.HasPrefix(s.Problems[0], want) {
		t.Errorf("status page: serving %q, problems %q", s.Serving, s.Problems)
	}
	r := e.readiness(t)
	if r.Ready || r.Config != status.ServingFallback || r.PID != p.Cmd.Process.Pid || len(r.Problems) == 0 {
		t.Errorf("readiness %+v", r)
	}
	if !strings.Contains(p.Output(), want) {
		t.Errorf("the log does not show the mistake:\n%s", p.Output())
	}

	// Corrected, then SIGHUP: the site serves; the fallback address is
	// released.
	e.write(t, "a.toml", site(goodSite, addr, e.www))
	p.Signal(syscall.SIGHUP)
	e.waitReadiness(t, "ready after the correction", func(r status.Readiness) bool { return r.Ready && r.Config == status.ServingAsWritten })
	if code, body := fetch(t, h1, "http://"+addr+"/"); code != 200 || body != "the site\n" {
		t.Errorf("after SIGHUP: %d %q", code, body)
	}
	if c, err := net.DialTimeout("tcp", fb, time.Second); err == nil {
		c.Close()
		t.Errorf("the fallback address still answers after the site loaded")
	}
	if p.Exited() {
		t.Fatal("arka exited")
	}
}

// TestApplianceLastGood: a site that loaded once is kept in the state
// directory; when a restart finds the file broken, that copy serves, the
// status page shows the mistake, SIGHUP with the mistake still there keeps
// it serving, and after a correction the new file serves.
func TestApplianceLastGood(t *testing.T) {
	e := newApplianceEnv(t)
	addr := harness.FreeAddr(t)
	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("v1\n"), 0o644)
	e.write(t, "a.toml", site(goodSite, addr, e.www))
	p := harness.Start(t, nil, e.args(t), addr)
	e.waitReadiness(t, "ready", func(r status.Readiness) bool { return r.Ready })
	if err := p.Stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// A mistake, then a restart (a reboot, a crash).
	e.write(t, "a.toml", site(goodSite, addr, e.www)+"[[routes]]\npath = \"/x\"\nhandler = { type = \"statik\", root = \"/\" }\n")
	p = harness.Start(t, nil, e.args(t), addr)
	h1, _ := harness.Clients()
	if code, body := fetch(t, h1, "http://"+addr+"/"); code != 200 || body != "v1\n" {
		t.Errorf("last good site: %d %q", code, body)
	}
	want := filepath.Join(e.sites, "a.toml") + ":10:13: "
	s := statusJSON(t, "http://"+addr+"/status")
	if s.Serving != status.ServingLastGood || len(s.Problems) == 0 || !strings.HasPrefix(s.Problems[0], want) || !strings.Contains(s.Problems[0], "statik") {
		t.Errorf("status page: serving %q, problems %q", s.Serving, s.Problems)
	}
	if msg, ok := s.condition("site:a.toml"); !ok || !strings.HasPrefix(msg, "does not load: "+want) || s.State.State != "degraded" {
		t.Errorf("the site that does not load is not a degraded condition: %+v", s.State)
	}
	if r := e.readiness(t); r.Ready || r.Config != status.ServingLastGood {
		t.Errorf("readiness %+v", r)
	}
	reload(t, p, "serving=last-good")
	if code, _ := fetch(t, h1, "http://"+addr+"/"); code != 200 {
		t.Errorf("after SIGHUP with the mistake: %d", code)
	}

	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("v2\n"), 0o644)
	e.write(t, "a.toml", site(goodSite, addr, e.www))
	p.Signal(syscall.SIGHUP)
	e.waitReadiness(t, "ready after the correction", func(r status.Readiness) bool { return r.Ready })
	if s := statusJSON(t, "http://"+addr+"/status"); s.Serving != status.ServingAsWritten || len(s.Problems) != 0 || s.State.State != "serving" {
		t.Errorf("after the correction: serving %q, problems %q, state %+v", s.Serving, s.Problems, s.State)
	}
}

// TestApplianceLastGoodUnusable: the last good copy no longer loads
// either (its root was removed) when the site file has a mistake: the
// fallback page, the status page and the log say both why the site file
// does not load and why the last good copy cannot be used. The -c path is
// spelled differently from the run that saved the copy: it is still the
// same configuration's past.
func TestApplianceLastGoodUnusable(t *testing.T) {
	e := newApplianceEnv(t)
	addr, fb := harness.FreeAddr(t), harness.FreeAddr(t)
	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("v1\n"), 0o644)
	e.write(t, "a.toml", site(goodSite, addr, e.www))
	p := harness.Start(t, nil, e.args(t), addr)
	e.waitReadiness(t, "ready", func(r status.Readiness) bool { return r.Ready })
	if err := p.Stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// Another spelling of the same -c: the last good copy is found.
	spelled := e.dir + "/./sites/"
	args := func(extra ...string) []string {
		a := e.args(t, extra...)
		a[2] = spelled
		return a
	}
	e.write(t, "a.toml", site(goodSite, addr, e.www)+"listen_everywhere = true\n")
	p = harness.Start(t, nil, args(), addr)
	h1, _ := harness.Clients()
	if code, body := fetch(t, h1, "http://"+addr+"/"); code != 200 || body != "v1\n" {
		t.Fatalf("last good site with -c %s: %d %q", spelled, code, body)
	}
	if err := p.Stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// The root the last good copy serves is gone too.
	if err := os.RemoveAll(e.www); err != nil {
		t.Fatal(err)
	}
	p = harness.Start(t, nil, args("-fallback-listen", fb), fb)
	mistake := filepath.Join(e.sites, "a.toml") + ":8:1: "
	code, body := fetch(t, h1, "http://"+fb+"/")
	if code != 503 || !strings.Contains(body, mistake) || !strings.Contains(body, "listen_everywhere") ||
		!strings.Contains(body, "the last configuration that loaded (saved ") || !strings.Contains(body, e.www) {
		t.Errorf("fallback page: %d %q; want the site file's mistake and why the last good copy cannot be used", code, body)
	}
	s := statusJSON(t, "http://"+fb+"/status")
	if s.Serving != status.ServingFallback || len(s.Problems) < 3 || !strings.HasPrefix(s.Problems[0], mistake) {
		t.Errorf("status page: serving %q, problems %q", s.Serving, s.Problems)
	}
	p.WaitOutput(t, "nor does the last one that did")
	if strings.Contains(p.Output(), "none loaded before") {
		t.Errorf("the log says none loaded before:\n%s", p.Output())
	}
}

// TestApplianceBadKey: a site whose key does not load is served over TLS
// with a self-signed certificate; its plain HTTP and another site keep
// serving; the status page names the site file's tls.cert line.
func TestApplianceBadKey(t *testing.T) {
	e := newApplianceEnv(t)
	plainAddr, tlsAddr, other := harness.FreeAddr(t), harness.FreeAddr(t), harness.FreeAddr(t)
	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("page\n"), 0o644)
	cert, key := filepath.Join(e.dir, "cert.pem"), filepath.Join(e.dir, "key.pem")
	os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"), 0o644)
	os.WriteFile(key, []byte("not a key\n"), 0o600)
	e.write(t, "a.toml", tlsSite(plainAddr, tlsAddr, cert, key, e.www))
	e.write(t, "b.toml", site(goodSite, other, e.www))
	harness.Start(t, nil, e.args(t), plainAddr, tlsAddr, other)
	h1, h2 := harness.Clients()
	for _, u := range []string{"http://" + plainAddr + "/", "http://" + other + "/"} {
		if code, body := fetch(t, h1, u); code != 200 || body != "page\n" {
			t.Errorf("%s: %d %q", u, code, body)
		}
	}
	c, err := tls.Dial("tcp", tlsAddr, &tls.Config{InsecureSkipVerify: true, ServerName: "a.test"})
	if err != nil {
		t.Fatalf("TLS: %v", err)
	}
	leaf := c.ConnectionState().PeerCertificates[0]
	c.Close()
	if leaf.Subject.Organization[0] != "Arka self-signed" || leaf.VerifyHostname("a.test") != nil {
		t.Errorf("served certificate: %v %v", leaf.Subject, leaf.DNSNames)
	}
	if code, _ := fetch(t, h2, "https://"+tlsAddr+"/"); code != 200 {
		t.Errorf("HTTPS: %d", code)
	}
	s := statusJSON(t, "http://"+plainAddr+"/status")
	want := filepath.Join(e.sites, "a.toml") + ":6:"
	if len(s.Problems) != 1 || !strings.HasPrefix(s.Problems[0], want) || !strings.Contains(s.Problems[0], "self-signed") {
		t.Errorf("status problems %q; want one at %s", s.Problems, want)
	}
	if msg, ok := s.condition("site:a.toml"); !ok || !strings.HasPrefix(msg, want) || !strings.Contains(msg, "self-signed") || s.State.State != "degraded" {
		t.Errorf("the site whose key does not load is not a degraded condition: %+v", s.State)
	}
	if _, ok := s.condition("site:b.toml"); ok {
		t.Errorf("the other site is degraded too: %+v", s.State)
	}
	if r := e.readiness(t); r.Ready || r.Config != status.ServingAsWritten {
		t.Errorf("readiness %+v", r)
	}
}

// TestReloadBadCertKeepsCert: a site's certificate file overwritten with
// junk, then SIGHUP: the site keeps serving the certificate it loaded
// before (same fingerprint), with and without -appliance. With -appliance
// the reload applies the rest, and the status page and the site's
// condition say the certificate did not load and the old one is kept; a
// restart with the junk still there serves a self-signed one.
func TestReloadBadCertKeepsCert(t *testing.T) {
	for _, appliance := range []bool{true, false} {
		name := "plain"
		if appliance {
			name = "appliance"
		}
		t.Run(name, func(t *testing.T) {
			e := newApplianceEnv(t)
			plainAddr, tlsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
			os.WriteFile(filepath.Join(e.www, "index.html"), []byte("page\n"), 0o644)
			cert, key := harness.WriteCert(t, e.dir, "a.test")
			e.write(t, "a.toml", tlsSite(plainAddr, tlsAddr, cert, key, e.www))
			args := e.args(t)
			if !appliance {
				args = []string{"-c", e.sites, "-state", e.state}
			}
			served := func() *x509.Certificate {
				t.Helper()
				c, err := tls.Dial("tcp", tlsAddr, &tls.Config{InsecureSkipVerify: true, ServerName: "a.test"})
				if err != nil {
					t.Fatalf("TLS: %v", err)
				}
				defer c.Close()
				return c.ConnectionState().PeerCertificates[0]
			}
			p := harness.Start(t, nil, args, plainAddr, tlsAddr)
			before := served()
			if before.Subject.CommonName != "arka test" {
				t.Fatalf("served at start: %v", before.Subject)
			}
			if err := os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\njunk\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if appliance {
				reload(t, p, "configuration reloaded")
			} else {
				reload(t, p, "reload failed")
			}
			after := served()
			if !bytes.Equal(before.Raw, after.Raw) {
				t.Errorf("after the reload the site serves %v (O=%v), not the certificate it served before (%v)", after.Subject, after.Subject.Organization, before.Subject)
			}
			_, h2 := harness.Clients()
			if code, _ := fetch(t, h2, "https://"+tlsAddr+"/"); code != 200 {
				t.Errorf("HTTPS after the reload: %d", code)
			}
			if !appliance {
				return
			}
			s := statusJSON(t, "http://"+plainAddr+"/status")
			want := filepath.Join(e.sites, "a.toml") + ":6:"
			if len(s.Problems) != 1 || !strings.HasPrefix(s.Problems[0], want) || !strings.Contains(s.Problems[0], "keeps serving the certificate loaded before (CN=arka test") {
				t.Errorf("status problems %q; want one at %s saying the old certificate is kept", s.Problems, want)
			}
			if msg, ok := s.condition("site:a.toml"); !ok || !strings.HasPrefix(msg, want) || s.State.State != "degraded" {
				t.Errorf("the site whose certificate does not load is not a degraded condition: %+v", s.State)
			}
			if r := e.readiness(t); r.Ready {
				t.Errorf("readiness %+v", r)
			}
			// A second reload with the junk still there keeps it too.
			reload(t, p, "configuration reloaded")
			if after := served(); !bytes.Equal(before.Raw, after.Raw) {
				t.Errorf("after a second reload: %v", after.Subject)
			}
			// A new good certificate: it serves, and the problem is gone.
			harness.WriteCert(t, e.dir, "a.test")
			p.Signal(syscall.SIGHUP)
			e.waitReadiness(t, "ready with the new certificate", func(r status.Readiness) bool { return r.Ready })
			if now := served(); bytes.Equal(before.Raw, now.Raw) || now.Subject.CommonName != "arka test" {
				t.Errorf("after the new certificate: %v, the old one: %v", now.Subject, bytes.Equal(before.Raw, now.Raw))
			}
			// At start there is nothing to keep: a self-signed certificate.
			os.WriteFile(cert, []byte("junk\n"), 0o644)
			if err := p.Stop(t); err != nil {
				t.Fatalf("stop: %v", err)
			}
			harness.Start(t, nil, args, plainAddr, tlsAddr)
			if leaf := served(); len(leaf.Subject.Organization) == 0 || leaf.Subject.Organization[0] != "Arka self-signed" {
				t.Errorf("at start with a bad certificate: %v", leaf.Subject)
			}
		})
	}
}

// TestApplianceBindRetry: an address taken by another program does not
// stop the others; Arka retries it with backoff and serves it once it is
// free, and reports itself ready then.
func TestApplianceBindRetry(t *testing.T) {
	e := newApplianceEnv(t)
	free := harness.FreeAddr(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("page\n"), 0o644)
	e.write(t, "a.toml", `listen = ["`+free+`", "`+taken.Addr().String()+`"]
[[routes]]
path = "/status"
handler = { type = "status" }
[[routes]]
path = "/"
handler = { type = "static", root = "`+e.www+`" }
`)
	p := harness.Start(t, nil, e.args(t), free)
	h1, _ := harness.Clients()
	if code, _ := fetch(t, h1, "http://"+free+"/"); code != 200 {
		t.Errorf("free address: %d", code)
	}
	s := statusJSON(t, "http://"+free+"/status")
	want := filepath.Join(e.sites, "a.toml") + ":1:"
	if len(s.Problems) != 1 || !strings.HasPrefix(s.Problems[0], want) || !strings.Contains(s.Problems[0], "address already in use") {
		t.Errorf("status problems %q", s.Problems)
	}
	if r := e.readiness(t); r.Ready {
		t.Errorf("ready with an address not bound: %+v", r)
	}
	taken.Close()
	start := time.Now()
	e.waitReadiness(t, "ready once the address is free", func(r status.Readiness) bool { return r.Ready })
	t.Logf("bound %s after it was freed", time.Since(start).Round(10*time.Millisecond))
	if code, body := fetch(t, h1, "http://"+taken.Addr().String()+"/"); code != 200 || body != "page\n" {
		t.Errorf("retried address: %d %q", code, body)
	}
	if !strings.Contains(p.Output(), "now listening") {
		t.Errorf("no log line for the late bind")
	}
}

// TestSupervisedRestartBackoff: the appliance's supervisor (package
// appliance/device/supervise, as arka-init runs it) restarts the real arka when it
// exits — here because another arka holds its state directory — with a
// growing delay, and records the exit status and arka's last lines.
func TestSupervisedRestartBackoff(t *testing.T) {
	e := newApplianceEnv(t)
	addr := harness.FreeAddr(t)
	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("page\n"), 0o644)
	e.write(t, "a.toml", site(goodSite, addr, e.www))
	harness.Start(t, nil, e.args(t), addr) // holds the state directory

	stateFile := filepath.Join(t.TempDir(), "supervise.json")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- supervise.Run(ctx, supervise.Options{Path: harness.Binary(t), Args: e.args(t), StateFile: stateFile,
			Stdout: io.Discard, Stderr: io.Discard, First: 100 * time.Millisecond, Max: 400 * time.Millisecond})
	}()
	var st *supervise.State
	for deadline := time.Now().Add(20 * time.Second); ; {
		if s, err := supervise.ReadState(stateFile); err == nil && s.Exits >= 4 {
			st = s
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no 4 exits within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Delays 100, 200, 400 ms between the 4 exits.
	if took < 700*time.Millisecond {
		t.Errorf("4 exits in %s: no backoff", took)
	}
	ex := st.LastExit
	if ex == nil || ex.Code != 1 || st.InARow != st.Exits || len(ex.Tail) == 0 || !strings.Contains(strings.Join(ex.Tail, "\n"), "in use by another arka") {
		t.Errorf("state %+v, last exit %+v", st, ex)
	}
}

// statusPage is the part of the status page's JSON (status.Snapshot) these
// tests read.
type statusPage struct {
	Serving  string    `json:"serving"`
	Problems []string  `json:"problems"`
	State    stateView `json:"state"`
}

// condition returns the message of the LED condition name on the status
// page, and whether it is there (Degraded).
func (s statusPage) condition(name string) (string, bool) {
	for _, c := range s.State.Conditions {
		if c.Name == name {
			return c.Message, c.State == "degraded"
		}
	}
	return "", false
}

// TestAppliancePartial: on a fresh appliance (no configuration loaded
// before) one site file with a mistake takes only its own site down: the
// other file's site serves, the status page and readiness say "partial"
// with the mistake, the fallback page does not take the device, and the
// corrected file serves after SIGHUP.
func TestAppliancePartial(t *testing.T) {
	e := newApplianceEnv(t)
	addrA, addrB, fb := harness.FreeAddr(t), harness.FreeAddr(t), harness.FreeAddr(t)
	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("the site\n"), 0o644)
	e.write(t, "a.toml", site(goodSite, addrA, e.www))
	e.write(t, "b.toml", site(goodSite, addrB, e.www)+"listen_everywhere = true\n")
	want := filepath.Join(e.sites, "b.toml") + ":8:1: "

	p := harness.Start(t, nil, e.args(t, "-fallback-listen", fb), addrA)
	h1, _ := harness.Clients()
	if code, body := fetch(t, h1, "http://"+addrA+"/"); code != 200 || body != "the site\n" {
		t.Errorf("the site without a mistake: %d %q", code, body)
	}
	r := e.waitReadiness(t, "partial", func(r status.Readiness) bool { return r.Config == status.ServingPartial })
	if r.Ready || len(r.Problems) == 0 || !strings.HasPrefix(r.Problems[0], want) {
		t.Errorf("readiness %+v; want not ready, the first problem %q…", r, want)
	}
	if s := statusJSON(t, "http://"+addrA+"/status"); s.Serving != status.ServingPartial || len(s.Problems) == 0 {
		t.Errorf("status page: serving %q, problems %q", s.Serving, s.Problems)
	}
	if c, err := net.DialTimeout("tcp", fb, time.Second); err == nil {
		c.Close()
		t.Errorf("the fallback page serves although a site loads")
	}

	e.write(t, "b.toml", site(goodSite, addrB, e.www))
	p.Signal(syscall.SIGHUP)
	e.waitReadiness(t, "ready after the correction", func(r status.Readiness) bool { return r.Ready && r.Config == status.ServingAsWritten })
	for _, addr := range []string{addrA, addrB} {
		if code, body := fetch(t, h1, "http://"+addr+"/"); code != 200 || body != "the site\n" {
			t.Errorf("%s after SIGHUP: %d %q", addr, code, body)
		}
	}
	if p.Exited() {
		t.Fatal("arka exited")
	}
}
