package server

import (
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/realip"
	"github.com/arkaweb/arka/server/internal/wire"
)

// headerOps are a route's response field changes (config.HeaderOps),
// compiled: canonical names and value slices built once, with their
// capacity equal to their length so that nobody appending to a response's
// field can write into them. Applying them allocates nothing unless a
// response already carries a field the route adds to (or Vary).
type headerOps struct {
	remove []string
	set    []headerKV
	add    []headerKV
	vary   []string // Vary tokens to merge, from set and add
}

type headerKV struct {
	k string
	v []string
}

func compileHeaders(o *config.HeaderOps) *headerOps {
	if o == nil {
		return nil
	}
	h := &headerOps{}
	for _, k := range o.Remove {
		h.remove = append(h.remove, http.CanonicalHeaderKey(k))
	}
	varyOf := func(vals []string) {
		for _, v := range vals {
			for _, t := range strings.Split(v, ",") {
				if t = strings.TrimSpace(t); t != "" {
					h.vary = append(h.vary, t)
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.Set)) {
		ck := http.CanonicalHeaderKey(k)
		if ck == "Vary" {
			varyOf([]string{o.Set[k]})
			continue
		}
		h.set = append(h.set, headerKV{ck, []string{o.Set[k]}})
	}
	for _, k := range slices.Sorted(maps.Keys(o.Add)) {
		ck := http.CanonicalHeaderKey(k)
		vals := append([]string(nil), o.Add[k]...)
		if ck == "Vary" {
			varyOf(vals)
			continue
		}
		h.add = append(h.add, headerKV{ck, vals[:len(vals):len(vals)]})
	}
	h.vary = h.vary[:len(h.vary):len(h.vary)]
	return h
}

// apply changes the fields of a response about to be sent: remove, set,
// add, then merge Vary (RFC 9110 section 12.5.5: a response varies on the
// union of what every party chose it by, so Vary is never replaced).
// Caching fields (wire.CachingField) are set or added only when caching
// is true: for 2xx and 304 responses, never for errors.
func (o *headerOps) apply(h http.Header, caching bool) {
	for _, k := range o.remove {
		delete(h, k)
	}
	for _, kv := range o.set {
		if caching || !wire.CachingField(kv.k) {
			h[kv.k] = kv.v
		}
	}
	for _, kv := range o.add {
		if !caching && wire.CachingField(kv.k) {
			continue
		}
		if old := h[kv.k]; len(old) > 0 {
			h[kv.k] = append(old[:len(old):len(old)], kv.v...)
		} else {
			h[kv.k] = kv.v
		}
	}
	if len(o.vary) == 0 {
		return
	}
	old := h["Vary"]
	if len(old) == 0 {
		h["Vary"] = o.vary
		return
	}
	if wire.HasToken(old, "*") {
		return
	}
	merged := old[:len(old):len(old)]
	for _, t := range o.vary {
		if !wire.HasToken(old, t) {
			merged = append(merged, t)
		}
	}
	h["Vary"] = merged
}

// guard is the access part of a route's options, run before its handler:
// deny and allow (403), then basic_auth (401).
type guard struct {
	next    http.Handler
	allow   []netip.Prefix
	deny    []netip.Prefix
	trusted []netip.Prefix
	field   config.ClientIPHeader // the site's client_ip_header
	auth    *basicAuth
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(g.allow) > 0 || len(g.deny) > 0 {
		if !g.permits(realip.Client(r.RemoteAddr, r.Header, g.trusted, g.field)) {
			errpage.Write(w, r, http.StatusForbidden)
			return
		}
	}
	if g.auth != nil && !g.auth.check(w, r, g.trusted, g.field) {
		return
	}
	g.next.ServeHTTP(w, r)
}

// permits reports whether client (an address without port) may use the
// route: not in deny, and in allow when allow is not empty. An address that
// does not parse is refused.
func (g *guard) permits(client string) bool {
	a, err := netip.ParseAddr(client)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range g.deny {
		if p.Contains(a) {
			return false
		}
	}
	if len(g.allow) == 0 {
		return true
	}
	for _, p := range g.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// routeOptions compiles a route's options around its handler h. A route
// without options gets h back unchanged and a nil headerOps.
func (s *Server) routeOptions(cs *config.Site, cr *config.Route, h http.Handler, trusted []netip.Prefix) (http.Handler, *headerOps) {
	o := &cr.Options
	hdr := compileHeaders(o.Headers)
	if len(o.Allow) == 0 && len(o.Deny) == 0 && o.BasicAuth == nil {
		return h, hdr
	}
	g := &guard{next: h, allow: o.Allow, deny: o.Deny, trusted: trusted, field: cs.ClientIPHeader}
	if o.BasicAuth != nil {
		g.auth = newBasicAuth(o.BasicAuth, s.log.With(slog.String("site", siteName(cs)), slog.String("route", cr.Path)))
	}
	return g, hdr
}

func siteName(cs *config.Site) string {
	if len(cs.ServerNames) > 0 {
		return cs.ServerNames[0]
	}
	return "default"
}

// trustedFor returns the networks whose forwarding fields a route
// believes: its proxy handler's trusted_proxies, else the site's.
func trustedFor(cs *config.Site, cr *config.Route) []netip.Prefix {
	if p, ok := cr.Handler.(*config.Proxy); ok && len(p.TrustedProxies) > 0 {
		return p.TrustedProxies
	}
	return cs.TrustedProxies
}

// logTrusted are the proxies whose forwarding fields the site's access log
// believes: the site's trusted_proxies and those of its proxy routes.
func logTrusted(cs *config.Site) []netip.Prefix {
	out := cs.TrustedProxies
	for i := range cs.Routes {
		if cr := &cs.Routes[i]; trustsOwn(cr) {
			out = append(out[:len(out):len(out)], trustedFor(cs, cr)...)
		}
	}
	return out
}

// trustsOwn reports whether a route names its own trusted proxies (a proxy
// route's trusted_proxies).
func trustsOwn(cr *config.Route) bool {
	p, ok := cr.Handler.(*config.Proxy)
	return ok && len(p.TrustedProxies) > 0
}
