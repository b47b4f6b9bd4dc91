package proxy

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// Location rewriting, like nginx's default "proxy_redirect default": an
// upstream that does not know it sits behind a proxy builds redirects from
// its own address ("http://127.0.0.1:8080/login") or from the Host it was
// given (host_header), and, behind strip_prefix, from paths that lack the
// route prefix. Such a Location would send the client to an address it
// cannot reach, or out of the route. Only the Location field is rewritten
// (RFC 9110 section 10.2.2); other absolute URLs are left alone.

// authority is a host and port an upstream answers as, for matching
// Location URLs. Hosts are lower case; IP addresses in canonical form.
type authority struct {
	host, port string
	scheme     string // "" matches http and https, else only this scheme
}

// selfAuthorities lists the names of the route's upstreams: each TCP
// upstream's address as written in upstreams (with its scheme), and
// host_header (either scheme, with the scheme's default port when it has
// none).
func selfAuthorities(ups []*upstream, hostHeader string) []authority {
	var out []authority
	for _, u := range ups {
		if u.network != "tcp" {
			continue
		}
		if host, port, err := net.SplitHostPort(u.address); err == nil {
			out = append(out, authority{host: canonicalHost(host), port: port, scheme: u.scheme()})
		}
	}
	if hostHeader != "" {
		host, port := splitAuthority(hostHeader)
		out = append(out, authority{host: canonicalHost(host), port: port})
	}
	return out
}

// splitAuthority splits "host:port", "[v6]:port", "host" or "[v6]" into
// host (without brackets) and port ("" when absent).
func splitAuthority(a string) (host, port string) {
	if h, p, err := net.SplitHostPort(a); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"), ""
}

func canonicalHost(h string) string {
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().String()
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// rewriteLocation returns the Location the client should get for loc, an
// upstream's Location field, and whether it differs. c is the connection
// the response came on (its peer address is the upstream's own address
// too).
//
//   - An absolute "http://" URL (or a "//" reference) naming an upstream of
//     the route, as written in upstreams or as connected to, or an "http://"
//     or "https://" URL naming host_header, gets the client's scheme and
//     Host, and the route prefix back in front of its path with
//     strip_prefix.
//   - A path starting with "/" gets the route prefix back with
//     strip_prefix.
//   - Anything else (other hosts, relative paths without "/") is kept.
func (h *Handler) rewriteLocation(loc string, r *http.Request, c *conn) (string, bool) {
	prefix := ""
	if h.strip && h.route != "/" {
		prefix = strings.TrimSuffix(h.route, "/")
	}
	if strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") {
		if prefix == "" {
			return loc, false
		}
		return prefix + loc, true
	}
	var scheme, rest string
	switch {
	case len(loc) > 7 && strings.EqualFold(loc[:7], "http://"):
		scheme, rest = "http", loc[7:]
	case len(loc) > 8 && strings.EqualFold(loc[:8], "https://"):
		scheme, rest = "https", loc[8:]
	case strings.HasPrefix(loc, "//"):
		scheme, rest = "http", loc[2:] // the scheme the upstream is spoken to
	default:
		return loc, false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth, path := rest[:end], rest[end:]
	if auth == "" || strings.IndexByte(auth, '@') >= 0 {
		return loc, false // no host, or userinfo: not a plain link to the upstream
	}
	host, port := splitAuthority(auth)
	host = canonicalHost(host)
	if port == "" {
		port = defaultPort(scheme)
	}
	if !h.isSelf(host, port, scheme, c) {
		return loc, false
	}
	if path == "" || path[0] != '/' {
		path = "/" + path // "http://up:8080?x" is "/?x"
	}
	path = prefix + path
	if r.Host == "" {
		return path, true
	}
	out := "http://"
	if r.TLS != nil {
		out = "https://"
	}
	return out + r.Host + path, true
}

// isSelf reports whether host:port (of a URL with scheme) names an
// upstream of the route or the peer of c.
func (h *Handler) isSelf(host, port, scheme string, c *conn) bool {
	for _, a := range h.self {
		if a.host != host || a.scheme != "" && a.scheme != scheme {
			continue
		}
		p := a.port
		if p == "" {
			p = defaultPort(scheme)
		}
		if p == port {
			return true
		}
	}
	if c == nil || scheme != c.up.scheme() {
		return false
	}
	if ta, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return canonicalHost(ap.Addr().String()) == host && strconv.Itoa(int(ap.Port())) == port
	}
	return false
}
