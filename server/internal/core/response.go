// Package core holds the response rules both HTTP engines (server/internal/h1 and
// server/internal/h2) apply to what a handler writes, so that they cannot drift:
// which status codes are valid and which are interim (1xx), which allow a
// body, how a declared Content-Length is read and enforced, what the head
// of a final response says about its body (length, Content-Type sniffing,
// declared trailers), which trailer fields follow the body, and when a
// body is short of its length. The engines keep only their framing
// (chunked or close-delimited HTTP/1.1, DATA and HEADERS frames).
package core

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/arkaweb/arka/server/internal/wire"
)

// CheckStatus panics, as net/http does, for a status code outside
// 100-999 (RFC 9110 section 15: three digits). engine names the caller.
func CheckStatus(engine string, code int) {
	if code < 100 || code > 999 {
		panic(engine + ": invalid WriteHeader code " + strconv.Itoa(code))
	}
}

// Interim reports whether code is an interim (1xx) response the engine
// sends at once, the final one to follow (RFC 9110 section 15.2). 101
// Switching Protocols is final: the connection changes protocol after it.
func Interim(code int) bool {
	return code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols
}

// BodyAllowed reports whether a response with this status may have content
// (RFC 9110 section 6.4.1: not 1xx, 204 or 304).
func BodyAllowed(code int) bool {
	return code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
}

// DeclaredLength reads the Content-Length a handler set, as RFC 9110
// section 8.6 spells it (digits only: "+5" or " 5" are not lengths). It
// returns -1 without one; an invalid or repeated field is deleted from h
// (the engine frames the response itself) and -1 returned.
func DeclaredLength(h http.Header) int64 {
	v, ok := h["Content-Length"]
	if !ok {
		return -1
	}
	if len(v) == 1 {
		if n, err := wire.ParseContentLength(v); err == nil {
			return n
		}
	}
	delete(h, "Content-Length")
	return -1
}

// CheckWrite says whether n more body bytes may be written after written
// ones: http.ErrBodyNotAllowed for a status without content,
// http.ErrContentLength past a declared length cl (-1: none).
func CheckWrite(bodyOK bool, cl, written int64, n int) error {
	if !bodyOK {
		return http.ErrBodyNotAllowed
	}
	if cl >= 0 && written+int64(n) > cl {
		return http.ErrContentLength
	}
	return nil
}

// Head is what an engine knows of a final response when its head is
// about to be sent.
type Head struct {
	Status  int
	BodyOK  bool   // BodyAllowed(Status)
	HEAD    bool   // the request's method is HEAD: no body is sent
	Final   bool   // the handler has returned: the body is Written bytes, all in Pending
	CL      int64  // the declared length (DeclaredLength), -1 for none
	Written int64  // body bytes the handler wrote
	Pending []byte // body bytes held back, not yet sent
}

// PrepareHead applies to h, the header of a final response about to be
// sent, the rules that do not depend on the framing, and returns what the
// engine frames by:
//
//   - trailers: the names h["Trailer"] declares (RFC 9110 section 6.6.2),
//     appended to names (fields sent with http.TrailerPrefix are found at
//     the end, see EachTrailer);
//   - Content-Type: sniffed from the pending bytes, as net/http does, when
//     the handler set none and no Content-Encoding (a nil value set by the
//     handler means none);
//   - length: the Content-Length the head carries, or -1 when the engine
//     must delimit the body itself (HTTP/1.1 chunked or close, HTTP/2
//     END_STREAM). A status without content (1xx, 204, 304) has none, and
//     its Content-Length field is removed except on 304 (RFC 9110 section
//     8.6: it describes the selected representation); a handler that has
//     returned without declaring a length and without trailers gets the
//     length of what it wrote; a HEAD response gets the length the GET
//     would have had when the handler wrote that body.
func PrepareHead(h http.Header, r Head, names []string) (length int64, trailers []string) {
	trailers = names
	if t := h["Trailer"]; len(t) > 0 {
		trailers = wire.AppendTrailerNames(trailers, t)
	}
	if _, set := h["Content-Type"]; r.BodyOK && len(r.Pending) > 0 && !set && h["Content-Encoding"] == nil {
		h["Content-Type"] = []string{http.DetectContentType(r.Pending)}
	}
	switch {
	case !r.BodyOK:
		if r.Status != http.StatusNotModified {
			delete(h, "Content-Length")
		}
		return -1, trailers
	case r.CL >= 0:
		return r.CL, trailers
	case r.Final && len(trailers) == 0 && !r.HEAD:
		h["Content-Length"] = []string{strconv.Itoa(len(r.Pending))}
		return int64(len(r.Pending)), trailers
	case r.Final && r.HEAD && r.Written > 0:
		h["Content-Length"] = []string{strconv.FormatInt(r.Written, 10)}
		return r.Written, trailers
	}
	return -1, trailers
}

// EachTrailer calls fn for every trailer field of a finished response:
// the declared names (PrepareHead) that h has values for, in their order,
// then the fields the handler set with http.TrailerPrefix (net/http's way
// of sending trailers it did not declare), under their canonical names.
// The engine checks the names as it checks header field names.
func EachTrailer(h http.Header, declared []string, fn func(name string, values []string)) {
	for _, k := range declared {
		if v, ok := h[k]; ok {
			fn(k, v)
		}
	}
	for k, v := range h {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			fn(http.CanonicalHeaderKey(name), v)
		}
	}
}

// HasTrailers reports whether a finished response has trailer fields to
// send (see EachTrailer).
func HasTrailers(h http.Header, declared []string) bool {
	if len(declared) > 0 {
		return true
	}
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}

// Short reports whether a finished response's body is shorter than the
// length it declared: the client would wait for bytes that never come, so
// the engine must not end it as complete (HTTP/1.1: close the connection;
// HTTP/2: reset the stream, RFC 9113 section 8.1.1).
func Short(r Head) bool {
	return r.CL >= 0 && r.Written < r.CL && !r.HEAD && r.BodyOK
}

// Final is what a final status code set by a handler implies: whether the
// response may have content, and its declared length (DeclaredLength of
// h, -1 for none).
func Final(code int, h http.Header) (bodyOK bool, cl int64) {
	return BodyAllowed(code), DeclaredLength(h)
}

// PendingLimit is how many body bytes of unknown length an engine holds
// back before sending the head: a handler that writes less and returns
// gets a Content-Length (PrepareHead) instead of chunked framing or a
// DATA frame of its own for every write.
const PendingLimit = 4096

// Hold reports whether n more body bytes are held back (see PendingLimit)
// rather than sent, for a response whose head is not sent yet, with
// declared length cl and pending bytes held.
func Hold(cl int64, pending, n int) bool {
	return cl < 0 && pending+n <= PendingLimit
}

// ValidFieldName reports whether a handler's header or trailer field name
// may be sent: a token (RFC 9110 section 5.1). Both engines drop the
// others rather than send a field a client would misparse.
func ValidFieldName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !tchar[name[i]] {
			return false
		}
	}
	return true
}

// tchar is RFC 9110 section 5.6.2's tchar.
var tchar = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return
}()

// CleanValue returns a handler's field value as both engines send it:
// every control character but HTAB (CR, LF and NUL among them, which RFC
// 9110 section 5.5 forbids, and DEL) replaced by a space, so that no value
// can start a field of its own or break a header block. A clean value is
// returned as it is, without allocating.
func CleanValue(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			b := []byte(v)
			for j, c := range b[i:] {
				if c < 0x20 && c != '\t' || c == 0x7f {
					b[i+j] = ' '
				}
			}
			return string(b)
		}
	}
	return v
}
