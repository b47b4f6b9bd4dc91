package server

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync/atomic"
)

var (
	idPrefix = func() string {
		var b [6]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	idCounter atomic.Uint64
)

// requestID returns the request's X-Request-Id when the client sent a
// plausible one (1 to 128 characters of letters, digits and -_.:), else a
// new id unique to this process run, which it also sets on the request so
// that upstreams and FastCGI scripts receive it.
func requestID(r *http.Request) string {
	if v := r.Header["X-Request-Id"]; len(v) == 1 && validRequestID(v[0]) {
		return v[0]
	}
	b := make([]byte, 0, 32)
	b = append(b, idPrefix...)
	b = append(b, '-')
	b = strconv.AppendUint(b, idCounter.Add(1), 36)
	id := string(b)
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
