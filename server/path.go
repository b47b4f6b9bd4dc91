package server

import (
	"net/url"
	"strings"

	"github.com/arkaweb/arka/server/internal/wire"
)

// cleanPath normalizes a decoded request path for routing and file lookup:
// "." and ".." segments are resolved (RFC 3986 section 5.2.4) and repeated
// slashes merged, keeping a trailing slash. It reports false for paths that
// must be refused with 400: not starting with "/", containing NUL or a
// backslash, with ".." climbing above "/", or with a dot segment carrying
// path parameters (dotParams). The common case (nothing to
// clean) returns p itself without allocating.
func cleanPath(p string) (string, bool) {
	if p == "" || p[0] != '/' {
		return "", false
	}
	dirty := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case 0, '\\':
			return "", false
		case '/':
			if i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.') {
				dirty = true
			}
		}
	}
	if !dirty {
		return p, true
	}
	segs := make([]string, 0, 8)
	trailing := false
	for _, s := range strings.Split(p[1:], "/") {
		switch s {
		case "":
			trailing = true
			continue
		case ".":
			trailing = true
			continue
		case "..":
			if len(segs) == 0 {
				return "", false
			}
			segs = segs[:len(segs)-1]
			trailing = true
			continue
		}
		if dotParams(s) {
			return "", false
		}
		segs = append(segs, s)
		trailing = false
	}
	out := "/" + strings.Join(segs, "/")
	if trailing && len(segs) > 0 {
		out += "/"
	}
	return out, true
}

// normalizeURL normalizes a request's path for routing and the handlers,
// in place: u.Path becomes the cleaned decoded path (cleanPath) and, when
// the client percent-encoded anything, u.RawPath the same path as the
// client encoded it, segment by segment (wire.ClientPath). It reports false
// for paths refused with 400 (cleanPath's, and encoded slashes that would
// hide a dot segment, below).
//
// An encoded slash (%2F) is data inside a segment, never a separator (RFC
// 3986 section 2.2): "/api/items/a%2F%2Fb" keeps its three segments, and
// the proxy sends it upstream as it came. Dot segments are recognized only
// between real slashes ("%2E%2E" is ".."); a segment in which an encoded
// slash would make a dot segment ("a%2F..%2Fsecret") is refused, since
// servers that decode %2F before removing dot segments would resolve it
// and servers that do not would not: no reading of it is safe to route.
func normalizeURL(u *url.URL) bool {
	if u.RawPath == "" || !wire.HasEncodedSlash(u) {
		p, ok := cleanPath(u.Path)
		if !ok {
			return false
		}
		if p == u.Path {
			return true
		}
		if u.RawPath == "" {
			u.Path = p
			return true
		}
	}
	esc, dec, ok := cleanRawPath(u.RawPath)
	if !ok {
		return false
	}
	u.Path, u.RawPath = dec, esc
	return true
}

// cleanRawPath is cleanPath over an escaped path, keeping each segment's
// encoding: it returns the cleaned escaped path and its decoding.
func cleanRawPath(raw string) (esc, dec string, ok bool) {
	if raw == "" || raw[0] != '/' {
		return "", "", false
	}
	var escs, decs []string
	trailing := false
	for _, s := range strings.Split(raw[1:], "/") {
		d, err := url.PathUnescape(s)
		if err != nil || strings.IndexByte(d, 0) >= 0 || strings.IndexByte(d, '\\') >= 0 {
			return "", "", false
		}
		switch d {
		case "", ".":
			trailing = true
			continue
		case "..":
			if len(escs) == 0 {
				return "", "", false
			}
			escs, decs = escs[:len(escs)-1], decs[:len(decs)-1]
			trailing = true
			continue
		}
		if dotParams(d) {
			return "", "", false
		}
		if strings.IndexByte(d, '/') >= 0 {
			for _, part := range strings.Split(d, "/") {
				if part == "." || part == ".." || dotParams(part) {
					return "", "", false
				}
			}
		}
		escs, decs = append(escs, s), append(decs, d)
		trailing = false
	}
	esc, dec = "/"+strings.Join(escs, "/"), "/"+strings.Join(decs, "/")
	if trailing && len(escs) > 0 {
		esc, dec = esc+"/", dec+"/"
	}
	return esc, dec, true
}

// dotParams reports whether a decoded segment is a dot segment with path
// parameters (".;x", "..;x"): servlet containers such as Tomcat and Jetty
// drop the parameters and resolve what is left, so "/app/..;/admin/"
// routed here under /app/ would reach /admin/ there (the "..;/" bypass of
// route-based access rules). Refused with 400 like other ambiguous paths.
func dotParams(seg string) bool {
	return strings.HasPrefix(seg, ".;") || strings.HasPrefix(seg, "..;")
}
