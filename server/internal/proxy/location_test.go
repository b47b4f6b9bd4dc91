package proxy

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/arkaweb/arka/config"
)

// redirector answers 302 with the Location given in ?to=.
var redirector = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", r.URL.Query().Get("to"))
	w.WriteHeader(http.StatusFound)
})

// TestLocationRewrite: like nginx's "proxy_redirect default", a Location
// that points at the upstream itself (its address as written in
// upstreams, the address connected to, or host_header) gets the client's
// scheme and host, and with strip_prefix the route prefix back, as do
// paths starting with "/"; other URLs are left alone.
func TestLocationRewrite(t *testing.T) {
	up := startUpstream(t, redirector)
	port := up.addr[strings.LastIndexByte(up.addr, ':')+1:]
	strip, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, StripPrefix: true})
	keep, _ := newProxy(t, config.Proxy{Upstreams: []string{"http://" + up.addr}})
	named, _ := newProxy(t, config.Proxy{Upstreams: []string{"localhost:" + port}, StripPrefix: true})
	hosted, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, StripPrefix: true, HostHeader: "app.internal"})
	other := "127.0.0.1:1" // some other address
	if port == "1" {
		other = "127.0.0.1:2"
	}
	cases := []struct {
		h        http.Handler
		to, want string // want: "SELF" stands for the client's scheme://host
	}{
		{strip, "http://" + up.addr + "/login?next=%2Fa#top", "SELF/proxy/login?next=%2Fa#top"},
		{strip, "HTTP://" + up.addr, "SELF/proxy/"},
		{strip, "http://" + up.addr + "?x=1", "SELF/proxy/?x=1"},
		{strip, "//" + up.addr + "/x", "SELF/proxy/x"},
		{strip, "/login", "/proxy/login"},
		{strip, "/", "/proxy/"},
		{strip, "login", "login"},
		{strip, "https://" + up.addr + "/x", "https://" + up.addr + "/x"}, // the upstream speaks http
		{strip, "http://" + other + "/x", "http://" + other + "/x"},
		{strip, "https://example.org/elsewhere", "https://example.org/elsewhere"},
		{strip, "http://user@" + up.addr + "/x", "http://user@" + up.addr + "/x"},
		{keep, "http://" + up.addr + "/proxy/a", "SELF/proxy/a"},
		{keep, "/proxy/a", "/proxy/a"},
		{named, "http://localhost:" + port + "/x", "SELF/proxy/x"},
		{named, "http://LOCALHOST:" + port + "/x", "SELF/proxy/x"},
		{named, "http://127.0.0.1:" + port + "/x", "SELF/proxy/x"}, // the address connected to
		{hosted, "https://app.internal/x", "SELF/proxy/x"},
		{hosted, "http://app.internal:80/x", "SELF/proxy/x"},
		{hosted, "http://app.internal:8080/x", "http://app.internal:8080/x"},
	}
	for _, p := range protos {
		fronts := map[http.Handler]front{}
		for _, c := range cases {
			f, ok := fronts[c.h]
			if !ok {
				f = startFront(t, p, c.h)
				fronts[c.h] = f
			}
			client := *f.client
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, _ := get(t, &client, f.url("/proxy/r?to="+url.QueryEscape(c.to)), "Host", "site.example:8443")
			want := c.want
			if rest, ok := strings.CutPrefix(want, "SELF"); ok {
				scheme := "https"
				if p == "h1" {
					scheme = "http"
				}
				want = scheme + "://site.example:8443" + rest
			}
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
				t.Errorf("%s: upstream Location %q: got %d %q, want %q", p, c.to, resp.StatusCode, resp.Header.Get("Location"), want)
			}
		}
	}
}
