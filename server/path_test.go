package server

import (
	"net/url"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/internal/wire"
)

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"/":             "/",
		"/a/b":          "/a/b",
		"/a/b/":         "/a/b/",
		"//a///b":       "/a/b",
		"/a/./b":        "/a/b",
		"/a/b/..":       "/a/",
		"/a/b/../c":     "/a/c",
		"/a/..":         "/",
		"/.":            "/",
		"/./":           "/",
		"/a/.hidden":    "/a/.hidden",
		"/a/...":        "/a/...",
		"/a/..b":        "/a/..b",
		"/.well-known/": "/.well-known/",
	} {
		got, ok := cleanPath(in)
		if !ok || got != want {
			t.Errorf("cleanPath(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "a", "/..", "/../a", "/a/../..", "/a\\b", "/a\x00b", "*", "/a/..;/b", "/a/..;x=1/b", "/.;/a"} {
		if got, ok := cleanPath(in); ok {
			t.Errorf("cleanPath(%q) = %q, accepted", in, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { cleanPath("/assets/app.js") }); n != 0 {
		t.Errorf("cleanPath allocates on a clean path")
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/a/../b", "/./", "//x", "/a/b/..", "/..", "/a\\b", "/%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		out, ok := cleanPath(p)
		if !ok {
			return
		}
		if !strings.HasPrefix(out, "/") || strings.Contains(out, "//") || strings.ContainsAny(out, "\\\x00") {
			t.Fatalf("cleanPath(%q) = %q", p, out)
		}
		for _, seg := range strings.Split(out, "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("cleanPath(%q) = %q keeps a dot segment", p, out)
			}
		}
		if again, ok := cleanPath(out); !ok || again != out {
			t.Fatalf("cleanPath not idempotent: %q -> %q -> %q", p, out, again)
		}
	})
}

func TestMatchRoute(t *testing.T) {
	s := &site{}
	for _, p := range []string{"/", "/app/", "/api", "/proxy/"} {
		s.routes = append(s.routes, &route{prefix: p})
	}
	sortRoutes(s.routes)
	cases := []struct{ path, route, redirect string }{
		{"/", "/", ""},
		{"/x", "/", ""},
		{"/app/", "/app/", ""},
		{"/app/x/y", "/app/", ""},
		{"/app", "/", "/app/"},
		{"/application", "/", ""},
		{"/api", "/api", ""},
		{"/api/v1", "/api", ""},
		{"/apix", "/", ""},
		{"/proxy", "/", "/proxy/"},
	}
	for _, c := range cases {
		r, redirect := s.matchRoute(c.path)
		got := ""
		if r != nil {
			got = r.prefix
		}
		if got != c.route || redirect != c.redirect {
			t.Errorf("matchRoute(%q) = %q, %q; want %q, %q", c.path, got, redirect, c.route, c.redirect)
		}
	}
}

func TestVhostMatch(t *testing.T) {
	a, b, w, d := &site{}, &site{}, &site{}, &site{}
	v := &vhosts{exact: map[string]*site{"a.example": a, "b.example": b, "::1": b}, def: d,
		wild: []wildSite{{".example", w}}}
	for host, want := range map[string]*site{
		"a.example":      a,
		"A.Example":      a,
		"a.example:8443": a,
		"a.example.":     a,
		"b.example":      b,
		"[::1]:8080":     b,
		"x.example":      w,
		"x.y.example":    w,
		"example":        d,
		"":               d,
		"other.org":      d,
		"a.example.evil": d,
	} {
		if got := v.match(host); got != want {
			t.Errorf("match(%q) wrong site", host)
		}
	}
}

// normalizeURL: routing gets the cleaned decoded path, handlers the same
// path as the client encoded it; %2F is data, never a separator, and a dot
// segment hidden behind one is refused (issue 18).
func TestNormalizeURL(t *testing.T) {
	for _, c := range []struct{ in, path, raw string }{
		{"/a/b", "/a/b", ""},
		{"/caf%C3%A9", "/café", ""},
		{"/api/items/a%2F%2Fb", "/api/items/a//b", "/api/items/a%2F%2Fb"},
		{"/api/items/a%2fb/", "/api/items/a/b/", "/api/items/a%2fb/"},
		{"/x/../api/./a%2Fb", "/api/a/b", "/api/a%2Fb"},
		{"//api//a%2Fb", "/api/a/b", "/api/a%2Fb"},
		{"/a/%2e%2e/b%3Bc", "/b;c", "/b%3Bc"},
		{"/a/%2E/caf%c3%a9", "/a/café", "/a/caf%c3%a9"},
		{"/%2F", "//", "/%2F"},
		{"/a%2F.b", "/a/.b", "/a%2F.b"},
	} {
		u := &url.URL{}
		if err := wire.SetPath(u, c.in); err != nil { // as the engines do
			t.Fatal(err)
		}
		if !normalizeURL(u) || u.Path != c.path || u.RawPath != c.raw {
			t.Errorf("normalizeURL(%q): Path %q RawPath %q; want %q %q", c.in, u.Path, u.RawPath, c.path, c.raw)
		}
		if got, want := wire.ClientPath(u), c.raw; want != "" && got != want {
			t.Errorf("ClientPath(%q) = %q", c.in, got)
		}
	}
	for _, in := range []string{
		"/a%2F..%2Fsecret", "/files/a%2F..%2F..%2Fetc", "/a/%2E%2E%2Fb", "/.%2F", "/x%2f.",
		"/%2e%2e/a%2Fb", "/a%2Fb%5C", "/a%2Fb%00", "/..",
		"/app/..;/admin/", "/app/..%3B/admin/", "/app/%2e%2e;jsessionid=1/admin", "/a%2F..;%2Fb",
	} {
		u := &url.URL{}
		if err := wire.SetPath(u, in); err != nil {
			t.Fatal(err)
		}
		if normalizeURL(u) {
			t.Errorf("normalizeURL(%q) accepted: %q %q", in, u.Path, u.RawPath)
		}
	}
	u := &url.URL{Path: "/assets/app.js"}
	if n := testing.AllocsPerRun(100, func() { normalizeURL(u) }); n != 0 {
		t.Errorf("normalizeURL allocates on a clean path")
	}
}

// FuzzNormalizeURL: whatever the client sends, an accepted path has no dot
// segment and no empty one, its encoded form decodes to it, and splitting
// either at real slashes gives the same segments.
func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"/a/../b", "/a%2F..%2Fb", "/%2e%2e/", "//x%2f/", "/a/%2E/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		u := &url.URL{}
		if len(in) == 0 || in[0] != '/' || wire.SetPath(u, in) != nil {
			return
		}
		if !normalizeURL(u) {
			return
		}
		for _, seg := range strings.Split(u.Path, "/")[1:] {
			if seg == ".." || seg == "." || dotParams(seg) {
				t.Fatalf("%q -> %q keeps a dot segment", in, u.Path)
			}
		}
		raw := wire.ClientPath(u)
		if strings.Contains(raw, "//") {
			t.Fatalf("%q -> %q keeps an empty segment", in, raw)
		}
		if dec, err := url.PathUnescape(raw); err != nil || dec != u.Path {
			t.Fatalf("%q -> %q, which decodes to %q, not %q", in, raw, dec, u.Path)
		}
	})
}
