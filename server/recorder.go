package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
)

// recorder wraps the engine's ResponseWriter to learn the status and body
// size for counters and the access log. It passes through everything the
// handlers rely on: Flush, Hijack (WebSockets), ReadFrom (sendfile) and
// Unwrap (http.ResponseController).
type recorder struct {
	w      http.ResponseWriter
	status int
	bytes  int64
	// hdr are the route's response field changes, applied once, just
	// before the response head goes to the engine; nil for most routes.
	hdr     *headerOps
	applied bool
}

// head applies the route's field changes before the first final status
// or body byte reaches the engine.
func (r *recorder) head() {
	if r.hdr != nil && !r.applied {
		r.applied = true
		r.hdr.apply(r.w.Header())
	}
}

var recorders = sync.Pool{New: func() any { return new(recorder) }}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 || r.status < 200 {
		r.status = code
	}
	if code >= 200 {
		r.head()
	}
	r.w.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.head()
	n, err := r.w.Write(p)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) WriteString(s string) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.head()
	n, err := io.WriteString(r.w, s)
	r.bytes += int64(n)
	return n, err
}

// ReadFrom keeps sendfile(2) available to io.Copy from an *os.File.
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.head()
	var n int64
	var err error
	if rf, ok := r.w.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{r.w}, src)
	}
	r.bytes += n
	return n, err
}

func (r *recorder) Flush() { _ = r.FlushError() }

func (r *recorder) FlushError() error {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.head()
	return http.NewResponseController(r.w).Flush()
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	c, rw, err := http.NewResponseController(r.w).Hijack()
	if err != nil && errors.Is(err, http.ErrNotSupported) {
		return nil, nil, http.ErrNotSupported
	}
	return c, rw, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.w }
