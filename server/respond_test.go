package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

func TestRedirectAndRespond(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "apex")
	e := servertest.Start(t, `server_names = ["www.example.org"]
listen = ["{{HTTP}}"]
tls = { listen = ["{{HTTPS}}"] }
routes = [{ path = "/", handler = { type = "redirect", to = "https://example.org{uri}", status = 301 } }]
`, `default = true
server_names = ["example.org"]
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
[[routes]]
path = "/old/"
handler = { type = "redirect", to = "/new{path}{?query}", status = 308, strip_prefix = true }
[[routes]]
path = "/.git/"
handler = { type = "respond", status = 404 }
[[routes]]
path = "/healthz"
handler = { type = "respond", body = "ok\n" }
headers = { set = { Cache-Control = "no-store" } }
[[routes]]
path = "/gone"
handler = { type = "respond", status = 410, body = "gone for good\n" }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, _ := c.Get(t, "/a/b?x=1&y=%20", "Host: www.example.org")
		if resp.StatusCode != 301 || resp.Header.Get("Location") != "https://example.org/a/b?x=1&y=%20" {
			t.Errorf("www to apex: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		resp, _ = c.Do(t, http.MethodPost, "/old/x/y?q=1", "Host: example.org")
		if resp.StatusCode != 308 || resp.Header.Get("Location") != "/new/x/y?q=1" {
			t.Errorf("strip_prefix: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		// Header injection through the path: encoded, no new field.
		resp, _ = c.Get(t, "/old/a%0d%0aSet-Cookie:%20x=1", "Host: example.org")
		if resp.Header.Get("Set-Cookie") != "" || resp.Header.Get("Location") != "/new/a%0D%0ASet-Cookie:%20x=1" {
			t.Errorf("injection: %v", resp.Header)
		}
		// ".." is resolved before routing: it cannot climb out of the prefix into the target.
		resp, _ = c.Get(t, "/old/a/../../etc/passwd", "Host: example.org")
		if resp.StatusCode != 404 {
			t.Errorf("/old/a/../../etc/passwd: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		// An encoded slash is data in its segment: it stays %2F in {path}
		// and {uri} (the proxy and the static handler never take it for a
		// separator either), also with the prefix stripped.
		resp, _ = c.Get(t, "/old/a%2Fb/c%3Fd%2f?q=%2F", "Host: example.org")
		if loc := resp.Header.Get("Location"); loc != "/new/a%2Fb/c%3Fd%2F?q=%2F" {
			t.Errorf("encoded slash: %d %q", resp.StatusCode, loc)
		}
		resp, _ = c.Get(t, "/x%2Fy?z", "Host: www.example.org")
		if loc := resp.Header.Get("Location"); loc != "https://example.org/x%2Fy?z" {
			t.Errorf("encoded slash in {uri}: %d %q", resp.StatusCode, loc)
		}
		resp, _ = c.Get(t, "/old//evil.example/x", "Host: example.org")
		if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, "//") || loc != "/new/evil.example/x" {
			t.Errorf("scheme-relative: %q", loc)
		}
		resp, body := c.Get(t, "/.git/config", "Host: example.org")
		if resp.StatusCode != 404 || !strings.Contains(string(body), "404 Not Found") {
			t.Errorf("/.git/: %d %q", resp.StatusCode, body)
		}
		resp, body = c.Get(t, "/healthz", "Host: example.org")
		if resp.StatusCode != 200 || string(body) != "ok\n" || resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("/healthz: %d %q %v", resp.StatusCode, body, resp.Header)
		}
		resp, body = c.Do(t, http.MethodHead, "/healthz", "Host: example.org")
		if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != 3 {
			t.Errorf("HEAD /healthz: %d %q %d", resp.StatusCode, body, resp.ContentLength)
		}
		resp, body = c.Get(t, "/gone", "Host: example.org")
		if resp.StatusCode != 410 || string(body) != "gone for good\n" {
			t.Errorf("/gone: %d %q", resp.StatusCode, body)
		}
	})
}
