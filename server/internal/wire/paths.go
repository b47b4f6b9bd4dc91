package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// SetPath fills u.Path (decoded) and u.RawPath (the encoded form, only when
// it differs from the default encoding of Path), as net/url does for a
// request target's path (RFC 9112 section 3.2). The error is
// url.PathUnescape's, for malformed percent-encoding.
func SetPath(u *url.URL, escaped string) error {
	if strings.IndexByte(escaped, '%') < 0 {
		u.Path, u.RawPath = escaped, ""
		return nil
	}
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return err
	}
	u.Path, u.RawPath = p, ""
	if u.EscapedPath() != escaped {
		u.RawPath = escaped
	}
	return nil
}

// HasDotSegment reports whether a decoded path has a segment starting with
// "." (a dotfile, ".git", "..") other than a leading "/.well-known"
// (RFC 8615), which ACME and others need. The static and FastCGI handlers
// answer such paths 404.
func HasDotSegment(p string) bool {
	i := strings.Index(p, "/.")
	if i < 0 {
		return false
	}
	if i == 0 && (p == "/.well-known" || strings.HasPrefix(p, "/.well-known/")) {
		return strings.Contains(p[len("/.well-known"):], "/.")
	}
	return true
}

// AppendTrailerNames appends the canonical field names a Trailer field
// declares (RFC 9110 section 6.6.2: a comma-separated list, all lines) to
// dst.
func AppendTrailerNames(dst []string, lines []string) []string {
	for _, line := range lines {
		for _, k := range strings.Split(line, ",") {
			if k = strings.TrimSpace(k); k != "" {
				dst = append(dst, http.CanonicalHeaderKey(k))
			}
		}
	}
	return dst
}

// DeclaredTrailer returns the http.Request.Trailer map for a request whose
// Trailer field is lines: the declared names with nil values, filled in
// when the trailer section arrives; nil when none is declared.
func DeclaredTrailer(lines []string) http.Header {
	if len(lines) == 0 {
		return nil
	}
	h := http.Header{}
	for _, k := range AppendTrailerNames(nil, lines) {
		h[k] = nil
	}
	return h
}

// CachingField reports whether a response field (canonical name) tells
// caches whether and how long to keep the response: Cache-Control and
// Expires (RFC 9111 section 5), Pragma, and the CDN-targeted
// CDN-Cache-Control (RFC 9213) and Surrogate-Control. Arka puts a route's
// caching fields only on 2xx and 304 responses.
func CachingField(name string) bool {
	switch name {
	case "Cache-Control", "Expires", "Pragma", "Cdn-Cache-Control", "Surrogate-Control":
		return true
	}
	return false
}

// HasEncodedSlash reports whether the client wrote an encoded slash
// ("%2F" or "%2f") in u's path. The engines set u.RawPath to the client's
// path whenever it differs from u.Path's default encoding, which an
// encoded slash always makes it.
func HasEncodedSlash(u *url.URL) bool { return EncodedSlashAt(u) >= 0 }

// EncodedSlashAt returns the offset in u.Path (decoded) of the first slash
// the client sent encoded as %2F, or -1. Handlers that map paths to files
// use it to never take such a slash for a directory separator.
func EncodedSlashAt(u *url.URL) int {
	raw := u.RawPath
	if raw == "" {
		return -1
	}
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] == '%' && i+2 < len(raw) {
			if raw[i+1] == '2' && (raw[i+2] == 'F' || raw[i+2] == 'f') {
				return n
			}
			i += 2
		}
		n++
	}
	return -1
}

// ClientPath returns u's path as the client encoded it (after the server's
// normalization, which keeps each segment's encoding): u.RawPath when set,
// else the default encoding of u.Path, which is then what the client sent.
// The proxy sends it upstream; unlike u.EscapedPath it keeps bytes a
// client left unencoded.
func ClientPath(u *url.URL) string {
	if u.RawPath != "" {
		return u.RawPath
	}
	return u.EscapedPath()
}

// ClientGone reports whether an error reading a request body means the
// client's connection ended mid-body (it closed or reset the connection,
// or the stream was cancelled), rather than a malformed body: handlers
// then answer nothing and the request is logged 499.
func ClientGone(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled)
}
