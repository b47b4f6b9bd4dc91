package server_test

import (
	"crypto/tls"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/arkaweb/arka/server/servertest"
)

// Route options apply whatever the handler: headers on static, proxy and
// error responses (Vary merged), allow/deny by the forwarded client behind
// a trusted proxy, compression = false.
func TestRouteOptionsHeadersAllowDeny(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", strings.Repeat("compress me ", 200))
	www(t, root, "lan", "lan only")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Powered-By", "PHP/8.2")
		w.Header().Set("Vary", "Cookie")
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/app/fail" {
			w.WriteHeader(http.StatusBadGateway)
		}
		w.Write([]byte(strings.Repeat("upstream ", 200)))
	}))
	defer up.Close()
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
trusted_proxies = ["127.0.0.1"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
headers = { set = { X-Frame-Options = "DENY", Vary = "Origin" }, add = { Link = "</s.css>; rel=preload" } }
[[routes]]
path = "/app/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
headers = { remove = ["X-Powered-By"], set = { Vary = "Origin" } }
[[routes]]
path = "/lan/"
handler = { type = "static", root = "`+root+`" }
allow = ["192.168.0.0/16", "10.0.0.0/8"]
deny = ["192.168.66.0/24"]
[[routes]]
path = "/plain/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
compression = false
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, _ := c.Get(t, "/", "Accept-Encoding: gzip")
		if resp.StatusCode != 200 || resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Link") != "</s.css>; rel=preload" {
			t.Errorf("static: %d %v", resp.StatusCode, resp.Header)
		}
		if v := strings.Join(resp.Header.Values("Vary"), ", "); !strings.Contains(v, "Accept-Encoding") || !strings.Contains(v, "Origin") {
			t.Errorf("static Vary %q: want Accept-Encoding and Origin merged", v)
		}
		// Error responses of the route get the fields too.
		resp, _ = c.Get(t, "/missing")
		if resp.StatusCode != 404 || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("404: %d %v", resp.StatusCode, resp.Header)
		}
		resp, _ = c.Get(t, "/app/x", "Accept-Encoding: zstd")
		if resp.Header.Get("X-Powered-By") != "" || resp.Header.Get("Content-Encoding") != "zstd" {
			t.Errorf("proxy: %v", resp.Header)
		}
		if v := strings.Join(resp.Header.Values("Vary"), ", "); !strings.Contains(v, "Cookie") || !strings.Contains(v, "Origin") || !strings.Contains(v, "Accept-Encoding") {
			t.Errorf("proxy Vary %q: want Cookie, Accept-Encoding and Origin", v)
		}
		resp, _ = c.Get(t, "/app/fail")
		if resp.StatusCode != 502 || resp.Header.Get("X-Powered-By") != "" {
			t.Errorf("proxied error: %d %v", resp.StatusCode, resp.Header)
		}
		resp, _ = c.Get(t, "/plain/x", "Accept-Encoding: zstd, gzip")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("compression = false: %d %v", resp.StatusCode, resp.Header)
		}

		// The client is 127.0.0.1: not in allow.
		resp, _ = c.Get(t, "/lan/")
		if resp.StatusCode != 403 {
			t.Errorf("/lan/ from loopback: %d, want 403", resp.StatusCode)
		}
		// 127.0.0.1 is a trusted proxy: the client it names in
		// X-Forwarded-For (the default client_ip_header) counts.
		for hdr, want := range map[string]int{
			"X-Forwarded-For: 192.168.1.5":       200,
			"X-Forwarded-For: 192.168.66.5":      403, // denied inside the allowed network
			"X-Forwarded-For: 6.6.6.6, 10.1.2.3": 200,
			"X-Forwarded-For: 10.1.2.3, 8.8.8.8": 403, // the right-most untrusted entry counts
			"X-Real-IP: 192.168.1.5":             403, // not read: the peer, loopback, counts
			"X-Forwarded-For: garbage":           403, // the peer: loopback
		} {
			resp, _ = c.Get(t, "/lan/", hdr)
			if resp.StatusCode != want {
				t.Errorf("/lan/ with %s: %d, want %d", hdr, resp.StatusCode, want)
			}
		}
	})
}

// A site without trusted_proxies ignores forwarding fields: a client
// cannot claim an allowed address.
func TestAllowIgnoresUntrustedForwarding(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "secret")
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
allow = ["192.168.0.0/16"]
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, body := c.Get(t, "/", "X-Real-IP: 192.168.1.1", "X-Forwarded-For: 192.168.1.1")
		if resp.StatusCode != 403 || strings.Contains(string(body), "secret") {
			t.Errorf("%d %q", resp.StatusCode, body)
		}
	})
}

func basic(user, pass string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestBasicAuth(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "family photos")
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.MinCost) // cheap: comparisons are counted, not timed
	if err != nil {
		t.Fatal(err)
	}
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
trusted_proxies = ["127.0.0.1"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
basic_auth = { realm = "family", users = { alice = "`+string(hash)+`" } }
headers = { set = { Cache-Control = "private" } }
`)
	n := 0
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		n++
		// Each client poses as its own address, so rate limits do not mix.
		from := "X-Forwarded-For: 192.0.2." + string(rune('0'+n))
		resp, body := c.Get(t, "/", from)
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Basic realm="family", charset="UTF-8"` || strings.Contains(string(body), "photos") {
			t.Errorf("no credentials: %d %v", resp.StatusCode, resp.Header)
		}
		// A route's caching fields go on 2xx and 304 only; errors are
		// no-store (issue 18).
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("401 with the route's caching fields: %v", resp.Header)
		}
		resp, body = c.Get(t, "/", from, basic("alice", "correct horse"))
		if resp.StatusCode != 200 || string(body) != "family photos" || resp.Header.Get("Cache-Control") != "private" {
			t.Errorf("good credentials: %d %q, Cache-Control %q", resp.StatusCode, body, resp.Header.Get("Cache-Control"))
		}
		resp, _ = c.Get(t, "/", from, basic("alice", "correct horse"))
		if resp.StatusCode != 200 {
			t.Errorf("good credentials again (cached): %d", resp.StatusCode)
		}
		resp, _ = c.Get(t, "/", from, "Authorization: Basic !!!notbase64")
		if resp.StatusCode != 401 {
			t.Errorf("malformed credentials: %d", resp.StatusCode)
		}

		// An unknown user costs a bcrypt comparison as a wrong password
		// for a known user does: counted, not timed, by
		// TestBasicAuthComparisons (the fastest of a few requests each
		// told them apart only on an idle machine). Here: an unknown user
		// is answered as a wrong password is.
		for _, user := range []string{"alice", "mallory"} {
			resp, body := c.Get(t, "/", "X-Forwarded-For: 198.18.0."+string(rune('0'+n)), basic(user, "wrong"))
			if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" || strings.Contains(string(body), "photos") {
				t.Errorf("%s/wrong: %d %v", user, resp.StatusCode, resp.Header)
			}
		}

		// Ten failures from one address are answered 401; the next guess
		// gets 429 without a comparison.
		burst := "X-Forwarded-For: 198.19.0." + string(rune('0'+n))
		for i := range 10 {
			if resp, _ := c.Get(t, "/", burst, basic("alice", "guess")); resp.StatusCode != 401 {
				t.Fatalf("failure %d: %d, want 401", i+1, resp.StatusCode)
			}
		}
		resp, _ = c.Get(t, "/", burst, basic("alice", "guess again"))
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" {
			t.Errorf("after 10 failures: %d %v", resp.StatusCode, resp.Header)
		}
		// Another client is not affected.
		resp, _ = c.Get(t, "/", "X-Forwarded-For: 198.51.100."+string(rune('0'+n)), basic("alice", "correct horse"))
		if resp.StatusCode != 200 {
			t.Errorf("another client: %d", resp.StatusCode)
		}
	})
	if log := e.Log(); !strings.Contains(log, "basic auth: failed attempt") || !strings.Contains(log, "too many failed attempts") || !strings.Contains(log, "198.19.0.1") {
		t.Errorf("failures not logged with the client:\n%s", log)
	}
}

// Behind a trusted proxy on the same machine, the status page checks the
// client the proxy forwarded for, not the proxy's loopback address.
func TestStatusAllowBehindTrustedProxy(t *testing.T) {
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
trusted_proxies = ["127.0.0.1", "::1"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/status"
handler = { type = "status" }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for hdr, want := range map[string]int{
			"X-Forwarded-For: 192.168.1.20, 203.0.113.9": 403,
			"X-Forwarded-For: 203.0.113.9":               403,
			"X-Forwarded-For: 10.9.8.7":                  200,
			"X-Real-IP: 203.0.113.9":                     200, // not the site's client_ip_header: the peer, loopback, counts
			"User-Agent: direct on loopback":             200,
		} {
			resp, _ := c.Get(t, "/status?format=json", hdr)
			if resp.StatusCode != want {
				t.Errorf("%s: %d, want %d", hdr, resp.StatusCode, want)
			}
		}
	})
}

// Field names are case-insensitive, but HTTP/1.1 sends WWW-Authenticate
// spelt as registered (RFC 9110 section 11.6.1), as nginx does, not as
// net/http's canonical Www-Authenticate: the server's own challenge and
// one a proxied upstream sends.
func TestWWWAuthenticateSpelling(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["WWW-Authenticate"] = []string{`Bearer realm="api"`}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(up.Close)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), 4)
	if err != nil {
		t.Fatal(err)
	}
	root := www(t, t.TempDir(), "a", "secret")
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
basic_auth = { users = { alice = "`+string(hash)+`" } }
[[routes]]
path = "/api/"
handler = { type = "proxy", upstreams = ["`+strings.TrimPrefix(up.URL, "http://")+`"] }
`)
	for _, secure := range []bool{false, true} {
		for path, want := range map[string]string{"/": "\r\nWWW-Authenticate: Basic realm=", "/api/x": "\r\nWWW-Authenticate: Bearer realm=\"api\"\r\n"} {
			var c net.Conn
			var err error
			if secure {
				c, err = tls.Dial("tcp", e.HTTPS, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
			} else {
				c, err = net.Dial("tcp", e.HTTP)
			}
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
			got, _ := io.ReadAll(c)
			c.Close()
			if head, _, _ := strings.Cut(string(got), "\r\n\r\n"); !strings.HasPrefix(head, "HTTP/1.1 401 ") || !strings.Contains(head+"\r\n", want) {
				t.Errorf("TLS %v, %s: want %q in\n%s", secure, path, want, head)
			}
		}
	}
}
