package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// TestTraceRefused: TRACE is answered 405 with Allow on every kind of
// route, as nginx does, and never reaches an upstream or a script, which
// would echo the request's cookies and credentials back (RFC 9110
// sections 9.3.8 and 15.5.6). The connection goes on. Over HTTP/1.1, TLS
// and HTTP/2.
func TestTraceRefused(t *testing.T) {
	up, got := captureUpstream(t)
	e, hosts := everyRouteKind(t, up)
	allows := map[string]string{"static.test": "GET, HEAD, OPTIONS", "status.test": "GET, HEAD"}

	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, h := range hosts {
			for _, body := range []string{"", "a body"} {
				req, err := http.NewRequest(http.MethodTrace, c.Base+"/index.php", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Host = h
				req.Header.Set("Cookie", "sess=SECRET")
				req.Header.Set("Max-Forwards", "5")
				resp, err := c.HTTP.Do(req)
				if err != nil {
					t.Fatalf("TRACE %s: %v", h, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				allow := resp.Header.Get("Allow")
				if resp.StatusCode != http.StatusMethodNotAllowed || allow == "" || strings.Contains(allow, "TRACE") ||
					strings.Contains(string(b), "SECRET") {
					t.Errorf("TRACE %s (body %q): %d Allow %q %q, want 405 with Allow", h, body, resp.StatusCode, allow, b)
				}
				if a := allows[h]; a != "" && allow != a {
					t.Errorf("TRACE %s: Allow %q, want %q", h, allow, a)
				}
			}
			// The connection serves the next request.
			resp, _ := c.Get(t, "/", "Host: respond.test")
			if resp.StatusCode != 200 {
				t.Errorf("GET after TRACE: %d", resp.StatusCode)
			}
		}
		select {
		case req := <-got:
			t.Errorf("the upstream received %q", req.head)
		case <-time.After(50 * time.Millisecond):
		}
	})
}

// everyRouteKind starts a server with one site per kind of route, each
// on "/": static (the default site), redirect, respond, status, a proxy
// to upstream ("host:port") and, where php-fpm is installed, fastcgi
// (index.php echoes the request method). It returns the server and the
// sites' host names.
func everyRouteKind(t *testing.T, upstream string) (*servertest.Env, []string) {
	t.Helper()
	dir := t.TempDir()
	root := www(t, dir, "www", "static page")
	site := func(name, handler string) string {
		return `server_names = ["` + name + `"]
listen = ["{{HTTP}}"]
tls = { listen = ["{{HTTPS}}"] }
routes = [{ path = "/", handler = ` + handler + ` }]
`
	}
	sites := []string{
		"default = true\n" + site("static.test", `{ type = "static", root = "`+root+`" }`),
		site("redirect.test", `{ type = "redirect", to = "https://static.test{uri}" }`),
		site("respond.test", `{ type = "respond", body = "ok\n" }`),
		site("status.test", `{ type = "status" }`),
		site("proxy.test", `{ type = "proxy", upstreams = ["`+upstream+`"] }`),
	}
	hosts := []string{"static.test", "redirect.test", "respond.test", "status.test", "proxy.test"}
	if _, err := fpmtest.Binary(); err == nil {
		fpm := fpmtest.Start(t, fpmtest.Config{MaxChildren: 2})
		fpmtest.WriteFiles(t, root, map[string]string{"index.php": `<?php echo $_SERVER["REQUEST_METHOD"];`})
		sites = append(sites, site("php.test", `{ type = "fastcgi", address = "`+fpm.Address+`", root = "`+root+`" }`))
		hosts = append(hosts, "php.test")
	} else {
		t.Logf("no PHP route: %v", err)
	}
	return servertest.Start(t, sites...), hosts
}
