package server

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/acme"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/fastcgi"
	"github.com/arkaweb/arka/server/internal/proxy"
)

// table is one compiled configuration: every listener's virtual hosts,
// routes and handlers. It is immutable once built; a reload builds a new
// one and swaps it in, and the old one is closed when the last request
// that started on it ends (see acquire and release).
type table struct {
	vhosts  map[string]*vhosts // by listen address
	closers []interface{ Close() error }
	proxies []*proxy.Handler   // also in closers; their upstreams go on the status page
	fastcgi []*fastcgi.Handler // for the status page's pool figures
	sinks   map[string]*logSink
	sites   []*config.Site // the configuration, for error positions
	// certs are the certificates the sites loaded from their files (or
	// kept from the table before, see keepCert), by site file.
	certs map[string]*tls.Certificate
	// problems are what KeepServing worked around while building (a
	// certificate replaced by a self-signed one), by problem key.
	problems map[string]string
	// selfCerts are the sites' self-signed certificates (clockjump.go).
	selfCerts []*selfCert

	// refs counts the requests running on the table, plus one while it is
	// the served table. The one who brings it to zero closes the table.
	refs      atomic.Int64
	closeOnce sync.Once
	onClose   []func() // run after the handlers are closed (sinks no longer used)
	closed    chan struct{}
}

// newTable returns an empty table holding its "served" reference.
func newTable() *table {
	t := &table{vhosts: map[string]*vhosts{}, sinks: map[string]*logSink{}, certs: map[string]*tls.Certificate{}, closed: make(chan struct{})}
	t.refs.Store(1)
	return t
}

// release drops one reference; the last closes the table, in the
// background: the request that released it is not kept waiting.
func (t *table) release() {
	if t.refs.Add(-1) == 0 {
		go t.close()
	}
}

// vhosts are the sites reachable on one listen address.
type vhosts struct {
	t     *table        // the table these belong to
	acme  *acme.Manager // nil when no site has ACME certificates
	tls   bool
	exact map[string]*site // lower-case names
	wild  []wildSite       // "*.example.org" as suffix ".example.org", longest first
	def   *site            // default = true, or the only site without names
	first *site            // first site in file order, for a TLS certificate of last resort
}

type wildSite struct {
	suffix string
	s      *site
}

// site is one virtual host compiled.
type site struct {
	cfg    *config.Site
	routes []*route // longest prefix first
	reqID  bool
	log    *accessLog
	// maxBody is the largest request body accepted, in bytes; 0 = no limit.
	maxBody int64
	cert    *tls.Certificate // from the site's files; see tlsCert
	self    *selfCert        // or self-signed
	// httpsPort is where plain requests are redirected (redirect_https),
	// "" for no redirect; hsts the Strict-Transport-Security field value.
	httpsPort string
	hsts      []string
	trusted   []netip.Prefix // the site's trusted_proxies, for X-Forwarded-Proto
	// pages are the site's own error pages, nil without any.
	pages *errpage.Pages
	// tls13 is [tls] min_version = "1.3".
	tls13 bool
	// stats counts the responses no route made: a path refused, no route,
	// no site for the Host (counted on the address's first site), and the
	// engines' answers to requests they could not parse. The status page
	// shows it as the site's route "-".
	stats *RouteStats
}

// route returns the route whose prefix is exactly prefix, or nil.
func (s *site) route(prefix string) *route {
	for _, r := range s.routes {
		if r.prefix == prefix {
			return r
		}
	}
	return nil
}

// route is one compiled route: its handler with middleware already applied.
type route struct {
	prefix string
	h      http.Handler
	stats  *RouteStats
	// hdr are the route's response field changes (nil without any),
	// applied by the recorder when the response head is written.
	hdr *headerOps
	// trusted are the networks whose forwarding fields name the client.
	trusted []netip.Prefix
	// intercept: the site's error pages replace the handler's own error
	// bodies (intercept_errors, proxy and fastcgi routes).
	intercept bool
	// tunnels: the route takes extended CONNECT (RFC 8441, a WebSocket
	// over an HTTP/2 stream): proxy routes. Others answer it 405 with
	// allow, the value of the Allow field, and so do all to a TRACE (see
	// listener.dispatch).
	tunnels bool
	allow   []string
}

// match finds the site for a Host value (or SNI name): exact name, then the
// longest matching wildcard, then the default. The port and a trailing dot
// are ignored, case-insensitively.
func (v *vhosts) match(host string) *site {
	h := hostOnly(host)
	if h != "" {
		if s, ok := v.exact[h]; ok {
			return s
		}
		if hasUpper(h) {
			h = strings.ToLower(h)
			if s, ok := v.exact[h]; ok {
				return s
			}
		}
		for _, w := range v.wild {
			if len(h) > len(w.suffix) && strings.HasSuffix(h, w.suffix) {
				return w.s
			}
		}
	}
	return v.def
}

// hostOnly strips the port, IPv6 brackets and a trailing dot.
func hostOnly(host string) string {
	if host == "" {
		return ""
	}
	if host[0] == '[' {
		if i := strings.IndexByte(host, ']'); i > 0 {
			return host[1:i]
		}
		return host
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host, ':') == i {
		host = host[:i]
	}
	return strings.TrimSuffix(host, ".")
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// matchRoute returns the route for a normalized path by longest prefix.
// Prefixes match whole segments: "/app" matches "/app" and "/app/x", not
// "/application". When the path is a route prefix without its trailing slash
// ("/app" for route "/app/") and no longer route matches, redirect is that
// prefix, as nginx does for such locations.
func (s *site) matchRoute(p string) (rt *route, redirect string) {
	for _, r := range s.routes {
		pre := r.prefix
		if strings.HasPrefix(p, pre) {
			if pre[len(pre)-1] == '/' || len(p) == len(pre) || p[len(pre)] == '/' {
				return r, redirect
			}
			continue
		}
		if redirect == "" && len(pre) > 1 && pre[len(pre)-1] == '/' && len(p) == len(pre)-1 && pre[:len(p)] == p {
			redirect = pre
		}
	}
	return nil, redirect
}

func sortRoutes(rs []*route) {
	sort.SliceStable(rs, func(i, j int) bool { return len(rs[i].prefix) > len(rs[j].prefix) })
}

// close closes the table's handlers (once), whether or not requests still
// run on it: for a table never served, and for Shutdown once its wait is
// over.
func (t *table) close() {
	t.closeOnce.Do(t.closeHandlers)
}

func (t *table) closeHandlers() {
	defer close(t.closed)
	defer func() {
		for _, f := range t.onClose {
			f()
		}
	}()
	for _, c := range t.closers {
		c.Close()
	}
}
