package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

// X-Request-Id: a well-formed incoming id is kept only from a trusted
// proxy (the route's: a proxy route's own trusted_proxies, else the
// site's), and passed upstream; any other client's is replaced by a new
// one, so that a client cannot choose the id its requests are logged
// under.
func TestRequestIDFromTrustedProxyOnly(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get("X-Request-Id"))
	}))
	t.Cleanup(up.Close)
	site := func(name, trusted, routeTrusted string) string {
		return `server_names = ["` + name + `"]
listen = ["{{HTTP}}"]
request_id = true
` + trusted + `
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "respond", body = "ok" }
[[routes]]
path = "/p/"
handler = { type = "proxy", upstreams = ["` + up.Listener.Addr().String() + `"]` + routeTrusted + ` }
`
	}
	e := servertest.Start(t,
		"default = true\n"+site("trusted.example", `trusted_proxies = ["127.0.0.1"]`, ""),
		site("untrusted.example", "", ""),
		site("route.example", `trusted_proxies = ["192.0.2.1"]`, `, trusted_proxies = ["127.0.0.1"]`))
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, tc := range []struct {
			host, path string
			kept       bool
		}{
			{"trusted.example", "/", true},
			{"trusted.example", "/p/x", true},
			{"untrusted.example", "/", false},
			{"untrusted.example", "/p/x", false},
			{"route.example", "/", false}, // the site trusts another proxy
			{"route.example", "/p/x", true},
		} {
			resp, body := c.Get(t, tc.path, "Host: "+tc.host, "X-Request-Id: from-client.42")
			id := resp.Header.Get("X-Request-Id")
			if kept := id == "from-client.42"; kept != tc.kept || id == "" {
				t.Errorf("%s%s: X-Request-Id %q, want the client's kept: %v", tc.host, tc.path, id, tc.kept)
			}
			if strings.HasPrefix(tc.path, "/p/") && string(body) != id {
				t.Errorf("%s%s: upstream got X-Request-Id %q, the client %q", tc.host, tc.path, body, id)
			}
		}
	})
}
