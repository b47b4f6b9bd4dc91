package server

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/arkaweb/arka/config"
)

// A route with headers or allow rules adds no allocation per request.
func TestRouteOptionsAllocateNothing(t *testing.T) {
	ops := compileHeaders(&config.HeaderOps{
		Set:    map[string]string{"X-Frame-Options": "DENY", "Vary": "Origin"},
		Add:    map[string]config.StringList{"Link": {"</a>; rel=preload"}},
		Remove: []string{"X-Powered-By"},
	})
	h := http.Header{}
	g := &guard{allow: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, deny: []netip.Prefix{netip.MustParsePrefix("192.168.66.0/24")}}
	ct := []string{"text/html"}
	n := testing.AllocsPerRun(100, func() {
		clear(h)
		h["Content-Type"] = ct
		ops.apply(h, true)
		if !g.permits("192.168.1.1") || g.permits("192.168.66.1") || g.permits("::1") {
			t.Fatal("permits")
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per request", n)
	}
	if h.Get("X-Frame-Options") != "DENY" || h.Get("Vary") != "Origin" || h.Get("Link") == "" {
		t.Errorf("%v", h)
	}
	// Appending to a field must never write into the shared slices.
	h["Vary"] = append(h["Vary"], "Accept-Encoding")
	if len(ops.vary) != 1 || cap(ops.vary) != 1 {
		t.Errorf("shared Vary slice changed: %v", ops.vary)
	}
	// Vary is merged with what the handler set, never replaced, and "*" stays alone.
	h = http.Header{"Vary": {"Accept-Encoding, origin"}}
	ops.apply(h, true)
	if len(h["Vary"]) != 1 {
		t.Errorf("Vary origin already present: %v", h["Vary"])
	}
	h = http.Header{"Vary": {"Cookie"}}
	ops.apply(h, true)
	if len(h["Vary"]) != 2 || h["Vary"][1] != "Origin" {
		t.Errorf("Vary merge: %v", h["Vary"])
	}
}

func TestFailureKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":            "192.0.2.1",
		"::ffff:192.0.2.1":     "192.0.2.1",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2::9":      "2001:db8:1:2::/64",
		"junk":                 "junk",
	} {
		if got := failureKey(in); got != want {
			t.Errorf("failureKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// A route's caching fields go on 2xx and 304 responses only; its other
// fields on every response.
func TestRouteCachingFieldsOnlyOnSuccess(t *testing.T) {
	ops := compileHeaders(&config.HeaderOps{
		Set: map[string]string{"Cache-Control": "public, max-age=600", "X-Frame-Options": "DENY"},
		Add: map[string]config.StringList{"Expires": {"Thu, 01 Jan 2037 00:00:00 GMT"}},
	})
	for _, caching := range []bool{true, false} {
		h := http.Header{"Cache-Control": {"no-store"}}
		ops.apply(h, caching)
		want := "no-store"
		if caching {
			want = "public, max-age=600"
		}
		if h.Get("Cache-Control") != want || (h.Get("Expires") != "") != caching || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("caching %v: %v", caching, h)
		}
	}
}
