// Package limits holds the one set of client limits both HTTP engines
// (server/internal/h1 and server/internal/h2) apply: how long a client may take to send a
// request head, stay idle, send a body, and read a response, and how large
// a request head may be. package server builds one Limits from its Options
// and gives the same value to both engines, so the numbers in the README
// hold for HTTP/1.1 and HTTP/2 alike.
package limits

import (
	"errors"
	"os"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/wire"
)

// Defaults, as the README states them.
const (
	DefaultReadHeader  = 20 * time.Second          // request head, and a new connection's first request (HTTP/2: preface)
	DefaultIdle        = 75 * time.Second          // nginx's keepalive_timeout
	DefaultBodyRead    = config.DefaultBodyTimeout // [global] body_timeout
	DefaultBodyMinRate = config.DefaultBodyMinRate // [global] body_min_rate, bytes/s
	DefaultWrite       = 60 * time.Second          // nginx's send_timeout
	DefaultHeaderBytes = wire.DefaultMaxHeaderBytes
)

// Limits bounds what a client may hold. In every duration field zero
// means the default and a negative value means no limit. It is copied
// into each engine; Body, the part a reload may change, is shared.
type Limits struct {
	// ReadHeader bounds sending a request head once its first byte came,
	// and the wait for a new connection's first request (HTTP/2: the
	// client preface and SETTINGS).
	ReadHeader time.Duration
	// Idle closes a connection with no request in progress after this
	// long (HTTP/2: no stream whose handler runs).
	Idle time.Duration
	// Body holds the request body limits (nil: the defaults).
	Body *Body
	// Write bounds a send that makes no progress: an HTTP/1.1 write the
	// client does not read, an HTTP/2 stream that gets no flow-control
	// window, a connection that takes no bytes (nginx's send_timeout).
	Write time.Duration
	// HeaderBytes bounds a request's header (HTTP/1.1: request line and
	// fields; HTTP/2: the header list as SETTINGS_MAX_HEADER_LIST_SIZE
	// counts it, RFC 9113 section 6.5.2). Beyond it: 431.
	HeaderBytes int
}

func or(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// ReadHeaderTimeout is ReadHeader with the default applied; 0 means none.
func (l *Limits) ReadHeaderTimeout() time.Duration { return or(l.ReadHeader, DefaultReadHeader) }

// IdleTimeout is Idle with the default applied; 0 means none.
func (l *Limits) IdleTimeout() time.Duration { return or(l.Idle, DefaultIdle) }

// Body is the request body limits ([global] body_timeout and
// body_min_rate, decoded by package config): the server makes one, shares
// it among the Limits of every engine, and sets it from each configuration
// it applies, so a reload changes them for running connections too (from
// a handler's next body read). Its zero value means no limits.
type Body struct {
	read, rate atomic.Int64
}

// NewBody returns a Body with the given limits (see Set).
func NewBody(read time.Duration, minRate int64) *Body {
	b := &Body{}
	b.Set(read, minRate)
	return b
}

// Set sets the longest silence while a handler waits for more of a
// request body (0: none; past it the read fails with a timeout,
// os.IsTimeout, which handlers answer with 408), and the lowest average
// rate in bytes per second, measured from the handler's first read with
// read as grace: by time t after that read the client must have sent
// (t-read)*minRate bytes (0: none).
func (b *Body) Set(read time.Duration, minRate int64) {
	b.read.Store(int64(max(read, 0)))
	b.rate.Store(max(minRate, 0))
}

// BodyReadTimeout is the body silence limit in effect; 0 means none.
func (l *Limits) BodyReadTimeout() time.Duration {
	if l.Body == nil {
		return DefaultBodyRead
	}
	return time.Duration(l.Body.read.Load())
}

// WriteTimeout is Write with the default applied; 0 means none.
func (l *Limits) WriteTimeout() time.Duration { return or(l.Write, DefaultWrite) }

// MinRate is the body rate limit in effect, bytes per second; 0 means
// none.
func (l *Limits) MinRate() int64 {
	if l.Body == nil {
		return DefaultBodyMinRate
	}
	return l.Body.rate.Load()
}

// MaxHeaderBytes is HeaderBytes with the default applied.
func (l *Limits) MaxHeaderBytes() int {
	if l.HeaderBytes > 0 {
		return l.HeaderBytes
	}
	return DefaultHeaderBytes
}

// BodyDeadline is when a handler's wait for more of a request body ends:
// BodyReadTimeout after the last bytes arrived (or the first read, start), and no
// later than the minimum rate allows for the received bytes. The zero
// time means no deadline.
func (l *Limits) BodyDeadline(start, last time.Time, received int64) time.Time {
	to := l.BodyReadTimeout()
	if to <= 0 {
		return time.Time{}
	}
	if last.Before(start) {
		last = start
	}
	d := last.Add(to)
	if r := l.MinRate(); r > 0 {
		// The whole body so far may take BodyRead plus received/rate.
		if byRate := start.Add(to + time.Duration(float64(received)/float64(r)*float64(time.Second))); byRate.Before(d) {
			d = byRate
		}
	}
	return d
}

// ErrBodyTimeout is the error of a body read past its deadline; like
// net's deadline errors it is a timeout (os.IsTimeout, errors.Is
// os.ErrDeadlineExceeded).
var ErrBodyTimeout error = bodyTimeout{}

type bodyTimeout struct{}

func (bodyTimeout) Error() string {
	return "request body: client too slow (read timeout or rate below the minimum)"
}
func (bodyTimeout) Timeout() bool   { return true }
func (bodyTimeout) Temporary() bool { return true }
func (bodyTimeout) Is(err error) bool {
	return err == os.ErrDeadlineExceeded
}

// UpstreamHeaderBytes bounds a response head from an upstream: a reverse
// proxy's HTTP/1.1 server (status line and header fields, 1xx heads and
// trailers included) and a FastCGI application (the CGI header block).
// The head is counted as HTTP/2 counts a header list, each field's name
// and value plus 32 bytes (RFC 9113 section 6.5.2, FieldSize), and the
// bytes read for it may not exceed it either. A larger head is answered
// 502 and logged, as nginx answers "upstream sent too big header" beyond
// proxy_buffer_size (4-8 KiB): relayed, it would be more than HTTP/2
// clients accept (nghttp2 ends the connection with COMPRESSION_ERROR).
const UpstreamHeaderBytes = 32 << 10

// FieldSize is the size of a header field as a header list counts it:
// name and value lengths in bytes plus 32 (RFC 9113 section 6.5.2).
func FieldSize(name, value int) int { return name + value + 32 }

// ErrUpstreamHeader is the error of an upstream response head larger than
// UpstreamHeaderBytes.
var ErrUpstreamHeader = errors.New("upstream sent too big header: more than 32 KiB counted as an HTTP/2 header list (RFC 9113 section 6.5.2)")
