// Package wire holds what Arka's HTTP engines (server/internal/h1, server/internal/h2) share
// about the bytes on the wire: canonical forms of common field names
// without allocating, the Date field value cached per second, and the
// one-byte PrefixReader an idle connection waits with, and Raw, the
// socket connection whose reads and writes are raw system calls.
//
// # Where the time goes
//
// Every Read and Write of a net.Conn is a system call made through
// syscall.Syscall, which tells the Go runtime the goroutine may block
// (entersyscall, exitsyscall). sysmon, the runtime's monitor thread,
// retakes the P of a call that outlasts its 20 µs polling interval (a
// loopback write that delivers to the receiver often does) and hands it
// to another thread (handoffp, startm, a futex wake-up); the call then
// returns on the slow path (exitsyscall0). On a busy server sysmon keeps
// finding such calls, so it never backs off to its 10 ms interval: perf
// record -g of arka under wrk/h2load (64 connections, shared 2-core
// machine) put runtime.sysmon at 7-12 % of all samples (small page over
// HTTP/1.1, TLS and HTTP/2, the proxy, PHP), plus retake, handoffp and
// the thread wake-ups. A socket read or write never blocks (the socket is
// non-blocking; the wait is the netpoller's), so Raw makes them with
// syscall.RawSyscall inside syscall.RawConn's Read and Write callbacks,
// which keep the netpoller wait on EAGAIN, deadlines and Close as
// net.Conn has them. Measured with it (before -> after, 2 runs each, back
// to back; perf stat and /proc CPU of arka): sysmon 7-12 % -> 0.2-0.5 %;
// CPU per request, small page over plain HTTP/1.1 15.7-17.7 -> 12.0-12.8
// µs, over TLS 18.0-20.4 -> 15.3-17.3 µs, over HTTP/2 27-32 -> 21 µs;
// proxy, small answer (both sides raw) 54 -> 37-50 µs; PHP tiny script
// (both sides raw) 59-67 -> 44-45 µs; context switches per request about
// halved. System calls per request are unchanged.
//
// Raw is installed where connections are made: accepted ones (package
// server, beneath TLS too) and dialled ones (proxy upstreams, FastCGI).
// ReadFrom goes to the *net.TCPConn with the runtime's bookkeeping, since
// sendfile from a file may wait for the disk; WriteBuffers goes there too,
// because package net makes a writev only for its own types (h1's head and
// large body). Under the race detector the calls go through package
// syscall, whose annotations the detector needs; `make test` therefore
// also runs this package's tests without it, so the raw calls are tested.
package wire

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/server/internal/monotime"
)

// commonFields maps the lower-case names of frequent header fields to
// their canonical (http.CanonicalHeaderKey) form, a constant.
var commonFields = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"Host", "User-Agent", "Accept", "Accept-Encoding", "Accept-Language", "Accept-Charset",
		"Connection", "Keep-Alive", "Content-Length", "Content-Type", "Transfer-Encoding", "Te", "Trailer",
		"Cookie", "Referer", "Origin", "Authorization", "Cache-Control", "Pragma", "Upgrade",
		"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range",
		"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-Ip", "X-Request-Id",
		"Forwarded", "Via", "Expect", "Dnt", "Priority", "Sec-Fetch-Dest", "Sec-Fetch-Mode",
		"Sec-Fetch-Site", "Sec-Fetch-User", "Sec-Ch-Ua", "Sec-Ch-Ua-Mobile", "Sec-Ch-Ua-Platform",
		"Upgrade-Insecure-Requests", "Sec-Websocket-Key", "Sec-Websocket-Version",
		"Sec-Websocket-Extensions", "Sec-Websocket-Protocol", "Proxy-Connection", "Proxy-Authorization",
		"X-Requested-With", "Content-Encoding", "Content-Range", "Date", "Proxy",
		"Etag", "Last-Modified", "Vary", "Server", "Accept-Ranges", "Location", "Set-Cookie",
		"Allow", "Retry-After", "Expires", "Content-Disposition", "Content-Language", "Link",
		"Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options", "Age",
		"Www-Authenticate", "Access-Control-Allow-Origin", "Content-Security-Policy", "Alt-Svc",
	} {
		m[strings.ToLower(k)] = k
	}
	return m
}()

// lowerOf maps canonical names back to lower case, for HTTP/2 and HTTP/3
// field names.
var lowerOf = func() map[string]string {
	m := map[string]string{}
	for l, c := range commonFields {
		m[c] = l
	}
	return m
}()

// Canonical returns the canonical form of a lower-case field name. Common
// names cost nothing; others are converted with http.CanonicalHeaderKey.
func Canonical(lower string) string {
	if c, ok := commonFields[lower]; ok {
		return c
	}
	return http.CanonicalHeaderKey(lower)
}

// CanonicalBytes is Canonical for a name held in bytes (any case); the
// map lookup with a converted []byte key does not allocate.
func CanonicalBytes(lower []byte) (string, bool) {
	c, ok := commonFields[string(lower)]
	return c, ok
}

// Lower returns the lower-case form of a header field name (as HTTP/2
// sends them), without allocating for common names.
func Lower(name string) string {
	if l, ok := lowerOf[name]; ok {
		return l
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(name)
		}
	}
	return name
}

type date struct {
	until int64 // when the next second begins, in monotime units
	unix  int64 // the second, in Unix seconds
	b     []byte
	s     string
}

var cached atomic.Pointer[date]

// now returns the Date value of the current second. Within a second it
// reads only the monotonic clock (one vDSO call, where time.Now makes two:
// the wall clock and the monotonic one); the wall clock is read when the
// second is over, so a step of it (NTP, a board restoring its saved
// time) shows in Date within a second.
func now() *date {
	m := monotime.Now()
	if d := cached.Load(); d != nil && m < d.until {
		return d
	}
	t := time.Now()
	b := t.UTC().Truncate(time.Second).AppendFormat(nil, http.TimeFormat)
	d := &date{until: monotime.Of(t) + int64(time.Second) - int64(t.Nanosecond()), unix: t.Unix(), b: b, s: string(b)}
	cached.Store(d)
	return d
}

// Date returns the current Date field value (RFC 9110 section 6.6.1),
// formatted once per second. The bytes must not be modified.
func Date() []byte { return now().b }

// DateString is Date as a string.
func DateString() string { return now().s }

// DateUnix is Date in Unix seconds: no later than the Date of a response
// whose head is written after the call (unless the wall clock is set
// back), the bound RFC 9110 section 8.8.2.1 sets on Last-Modified.
func DateUnix() int64 { return now().unix }

// HasToken reports whether a comma-separated field (all lines) contains
// token, case-insensitively.
func HasToken(lines []string, token string) bool {
	for _, l := range lines {
		for l != "" {
			var p string
			if i := strings.IndexByte(l, ','); i >= 0 {
				p, l = l[:i], l[i+1:]
			} else {
				p, l = l, ""
			}
			if strings.EqualFold(strings.TrimSpace(p), token) {
				return true
			}
		}
	}
	return false
}

// StatusText is http.StatusText with the reason phrases of RFC 9110
// section 15 where Go still has the older ones.
func StatusText(code int) string {
	switch code {
	case http.StatusRequestEntityTooLarge:
		return "Content Too Large"
	case http.StatusUnprocessableEntity:
		return "Unprocessable Content"
	}
	return http.StatusText(code)
}

// ValidHost checks a Host field value: reg-name, IPv4 or [IP-literal], with
// an optional port of digits (RFC 9110 section 7.2, RFC 3986 section 3.2.2).
// It is used for HTTP/1.1's Host and HTTP/2's :authority; userinfo ("@")
// is refused (RFC 9110 section 4.2.4, RFC 9113 section 8.3.1), and so is a
// port without a host (":80": an http URI's host must not be empty, RFC
// 9110 section 4.2.1). The empty value is valid (RFC 9112 section 3.2).
func ValidHost(h string) bool {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		if i == 0 {
			return false
		}
		for _, c := range []byte(h[i+1:]) {
			if c < '0' || c > '9' {
				return false
			}
		}
		if strings.Count(h, ":") > 1 && !strings.HasPrefix(h, "[") {
			return false // an IPv6 literal needs brackets
		}
	}
	for i := 0; i < len(h); i++ {
		if !hostChar[h[i]] {
			return false
		}
	}
	return true
}

// hostChar marks the bytes ValidHost allows: unreserved, sub-delims, ':',
// '[', ']' and '%' (RFC 3986 section 3.2.2). A table: the search of the
// punctuation string for each '.' and ':' of "127.0.0.1:8443" was 300
// instructions a request.
var hostChar = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range []byte("-._~!$&'()*+,;=:[]%") {
		t[c] = true
	}
	return t
}()

// Content-Length errors of ParseContentLength.
var (
	ErrMalformedLength   = errors.New("malformed Content-Length")
	ErrConflictingLength = errors.New("conflicting Content-Length values")
)

// ParseContentLength reads the Content-Length field lines of a request
// (RFC 9110 section 8.6): each a list of one or more equal values of 1 to
// 18 digits (no sign, no spaces inside). It returns -1 without lines. Both
// engines use it, so "+0" is refused over HTTP/1.1 and HTTP/2 alike.
func ParseContentLength(vals []string) (int64, error) {
	var n int64 = -1
	for _, line := range vals {
		for {
			p, rest, more := strings.Cut(line, ",")
			p = strings.TrimSpace(p)
			if p == "" || len(p) > 18 {
				return 0, ErrMalformedLength
			}
			var v int64
			for i := 0; i < len(p); i++ {
				if p[i] < '0' || p[i] > '9' {
					return 0, ErrMalformedLength
				}
				v = v*10 + int64(p[i]-'0')
			}
			if n >= 0 && v != n {
				return 0, ErrConflictingLength
			}
			n = v
			if !more {
				break
			}
			line = rest
		}
	}
	return n, nil
}

// EqualFoldASCII reports whether b and s are equal with ASCII letters
// compared without case, as field names and tokens are (RFC 9110 sections
// 5.1 and 5.6.2); bytes from 0x80 up must be equal. No allocation.
func EqualFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}
