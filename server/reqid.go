package server

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"net/netip"

	"github.com/arkaweb/arka/server/internal/realip"
)

// requestID returns the request's X-Request-Id when the connection's peer
// is one of trusted (the route's trusted proxies) and sent a plausible one
// (1 to 128 characters of letters, digits and -_.:), else a new random one
// (24 hex digits), which it also sets on the request, replacing what the
// client sent, so that upstreams and FastCGI scripts receive it. So a
// client that is not a trusted proxy cannot choose the id its requests
// are logged under.
func requestID(r *http.Request, trusted []netip.Prefix) string {
	if v := r.Header["X-Request-Id"]; len(v) == 1 && validRequestID(v[0]) && realip.Trusted(trusted, realip.Peer(r.RemoteAddr)) {
		return v[0]
	}
	// 96 random bits: unique in practice, and they reveal nothing about
	// request volume (unlike a counter).
	var raw [12]byte
	binary.LittleEndian.PutUint64(raw[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(raw[8:], rand.Uint32())
	var b [24]byte
	hex.Encode(b[:], raw[:])
	id := string(b[:])
	r.Header["X-Request-Id"] = []string{id}
	return id
}

func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}
