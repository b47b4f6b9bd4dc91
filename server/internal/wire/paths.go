package wire

import (
	"net/http"
	"net/url"
	"strings"
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
