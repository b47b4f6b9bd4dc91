package server_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"slices"
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
		// 127.0.0.1 is a trusted proxy: the client it names counts.
		for hdr, want := range map[string]int{
			"X-Real-IP: 192.168.1.5":             200,
			"X-Real-IP: 192.168.66.5":            403, // denied inside the allowed network
			"X-Forwarded-For: 6.6.6.6, 10.1.2.3": 200,
			"X-Forwarded-For: 10.1.2.3, 8.8.8.8": 403, // the right-most untrusted entry counts
			"X-Real-IP: 8.8.8.8":                 403,
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
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse"), 8)
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
		from := "X-Real-IP: 192.0.2." + string(rune('0'+n))
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

		// Timing: an unknown user costs a bcrypt comparison as a wrong
		// password for a known user does. Measured from an address of its
		// own (4 failures each, under the limit of 10).
		timing := "X-Real-IP: 198.18.0." + string(rune('0'+n))
		fastest := func(user string) time.Duration {
			var ds []time.Duration
			for range 4 {
				start := time.Now()
				resp, _ := c.Get(t, "/", timing, basic(user, "wrong"))
				ds = append(ds, time.Since(start))
				if resp.StatusCode != 401 {
					t.Fatalf("%s/wrong: %d", user, resp.StatusCode)
				}
			}
			return slices.Min(ds) // the least disturbed by other work on the machine
		}
		// A bcrypt comparison costs milliseconds and a skipped one
		// microseconds: a factor of 5 tells them apart on a busy machine.
		known, unknown := fastest("alice"), fastest("mallory")
		if unknown < known/5 || known < unknown/5 {
			t.Errorf("unknown user took %v, known user with a wrong password %v: the difference names existing users", unknown, known)
		}

		// Ten failures from one address are answered 401; the next guess
		// gets 429 without a comparison.
		burst := "X-Real-IP: 198.19.0." + string(rune('0'+n))
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
		resp, _ = c.Get(t, "/", "X-Real-IP: 198.51.100."+string(rune('0'+n)), basic("alice", "correct horse"))
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
			"X-Real-IP: 203.0.113.9":         403,
			"X-Forwarded-For: 203.0.113.9":   403,
			"X-Real-IP: 192.168.1.20":        200,
			"X-Forwarded-For: 10.9.8.7":      200,
			"User-Agent: direct on loopback": 200,
		} {
			resp, _ := c.Get(t, "/status?format=json", hdr)
			if resp.StatusCode != want {
				t.Errorf("%s: %d, want %d", hdr, resp.StatusCode, want)
			}
		}
	})
}
