// Package core holds the response rules both HTTP engines (server/internal/h1 and
// server/internal/h2) apply to what a handler writes, so that they cannot drift:
// which status codes are valid and which are interim (1xx), which allow a
// body, how a declared Content-Length is read and enforced. The engines
// keep only their framing.
package core

import (
	"net/http"
	"strconv"

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
