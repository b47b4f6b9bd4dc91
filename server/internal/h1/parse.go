package h1

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/arkaweb/arka/server/internal/wire"
)

// Errors of request parsing, each mapped to the status the client gets.
type parseError struct {
	status int
	msg    string
}

func (e *parseError) Error() string { return e.msg }

func badRequest(msg string) error { return &parseError{http.StatusBadRequest, msg} }

var (
	errHeaderTooLarge = &parseError{http.StatusRequestHeaderFieldsTooLarge, "request header fields too large"}
	errURITooLong     = &parseError{http.StatusRequestURITooLong, "request target too long"}
	errVersion        = &parseError{http.StatusHTTPVersionNotSupported, "HTTP version not supported"}
	errTECoding       = &parseError{http.StatusNotImplemented, "transfer coding not implemented"}
)

// tokenChar: RFC 9110 section 5.6.2 tchar.
var tokenChar = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return
}()

// fieldValueOK: VCHAR, obs-text, SP and HTAB (RFC 9110 section 5.5).
func fieldValueOK(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// targetOK: the request-target has no whitespace or control bytes.
func targetOK(b []byte) bool {
	for _, c := range b {
		if c <= 0x20 || c == 0x7f || c == '#' {
			return false
		}
	}
	return len(b) > 0
}

// canonicalKey returns the canonical form of a field name (as
// http.CanonicalHeaderKey), using a constant for common names; other names
// are appended to buf and returned as (start, end) offsets into it.
func canonicalKey(name []byte, scratch *[]byte, buf []byte) (key string, out []byte, start, end int) {
	lower := (*scratch)[:0]
	defer func() { *scratch = lower }()
	for _, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower = append(lower, c)
	}
	if k, ok := wire.CanonicalBytes(lower); ok {
		return k, buf, 0, 0
	}
	start = len(buf)
	upper := true
	for _, c := range lower {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf = append(buf, c)
		upper = c == '-'
	}
	return "", buf, start, len(buf)
}

// splitTarget splits an origin-form or absolute-form request-target into
// host (absolute-form only), path and raw query.
func splitTarget(method string, target string) (host, path, rawQuery string, err error) {
	switch {
	case target == "*":
		if method != http.MethodOptions {
			return "", "", "", badRequest("asterisk-form is only for OPTIONS")
		}
		return "", "*", "", nil
	case method == http.MethodConnect:
		// authority-form (RFC 9112 section 3.2.3).
		return target, "", "", nil
	case target[0] == '/':
	default:
		// absolute-form (RFC 9112 section 3.2.2).
		rest, ok := cutScheme(target)
		if !ok {
			return "", "", "", badRequest("malformed request target")
		}
		i := strings.IndexAny(rest, "/?")
		if i < 0 {
			host, target = rest, "/"
		} else {
			host, target = rest[:i], rest[i:]
			if target[0] == '?' {
				target = "/" + target
			}
		}
		if strings.Contains(host, "@") {
			return "", "", "", badRequest("userinfo in request target")
		}
		if host == "" {
			// RFC 9110 section 4.2.1: an http(s) URI with an empty host is
			// invalid; the Host field must not stand in for it.
			return "", "", "", badRequest("empty host in request target")
		}
	}
	path = target
	if i := strings.IndexByte(target, '?'); i >= 0 {
		path, rawQuery = target[:i], target[i+1:]
	}
	return host, path, rawQuery, nil
}

func cutScheme(t string) (string, bool) {
	for _, s := range []string{"http://", "https://"} {
		if len(t) > len(s) && strings.EqualFold(t[:len(s)], s) {
			return t[len(s):], true
		}
	}
	return "", false
}

// setPath is wire.SetPath with the engine's 400 for a malformed
// percent-encoding.
func setPath(u *url.URL, escaped string) error {
	if wire.SetPath(u, escaped) != nil {
		return badRequest("malformed percent-encoding in path")
	}
	return nil
}
