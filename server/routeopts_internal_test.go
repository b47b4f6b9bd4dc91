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
		ops.apply(h)
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
	ops.apply(h)
	if len(h["Vary"]) != 1 {
		t.Errorf("Vary origin already present: %v", h["Vary"])
	}
	h = http.Header{"Vary": {"Cookie"}}
	ops.apply(h)
	if len(h["Vary"]) != 2 || h["Vary"][1] != "Origin" {
		t.Errorf("Vary merge: %v", h["Vary"])
	}
}
