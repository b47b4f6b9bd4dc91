package server

import (
	"strings"
	"testing"
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
	for _, in := range []string{"", "a", "/..", "/../a", "/a/../..", "/a\\b", "/a\x00b", "*"} {
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
