package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/status"
	"github.com/arkaweb/arka/tests/integration/harness"
)

// Partial serving (arka -appliance, status.ServingPartial): the sites of
// the site files without mistakes serve, and the names of a site whose
// file has one answer 503 Service Unavailable with Retry-After (the site
// is down for now), not the default site's pages or a 404 that caches and
// search engines take for "gone".

// partialSite is a site file for name on the plain address plain and the
// TLS address tlsAddr (cert and key, or a self-signed certificate when
// both are ""), serving root and the status page at /status; default makes it the default site. root ""
// leaves the static handler without a root (a mistake).
func partialSite(name string, isDefault bool, plain, tlsAddr, cert, key, root string) string {
	var b strings.Builder
	if isDefault {
		b.WriteString("default = true\n")
	}
	b.WriteString(`server_names = ["` + name + `"]
listen = ["` + plain + `"]
[tls]
listen = ["` + tlsAddr + `"]
`)
	if cert != "" {
		b.WriteString(`cert = "` + cert + `"
key = "` + key + `"
`)
	}
	b.WriteString("[[routes]]\npath = \"/\"\n")
	if root == "" {
		b.WriteString("handler = { type = \"static\" }\n")
	} else {
		b.WriteString(`handler = { type = "static", root = "` + root + `" }` + "\n")
	}
	b.WriteString("[[routes]]\npath = \"/status\"\nhandler = { type = \"status\" }\n")
	return b.String()
}

// hostClients are clients that connect to plain (HTTP/1.1) and tlsAddr
// (HTTP/1.1 and HTTP/2 over TLS) whatever the URL's host, so that a URL
// names the site: Host and SNI.
func hostClients(plain, tlsAddr string) map[string]*http.Client {
	dial := func(addr string) func(ctx context.Context, network, _ string) (net.Conn, error) {
		return func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
	tr := func(addr string, h2 bool) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext:       dial(addr),
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
			ForceAttemptHTTP2: h2,
		}}
	}
	return map[string]*http.Client{"h1": tr(plain, false), "h1+tls": tr(tlsAddr, false), "h2": tr(tlsAddr, true)}
}

// get fetches host's path with the client of proto ("h1": http://,
// else https://) and checks the protocol the answer came with.
func get(t *testing.T, clients map[string]*http.Client, proto, host string) (*http.Response, string) {
	t.Helper()
	scheme := "https://"
	if proto == "h1" {
		scheme = "http://"
	}
	resp, err := clients[proto].Get(scheme + host + "/")
	if err != nil {
		t.Fatalf("%s %s: %v", proto, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if want := map[bool]int{true: 2, false: 1}[proto == "h2"]; resp.ProtoMajor != want {
		t.Errorf("%s %s: answered over %s", proto, host, resp.Proto)
	}
	return resp, string(b)
}

// TestAppliancePartialUnavailable: two sites on the same addresses, the
// default one good, the other's file missing its static root. The broken
// site's name answers 503 with Retry-After and no-store over HTTP/1.1,
// TLS and HTTP/2, with its own certificate; the good site serves; the
// status page says partial with the mistake and the broken site's
// condition.
func TestAppliancePartialUnavailable(t *testing.T) {
	e := newApplianceEnv(t)
	plain, tlsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("site a\n"), 0o644)
	certDir := filepath.Join(e.dir, "b-cert")
	os.Mkdir(certDir, 0o755)
	cert, key := harness.WriteCert(t, certDir, "b.test")
	e.write(t, "a.toml", partialSite("a.test", true, plain, tlsAddr, "", "", e.www))
	e.write(t, "b.toml", partialSite("b.test", false, plain, tlsAddr, cert, key, ""))
	mistake := filepath.Join(e.sites, "b.toml") + ":9:1: "

	harness.Start(t, nil, e.args(t), plain, tlsAddr)
	e.waitReadiness(t, "partial", func(r status.Readiness) bool { return r.Config == status.ServingPartial })
	clients := hostClients(plain, tlsAddr)
	for _, proto := range []string{"h1", "h1+tls", "h2"} {
		if resp, body := get(t, clients, proto, "a.test"); resp.StatusCode != 200 || body != "site a\n" {
			t.Errorf("%s a.test: %d %q", proto, resp.StatusCode, body)
		}
		resp, body := get(t, clients, proto, "b.test")
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Cache-Control") != "no-store" ||
			body == "site a\n" || !strings.Contains(body, mistake) {
			t.Errorf("%s b.test: %d Retry-After %q Cache-Control %q %q; want 503 naming %s", proto, resp.StatusCode,
				resp.Header.Get("Retry-After"), resp.Header.Get("Cache-Control"), body, mistake)
		}
	}

	c, err := tls.Dial("tcp", tlsAddr, &tls.Config{InsecureSkipVerify: true, ServerName: "b.test"})
	if err != nil {
		t.Fatalf("TLS: %v", err)
	}
	leaf := c.ConnectionState().PeerCertificates[0]
	c.Close()
	pemBytes, _ := os.ReadFile(cert)
	if blk, _ := pem.Decode(pemBytes); blk == nil || !bytes.Equal(blk.Bytes, leaf.Raw) {
		t.Errorf("b.test is served with %v, not its own certificate", leaf.Subject)
	}

	s := statusJSON(t, "http://"+plain+"/status")
	if s.Serving != status.ServingPartial || len(s.Problems) == 0 || !strings.HasPrefix(s.Problems[0], mistake) {
		t.Errorf("status page: serving %q, problems %q; want partial, first %s…", s.Serving, s.Problems, mistake)
	}
	if msg, ok := s.condition("site:b.toml"); !ok || !strings.Contains(msg, mistake) {
		t.Errorf("b.toml is not a degraded condition with its mistake: %+v", s.State)
	}
	if _, ok := s.condition("site:a.toml"); ok {
		t.Errorf("a.toml is degraded too: %+v", s.State)
	}
}

// TestAppliancePartialUndecodable: a site file that is not TOML names no
// host Arka could know: its names go where any unknown name goes (the
// default site), and the status page says so.
func TestAppliancePartialUndecodable(t *testing.T) {
	e := newApplianceEnv(t)
	plain, tlsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	os.WriteFile(filepath.Join(e.www, "index.html"), []byte("site a\n"), 0o644)
	e.write(t, "a.toml", partialSite("a.test", true, plain, tlsAddr, "", "", e.www))
	e.write(t, "b.toml", "server_names = [\"b.test\"\n"+partialSite("b.test", false, plain, tlsAddr, "", "", e.www))

	harness.Start(t, nil, e.args(t), plain, tlsAddr)
	e.waitReadiness(t, "partial", func(r status.Readiness) bool { return r.Config == status.ServingPartial })
	clients := hostClients(plain, tlsAddr)
	if resp, body := get(t, clients, "h1", "b.test"); resp.StatusCode != 200 || body != "site a\n" {
		t.Errorf("b.test: %d %q; want the default site", resp.StatusCode, body)
	}
	s := statusJSON(t, "http://"+plain+"/status")
	if !strings.Contains(strings.Join(s.Problems, "\n"), "b.toml: its server names are unknown") {
		t.Errorf("status problems %q; want one saying b.toml's names are unknown", s.Problems)
	}
}

// TestAppliancePartialLastGoodSite: a site file that no longer decodes,
// while the last configuration that loaded does not load either (another
// site's old root is gone): the others serve as written and the broken
// file's site serves its last good copy (what it served before), over
// HTTP/1.1, TLS and HTTP/2; the status page says which copy serves.
func TestAppliancePartialLastGoodSite(t *testing.T) {
	e := newApplianceEnv(t)
	plain, tlsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	oldA, newA, wwwB := filepath.Join(e.dir, "old-a"), filepath.Join(e.dir, "new-a"), filepath.Join(e.dir, "b")
	for d, body := range map[string]string{oldA: "old a\n", newA: "new a\n", wwwB: "site b\n"} {
		os.Mkdir(d, 0o755)
		os.WriteFile(filepath.Join(d, "index.html"), []byte(body), 0o644)
	}
	e.write(t, "a.toml", partialSite("a.test", true, plain, tlsAddr, "", "", oldA))
	e.write(t, "b.toml", partialSite("b.test", false, plain, tlsAddr, "", "", wwwB))
	p := harness.Start(t, nil, e.args(t), plain, tlsAddr)
	e.waitReadiness(t, "ready", func(r status.Readiness) bool { return r.Ready })
	p.Stop(t)

	os.RemoveAll(oldA)
	e.write(t, "a.toml", partialSite("a.test", true, plain, tlsAddr, "", "", newA))
	e.write(t, "b.toml", "server_names = [\"b.test\"\n")
	harness.Start(t, nil, e.args(t), plain, tlsAddr)
	e.waitReadiness(t, "partial", func(r status.Readiness) bool { return r.Config == status.ServingPartial })
	clients := hostClients(plain, tlsAddr)
	for _, proto := range []string{"h1", "h1+tls", "h2"} {
		if resp, body := get(t, clients, proto, "a.test"); resp.StatusCode != 200 || body != "new a\n" {
			t.Errorf("%s a.test: %d %q", proto, resp.StatusCode, body)
		}
		if resp, body := get(t, clients, proto, "b.test"); resp.StatusCode != 200 || body != "site b\n" {
			t.Errorf("%s b.test: %d %q; want its last good copy", proto, resp.StatusCode, body)
		}
	}
	s := statusJSON(t, "http://"+plain+"/status")
	if !strings.Contains(strings.Join(s.Problems, "\n"), "b.toml: serving the copy of this file that last loaded") {
		t.Errorf("status problems %q; want one saying b.toml's last good copy serves", s.Problems)
	}
}
