package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
)

// redirect_https and hsts on a site without ACME names (a self-signed
// certificate): plain requests are redirected, keeping path and query as
// sent (301 for GET/HEAD, 308 otherwise), the ACME challenge path is not;
// HSTS goes out over TLS only.
func TestRedirectHTTPSAndHSTS(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, `default = true
server_names = ["a.example"]
listen = ["{{HTTP}}"]
redirect_https = true
trusted_proxies = ["127.0.0.1"]
hsts = "max-age=600; includeSubDomains"
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+www(t, dir, "a", "site A")+`", allow_dotfiles = true }
`)
	_, port, _ := net.SplitHostPort(e.HTTPS)
	// HTTP/1.0 without Host is redirected to the address it connected to,
	// not served over plain HTTP.
	conn, err := net.Dial("tcp", e.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, "GET /x?y HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if host, _, _ := net.SplitHostPort(e.HTTP); resp.StatusCode != 301 || resp.Header.Get("Location") != "https://"+host+":"+port+"/x?y" {
		t.Errorf("HTTP/1.0 without Host: %s Location %q", resp.Status, resp.Header.Get("Location"))
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, tc := range []struct {
			method, path, host, code, loc string
			extra                         []string
		}{
			{"GET", "/x%20y/?q=1&r=%2F", "a.example", "301", "https://a.example:" + port + "/x%20y/?q=1&r=%2F", nil},
			{"HEAD", "/", "A.Example:8080", "301", "https://a.example:" + port + "/", nil},
			{"POST", "/form", "a.example", "308", "https://a.example:" + port + "/form", nil},
			{"GET", "/.well-known/acme-challenge/tok", "a.example", "404", "", nil},
			// Dot segments do not carry another path past the redirect
			// through the exempt challenge path.
			{"GET", "/.well-known/acme-challenge/../../index.html", "a.example", "301", "https://a.example:" + port + "/.well-known/acme-challenge/../../index.html", nil},
			{"GET", "/.well-known/acme-challenge/%2e%2e/%2E%2E/", "a.example", "301", "https://a.example:" + port + "/.well-known/acme-challenge/%2e%2e/%2E%2E/", nil},
			{"GET", "/", "[::1]", "301", "https://[::1]:" + port + "/", nil},
			// A trusted proxy that terminated TLS: no redirect (no loop).
			{"GET", "/", "a.example", "200", "", []string{"X-Forwarded-Proto: https"}},
			{"GET", "/", "a.example", "200", "", []string{"Forwarded: for=192.0.2.1;proto=https"}},
			{"GET", "/", "a.example", "301", "https://a.example:" + port + "/", []string{"X-Forwarded-Proto: http"}},
		} {
			resp, _ := c.Do(t, tc.method, tc.path, append([]string{"Host: " + tc.host}, tc.extra...)...)
			hsts := resp.Header.Get("Strict-Transport-Security")
			if c.Name == "h1" {
				if !strings.HasPrefix(resp.Status, tc.code) || resp.Header.Get("Location") != tc.loc {
					t.Errorf("%s %s: %s Location %q, want %s %q", tc.method, tc.path, resp.Status, resp.Header.Get("Location"), tc.code, tc.loc)
				}
				// Over plain HTTP only behind a trusted proxy that says the
				// client's connection is HTTPS (the field reaches it over TLS).
				want := ""
				if tc.code == "200" && len(tc.extra) > 0 {
					want = "max-age=600; includeSubDomains"
				}
				if hsts != want {
					t.Errorf("%s %s %v: Strict-Transport-Security %q, want %q (RFC 6797 section 7.2)", tc.method, tc.path, tc.extra, hsts, want)
				}
				continue
			}
			if resp.Header.Get("Location") != "" {
				t.Errorf("%s %s over TLS redirected to %q", tc.method, tc.path, resp.Header.Get("Location"))
			}
			if hsts != "max-age=600; includeSubDomains" {
				t.Errorf("%s %s: Strict-Transport-Security %q", tc.method, tc.path, hsts)
			}
		}
	})
}
