package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

// QA M1: behind a trusted proxy that appends to X-Forwarded-For (Caddy,
// HAProxy, nginx with $proxy_add_x_forwarded_for), which passes a
// client's own X-Real-IP through untouched, that X-Real-IP does not name
// the client: route allow, the access log and the X-Real-IP sent upstream
// use the right-most X-Forwarded-For entry a trusted proxy did not add
// itself. A site whose front proxy sets X-Real-IP (nginx's
// proxy_set_header X-Real-IP $remote_addr) says client_ip_header =
// "X-Real-IP", and then X-Forwarded-For does not name the client.
func TestClientIPHeader(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s|%s", r.Header.Get("X-Real-Ip"), strings.Join(r.Header.Values("X-Forwarded-For"), ","))
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	logs := map[string]string{"a.example": filepath.Join(dir, "a.log"), "b.example": filepath.Join(dir, "b.log")}
	site := func(name, header string) string {
		return `server_names = ["` + name + `"]
listen = ["{{HTTP}}"]
trusted_proxies = ["127.0.0.1"]
` + header + `
[tls]
listen = ["{{HTTPS}}"]
[log]
enabled = true
path = "` + logs[name] + `"
[[routes]]
path = "/adm/"
handler = { type = "respond", body = "admin" }
allow = ["10.9.9.9"]
[[routes]]
path = "/p/"
handler = { type = "proxy", upstreams = ["` + up.Listener.Addr().String() + `"] }
`
	}
	e := servertest.Start(t, "default = true\n"+site("a.example", ""), site("b.example", `client_ip_header = "X-Real-IP"`))
	forged := []string{"X-Forwarded-For: 1.2.3.4", "X-Real-IP: 10.9.9.9"} // the client sent X-Real-IP, the proxy appended to XFF
	honest := []string{"X-Forwarded-For: 10.9.9.9", "X-Real-IP: 1.2.3.4"} // the other way round
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, tc := range []struct {
			host, path string
			hdr        []string
			status     int
			body       string
		}{
			{"a.example", "/adm/", forged, 403, ""},
			{"a.example", "/adm/", honest, 200, "admin"},
			{"a.example", "/p/x", forged, 200, "1.2.3.4|1.2.3.4, 127.0.0.1"},
			{"b.example", "/adm/", forged, 200, "admin"},
			{"b.example", "/adm/", honest, 403, ""},
			{"b.example", "/p/x", forged, 200, "10.9.9.9|1.2.3.4, 127.0.0.1"},
		} {
			resp, body := c.Get(t, tc.path, append([]string{"Host: " + tc.host}, tc.hdr...)...)
			if resp.StatusCode != tc.status || tc.body != "" && string(body) != tc.body {
				t.Errorf("%s%s with %q: %d %q, want %d %q", tc.host, tc.path, tc.hdr, resp.StatusCode, body, tc.status, tc.body)
			}
		}
	})
	// Each client made three requests per site; the log names the same
	// client as allow did: the one of the forged requests is the one
	// X-Forwarded-For names on a.example, X-Real-IP on b.example.
	for host, forgedFrom := range map[string]string{"a.example": "1.2.3.4 ", "b.example": "10.9.9.9 "} {
		honestFrom := map[string]string{"1.2.3.4 ": "10.9.9.9 ", "10.9.9.9 ": "1.2.3.4 "}[forgedFrom]
		for _, l := range flushedLog(t, e, logs[host], 9) {
			want := forgedFrom
			if strings.Contains(l, "/adm/") && strings.Contains(l, " 200 ") == (host == "a.example") {
				want = honestFrom
			}
			if !strings.HasPrefix(l, want) {
				t.Errorf("%s log: %s\nwant it to start with %q", host, l, want)
			}
		}
	}
}
