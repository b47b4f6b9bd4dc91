package fastcgi

import (
	"bytes"
	"errors"
	"net/http"
	"net/textproto"
	"sync/atomic"

	"github.com/arkaweb/arka/server/internal/limits"
	"github.com/arkaweb/arka/server/internal/wire"
)

// The CGI response header (RFC 3875 section 6): the script's STDOUT starts
// with header lines, each "name: value" ending in LF or CRLF, and a blank
// line; the body follows. "Status" sets the HTTP status, "Location" makes
// it a redirect, every other field is a response header field.

// maxHeaderBytes bounds the CGI header block, as read and as a header list
// counts it (limits.UpstreamHeaderBytes: one limit for every upstream's
// response head); beyond it the answer is 502.
const maxHeaderBytes = limits.UpstreamHeaderBytes

var (
	errHeaderTooLarge = limits.ErrUpstreamHeader
	errHeaderLine     = errors.New("malformed CGI response header line")
	errStatus         = errors.New("malformed CGI Status header")
)

// headerEnd returns the length of the header block in b including its
// blank line, or -1 if b does not yet hold a complete block. A block that
// is nothing but a blank line has length 1 or 2.
func headerEnd(b []byte) int {
	if len(b) > 0 && b[0] == '\n' {
		return 1
	}
	if len(b) > 1 && b[0] == '\r' && b[1] == '\n' {
		return 2
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
		if i < len(b) && b[i] == '\n' {
			return i + 1
		}
		if i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n' {
			return i + 2
		}
	}
}

// cgiResponse is what the header block says.
type cgiResponse struct {
	status   int  // from Status, 0 if absent
	location bool // a Location field was present
}

// parseCGIHeader parses a complete header block (as delimited by
// headerEnd) and calls field for each field other than Status, with the
// canonical name, the value without surrounding blanks, and whether values
// of that field tend to repeat across responses. It rejects
// folded lines (RFC 9112 section 5.2 obs-fold), names that are not tokens,
// values with control characters other than HTAB, and Status values that
// are not a 3-digit code from 200 to 999.
func parseCGIHeader(block []byte, field func(name string, value []byte, repeat bool)) (cgiResponse, error) {
	var res cgiResponse
	for len(block) > 0 {
		i := bytes.IndexByte(block, '\n')
		if i < 0 {
			i = len(block)
		}
		line := block[:i]
		block = block[min(i+1, len(block)):]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 {
			break // the blank line
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return res, errHeaderLine
		}
		name, value := line[:colon], trimBlanks(line[colon+1:])
		if !validValue(value) {
			return res, errHeaderLine
		}
		if wire.EqualFoldASCII(name, "Status") {
			code, ok := parseStatus(value)
			if !ok || res.status != 0 {
				return res, errStatus
			}
			res.status = code
			continue
		}
		key, repeat := canonicalName(name)
		if key == "Location" {
			res.location = true
		}
		field(key, value, repeat)
	}
	return res, nil
}

// parseStatus reads "404" or "404 Not Found" (RFC 3875 section 6.3.3); the
// reason phrase is dropped, as HTTP/2 has none.
func parseStatus(v []byte) (int, bool) {
	if len(v) < 3 || (len(v) > 3 && v[3] != ' ' && v[3] != '\t') {
		return 0, false
	}
	code := 0
	for _, c := range v[:3] {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	// 1xx cannot end a response: a FastCGI response has one header block.
	// Above 599 is no HTTP status (RFC 9110 section 15): a malformed
	// answer, 502, as the proxy answers an upstream's.
	return code, code >= 200 && code <= 599
}

func trimBlanks(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// validValue: RFC 9110 section 5.5 field-value, allowing obs-text.
func validValue(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// isToken reports whether b is an RFC 9110 section 5.6.2 token.
func isToken(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || !tokenChar[c] {
			return false
		}
	}
	return len(b) > 0
}

var tokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// commonNames are header names scripts send often, in canonical form, so
// that naming them costs no allocation. repeat marks fields whose values
// are usually the same from one response to the next, worth interning.
var commonNames = []struct {
	name   string
	repeat bool
}{
	{"Content-Type", true}, {"Content-Length", false}, {"Content-Encoding", true},
	{"Content-Language", true}, {"Content-Disposition", false}, {"Location", false},
	{"Set-Cookie", false}, {"Cache-Control", true}, {"Expires", false}, {"Pragma", true},
	{"Last-Modified", false}, {"Etag", false}, {"Vary", true}, {"X-Powered-By", true}, {"Link", false},
	{"Access-Control-Allow-Origin", true}, {"X-Frame-Options", true}, {"X-Content-Type-Options", true},
	{"Strict-Transport-Security", true}, {"Content-Security-Policy", true}, {"Referrer-Policy", true},
	{"Www-Authenticate", false}, {"Retry-After", false}, {"Accept-Ranges", true}, {"X-Robots-Tag", true},
	{"X-Pingback", true},
}

// canonicalName returns the canonical form of a header name (as
// net/http.CanonicalHeaderKey), without allocating for common names, and
// whether its values tend to repeat.
func canonicalName(name []byte) (string, bool) {
	for _, c := range commonNames {
		if wire.EqualFoldASCII(name, c.name) {
			return c.name, c.repeat
		}
	}
	return textproto.CanonicalMIMEHeaderKey(string(name)), false
}

// hopByHop are fields that describe one connection (RFC 9110 section 7.6.1)
// or the message framing; a script's values for them are dropped, the HTTP
// server writes its own.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Transfer-Encoding": true,
	"Te": true, "Trailer": true, "Upgrade": true,
}

// setField adds a CGI header field to h. Values of one field name stay
// separate entries, so Set-Cookie sent three times is three header lines.
// A script's Server is dropped, as the proxy drops an upstream's: the
// server sends its own, and Server is not a list field (RFC 9110 section
// 10.2.4), so two lines of it would be malformed.
// one, when not nil, is v alone in a slice shared by every response that
// has the field with this value (see internCache): nothing modifies a
// header value in place, and appending to it copies.
func setField(h http.Header, name string, v string, one []string, vals *[]string) {
	if hopByHop[name] || name == "Server" {
		return
	}
	if old, ok := h[name]; ok {
		h[name] = append(old, v)
		return
	}
	if one != nil {
		h[name] = one
		return
	}
	// One backing array for the response's other single-valued fields.
	s := *vals
	if len(s) == cap(s) {
		s = make([]string, 0, 8)
	}
	s = append(s, v)
	*vals = s
	h[name] = s[len(s)-1 : len(s) : len(s)]
}

// internCache holds recent values of fields that repeat across responses
// (X-Powered-By: PHP/8.2.36, Content-Type: text/html; charset=UTF-8,
// Content-Length: 25475), each also as a one-value slice to put in a
// response header as it is, so that the usual response costs no
// allocation for them. Lock-free; a collision just costs an allocation.
type internCache [32]atomic.Pointer[interned]

type interned struct {
	s   string
	one [1]string // s
}

func (c *internCache) value(v []byte, repeat bool) string {
	s, _ := c.field(v, repeat)
	return s
}

// field returns v as a string and, for a value that repeats, as a
// one-value slice shared by the responses that have it (nil otherwise).
func (c *internCache) field(v []byte, repeat bool) (string, []string) {
	if !repeat || len(v) == 0 || len(v) > 128 {
		return string(v), nil
	}
	hash := uint32(2166136261) // FNV-1a
	for _, b := range v {
		hash = (hash ^ uint32(b)) * 16777619
	}
	slot := &c[hash%uint32(len(c))]
	if p := slot.Load(); p != nil && p.s == string(v) {
		return p.s, p.one[:1:1]
	}
	p := &interned{s: string(v)}
	p.one[0] = p.s
	slot.Store(p)
	return p.s, p.one[:1:1]
}
