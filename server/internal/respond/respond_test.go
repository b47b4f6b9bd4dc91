package respond

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/arkaweb/arka/config"
)

func TestLocation(t *testing.T) {
	cases := []struct {
		to, prefix string
		strip      bool
		target     string // request path?query (decoded path as the server has it)
		host       string
		tls        bool
		want       string
	}{
		{"https://example.org{uri}", "/", false, "/a/b?x=1", "www.example.org", false, "https://example.org/a/b?x=1"},
		{"https://example.org{uri}", "/", false, "/", "www.example.org", false, "https://example.org/"},
		{"{scheme}://{host}/new{path}{?query}", "/old/", true, "/old/a?q", "Example.ORG:8080", true, "https://example.org/new/a?q"},
		{"/new{path}", "/old/", true, "/old/", "h", false, "/new/"},
		{"/new/{path}", "/old/", true, "/old/a", "h", false, "/new/a"},
		{"/new{path}", "/old/", false, "/old/a", "h", false, "/new/old/a"},
		{"/search?q={query}", "/", false, "/?a b#c", "h", false, "/search?q=a%20b%23c"},
		// Bytes RFC 3986 does not allow in a query are encoded; "%" stays.
		{"/s{?query}", "/", false, `/?q="<script>"&x={|}^\` + "`" + `&y=%41`, "h", false, "/s?q=%22%3Cscript%3E%22&x=%7B%7C%7D%5E%5C%60&y=%41"},
		// Hostile input: line breaks and spaces in the path are encoded...
		{"{path}", "/", false, "/a\r\nSet-Cookie: x=1", "h", false, "/a%0D%0ASet-Cookie:%20x=1"},
		// ...a decoded "?" or "#" cannot start a query or fragment...
		{"{path}", "/", false, "/a?b#c", "h", false, "/a%3Fb%23c"},
		// ...and a path cannot make a relative target scheme-relative.
		{"{path}", "/", false, "//evil.example/x", "h", false, "/evil.example/x"},
		{"/{path}", "/", false, "//evil.example/x", "h", false, "/evil.example/x"},
		{"{uri}", "/go/", true, "/go//evil.example", "h", false, "/evil.example"},
		{"https://example.org/{path}", "/", false, "/x", "h", false, "https://example.org/x"},
		// The escaped path (RawPath) when it has an encoded slash: %2F stays.
		{"/new{path}", "/old/", true, "/old/a%2Fb/%41%2f", "h", false, "/new/a%2Fb/A%2F"},
		{"{path}", "/", false, "/%2F%2Fevil.example", "h", false, "/%2F%2Fevil.example"},
		{"/n{path}", "/", false, "/a%2Fb%0D%0AX:%20y%25", "h", false, "/n/a%2Fb%0D%0AX:%20y%25"},
	}
	for _, c := range cases {
		parts, err := config.ParseTemplate(c.to)
		if err != nil {
			t.Fatal(err)
		}
		h := NewRedirect(c.prefix, &config.Redirect{Parts: parts, Status: 301, StripPrefix: c.strip}, nil)
		u := &url.URL{Path: c.target}
		if p, err := url.PathUnescape(c.target); err == nil && p != c.target {
			u.Path, u.RawPath = p, c.target
		}
		if i := indexByte(c.target, '?'); i >= 0 && c.to != "{path}" {
			u.Path, u.RawQuery = c.target[:i], c.target[i+1:]
		}
		r := &http.Request{URL: u, Host: c.host}
		if c.tls {
			r.TLS = &tls.ConnectionState{}
		}
		got, ok := h.Location(r)
		if !ok || got != c.want {
			t.Errorf("%s for %q: %q %v, want %q", c.to, c.target, got, ok, c.want)
		}
	}
	// A host that is not a host name is refused rather than put in a URL.
	h := NewRedirect("/", &config.Redirect{To: "https://{host}/", Status: 301}, nil)
	for _, host := range []string{"evil.example/x", "a@evil.example", "a\r\nb", "", "[::1"} {
		if loc, ok := h.Location(&http.Request{URL: &url.URL{Path: "/"}, Host: host}); ok {
			t.Errorf("host %q accepted: %q", host, loc)
		}
	}
}

// {scheme} is "https" behind a trusted TLS-terminating proxy (so a
// redirect does not send its clients to http and into redirect_https
// again), and only behind a trusted one.
func TestSchemeBehindTrustedProxy(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	h := NewRedirect("/", &config.Redirect{To: "{scheme}://{host}/x", Status: 301}, trusted)
	cases := []struct {
		remote, header, want string
	}{
		{"10.1.2.3:5000", "X-Forwarded-Proto: https", "https://h/x"},
		{"10.1.2.3:5000", "Forwarded: for=192.0.2.1;proto=https", "https://h/x"},
		{"10.1.2.3:5000", "X-Forwarded-Proto: http", "http://h/x"},
		{"10.1.2.3:5000", "", "http://h/x"},
		{"192.0.2.9:5000", "X-Forwarded-Proto: https", "http://h/x"}, // not a trusted proxy
	}
	for _, c := range cases {
		r := &http.Request{URL: &url.URL{Path: "/"}, Host: "h", RemoteAddr: c.remote, Header: http.Header{}}
		if k, v, ok := strings.Cut(c.header, ": "); ok {
			r.Header.Set(k, v)
		}
		if got, _ := h.Location(r); got != c.want {
			t.Errorf("from %s with %q: %q, want %q", c.remote, c.header, got, c.want)
		}
	}
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
