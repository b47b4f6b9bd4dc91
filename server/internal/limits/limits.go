// Package limits holds the one set of client limits both HTTP engines
// (server/internal/h1 and server/internal/h2) apply: how long a client may take to send a
// request head, stay idle, send a body, and read a response, and how large
// a request head may be. package server builds one Limits from its Options
// and gives the same value to both engines, so the numbers in the README
// hold for HTTP/1.1 and HTTP/2 alike.
package limits

import (
	"os"
	"time"

	"github.com/arkaweb/arka/server/internal/wire"
)

// Defaults, as the README states them.
const (
	DefaultReadHeader  = 20 * time.Second // request head, and a new connection's first request (HTTP/2: preface)
	DefaultIdle        = 75 * time.Second // nginx's keepalive_timeout
	DefaultBodyRead    = 60 * time.Second // nginx's client_body_timeout
	DefaultBodyMinRate = 500              // bytes/s, as Apache's mod_reqtimeout MinRate
	DefaultWrite       = 60 * time.Second // nginx's send_timeout
	DefaultHeaderBytes = wire.DefaultMaxHeaderBytes
)

// Limits bounds what a client may hold. In every duration field zero
// means the default and a negative value means no limit.
type Limits struct {
	// ReadHeader bounds sending a request head once its first byte came,
	// and the wait for a new connection's first request (HTTP/2: the
	// client preface and SETTINGS).
	ReadHeader time.Duration
	// Idle closes a connection with no request in progress after this
	// long (HTTP/2: no stream whose handler runs).
	Idle time.Duration
	// BodyRead is the longest silence while a handler waits for more of a
	// request body; the read fails with a timeout (os.IsTimeout), which
	// handlers answer with 408.
	BodyRead time.Duration
	// BodyMinRate is the lowest average rate of a request body, in bytes
	// per second, measured from the handler's first read with BodyRead as
	// grace: by time t after that read the client must have sent
	// (t-BodyRead)*BodyMinRate bytes. Zero means the default, negative
	// none.
	BodyMinRate int64
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

// BodyReadTimeout is BodyRead with the default applied; 0 means none.
func (l *Limits) BodyReadTimeout() time.Duration { return or(l.BodyRead, DefaultBodyRead) }

// WriteTimeout is Write with the default applied; 0 means none.
func (l *Limits) WriteTimeout() time.Duration { return or(l.Write, DefaultWrite) }

// MinRate is BodyMinRate with the default applied, bytes per second; 0
// means none.
func (l *Limits) MinRate() int64 {
	switch {
	case l.BodyMinRate < 0:
		return 0
	case l.BodyMinRate == 0:
		return DefaultBodyMinRate
	}
	return l.BodyMinRate
}

// MaxHeaderBytes is HeaderBytes with the default applied.
func (l *Limits) MaxHeaderBytes() int {
	if l.HeaderBytes > 0 {
		return l.HeaderBytes
	}
	return DefaultHeaderBytes
}

// BodyDeadline is when a handler's wait for more of a request body ends:
// BodyRead after the last bytes arrived (or the first read, start), and no
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
