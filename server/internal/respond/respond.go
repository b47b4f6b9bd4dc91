// Package respond holds the handlers that answer from the configuration
// alone: redirect (a Location built from the request) and respond (a fixed
// status and body).
package respond

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/realip"
	"github.com/arkaweb/arka/server/internal/wire"
)

// Redirect answers every request with a redirection to a target built from
// a template (config.Redirect). It never produces a Location with a line
// break, space or fragment taken from the request, nor a scheme-relative
// one ("//evil.example") out of a relative template.
type Redirect struct {
	parts  []config.TemplatePart
	status int
	strip  string // route prefix removed from {path}, or ""
	// trusted are the site's trusted_proxies: {scheme} is "https" when
	// one of them says the client came over HTTPS.
	trusted []netip.Prefix
}

// NewRedirect returns the handler of a redirect route at prefix; trusted
// are the site's trusted_proxies (for {scheme} behind a TLS-terminating
// proxy).
func NewRedirect(prefix string, c *config.Redirect, trusted []netip.Prefix) *Redirect {
	h := &Redirect{parts: c.Parts, status: c.Status, trusted: trusted}
	if h.parts == nil {
		h.parts, _ = config.ParseTemplate(c.To)
	}
	if c.StripPrefix {
		h.strip = strings.TrimSuffix(prefix, "/")
	}
	return h
}

func (h *Redirect) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	loc, ok := h.Location(r)
	if !ok {
		errpage.Write(w, r, http.StatusBadRequest)
		return
	}
	w.Header()["Location"] = []string{loc}
	errpage.Write(w, r, h.status)
}

// Location expands the template for r. It reports false when the request's
// host is not a host name or address (it cannot be put in a URL safely).
func (h *Redirect) Location(r *http.Request) (string, bool) {
	b := make([]byte, 0, 128)
	p := r.URL.Path
	// With an encoded slash in it, {path} is built from the path as the
	// client encoded it, so that %2F stays data inside its segment (as
	// the proxy and the static handler keep it) instead of becoming a
	// separator in the target.
	escaped := wire.HasEncodedSlash(r.URL)
	if escaped {
		p = r.URL.RawPath
	}
	if h.strip != "" {
		if escaped {
			p = cutDecoded(p, len(h.strip))
		} else {
			p = strings.TrimPrefix(p, h.strip)
		}
	}
	for _, part := range h.parts {
		switch part.Kind {
		case config.Literal:
			b = append(b, part.Text...)
		case config.PhPath:
			b = appendPath(b, p, escaped)
		case config.PhQuery:
			b = appendQuery(b, r.URL.RawQuery)
		case config.PhQueryMark:
			if r.URL.RawQuery != "" {
				b = append(b, '?')
				b = appendQuery(b, r.URL.RawQuery)
			}
		case config.PhURI:
			b = appendPath(b, p, escaped)
			if r.URL.RawQuery != "" {
				b = append(b, '?')
				b = appendQuery(b, r.URL.RawQuery)
			}
		case config.PhHost:
			host, ok := hostName(r.Host)
			if !ok {
				return "", false
			}
			b = append(b, host...)
		case config.PhScheme:
			if r.TLS != nil || realip.ForwardedHTTPS(r, h.trusted) {
				b = append(b, "https"...)
			} else {
				b = append(b, "http"...)
			}
		}
	}
	// Defence in depth: a relative target stays on this site.
	for len(b) > 1 && b[0] == '/' && (b[1] == '/' || b[1] == '\\') {
		b = b[1:]
	}
	return string(b), true
}

// cutDecoded returns the escaped path raw less the bytes that decode to
// its first n decoded bytes (a route prefix).
func cutDecoded(raw string, n int) string {
	i := 0
	for d := 0; d < n && i < len(raw); d++ {
		if raw[i] == '%' && i+2 < len(raw) {
			i += 3
		} else {
			i++
		}
	}
	return raw[i:]
}

// appendPath appends the path p percent-encoded (RFC 3986 section 3.3),
// so that a decoded "?", "#", "%", space or control byte cannot change
// the meaning of the target. With escaped, p is a path as the client
// encoded it: each %XX is decoded and encoded again, an encoded slash
// staying %2F. After "/" (or at the start) leading slashes of p are
// merged with it: the result never starts with "//".
func appendPath(b []byte, p string, escaped bool) []byte {
	if len(b) == 0 || b[len(b)-1] == '/' {
		p = strings.TrimLeft(p, "/")
		if len(b) == 0 {
			b = append(b, '/')
		}
	}
	const hexd = "0123456789ABCDEF"
	for i := 0; i < len(p); i++ {
		c := p[i]
		if escaped && c == '%' && i+2 < len(p) && ishex(p[i+1]) && ishex(p[i+2]) {
			c = unhex(p[i+1])<<4 | unhex(p[i+2])
			i += 2
			if c == '/' {
				b = append(b, "%2F"...)
				continue
			}
		}
		if pathChar(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexd[c>>4], hexd[c&15])
	}
	return b
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// pathChar: unreserved, sub-delims, ":", "@" and "/" (RFC 3986 pchar).
func pathChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0
}

// appendQuery appends a raw query, percent-encoding what may not appear
// in a field value or would end the query (control bytes, space, "#",
// non-ASCII) and the other bytes RFC 3986 does not allow in a query
// (`"<>\^{|}` and the backquote); "%" stays, as the query is already
// encoded.
func appendQuery(b []byte, q string) []byte {
	const hexd = "0123456789ABCDEF"
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("#\"<>\\^`{|}", c) >= 0 {
			b = append(b, '%', hexd[c>>4], hexd[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

// hostName returns the host of a Host field value without the port (IPv6
// in brackets), lower-cased, if it is a host name or an IP literal.
func hostName(h string) (string, bool) {
	if strings.HasPrefix(h, "[") {
		i := strings.IndexByte(h, ']')
		if i < 0 {
			return "", false
		}
		for _, c := range []byte(h[1:i]) {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.') {
				return "", false
			}
		}
		return strings.ToLower(h[:i+1]), true
	}
	if i := strings.IndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", false
	}
	for _, c := range []byte(h) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", false
		}
	}
	return strings.ToLower(h), true
}

// Respond answers every request with a fixed status and body.
type Respond struct {
	status int
	body   []byte
	ct, cl []string
}

// New returns the handler of a respond route.
func New(c *config.Respond) *Respond {
	h := &Respond{status: c.Status, body: []byte(c.Body)}
	h.ct = []string{c.ContentType}
	h.cl = []string{strconv.Itoa(len(h.body))}
	return h
}

func (h *Respond) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(h.body) == 0 && h.status >= 400 {
		errpage.Write(w, r, h.status)
		return
	}
	hd := w.Header()
	if h.status != http.StatusNoContent && h.status != http.StatusNotModified {
		if len(h.body) > 0 {
			hd["Content-Type"] = h.ct
		}
		hd["Content-Length"] = h.cl
	}
	w.WriteHeader(h.status)
	if r.Method != http.MethodHead && len(h.body) > 0 {
		w.Write(h.body)
	}
}
