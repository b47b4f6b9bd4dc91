package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/arkaweb/arka/server/internal/errpage"
)

// recorder wraps the engine's ResponseWriter to learn the status and body
// size for counters and the access log. It passes through everything the
// handlers rely on: Flush, Hijack (WebSockets), ReadFrom (sendfile) and
// Unwrap (http.ResponseController).
type recorder struct {
	w      http.ResponseWriter
	req    *http.Request
	status int
	bytes  int64
	// hdr are the route's response field changes, applied once, just
	// before the response head goes to the engine; nil for most routes.
	hdr     *headerOps
	applied bool
	// pages are the site's error pages (errpage.Provider); with intercept
	// (intercept_errors on a proxy or fastcgi route) they also replace
	// the body of an error response the handler made, and swallow then
	// discards what the handler writes.
	pages     *errpage.Pages
	intercept bool
	swallow   bool
	// start is when dispatch received the request, in monotime.Now()
	// units (see RequestStart).
	start int64
}

// RequestStart implements monotime.Stamped: handlers that need the time
// (the static file cache) use the dispatch's clock reading.
func (r *recorder) RequestStart() int64 { return r.start }

// ErrorPages implements errpage.Provider.
func (r *recorder) ErrorPages() *errpage.Pages { return r.pages }

// interceptError replaces the response the handler began with status code
// by the site's page for it, keeping the status and the fields that are
// not about the representation (Set-Cookie, Retry-After,
// WWW-Authenticate...). It reports whether it did.
func (r *recorder) interceptError(code int) bool {
	if !r.intercept || r.swallow || !r.pages.Has(code) {
		return false
	}
	h := r.w.Header()
	for _, k := range representationFields {
		delete(h, k)
	}
	r.swallow = true
	r.status = code
	errpage.Write(errorPageWriter{r}, r.req, code)
	return true
}

// representationFields describe an upstream's error body, which the
// custom page replaces.
var representationFields = []string{"Content-Length", "Content-Encoding", "Content-Range", "Content-Type",
	"Content-Language", "Content-Location", "Etag", "Last-Modified", "Accept-Ranges", "Trailer"}

// errorPageWriter writes the custom page through the recorder's engine
// writer, past the swallowing.
type errorPageWriter struct{ r *recorder }

func (e errorPageWriter) Header() http.Header        { return e.r.w.Header() }
func (e errorPageWriter) ErrorPages() *errpage.Pages { return e.r.pages }
func (e errorPageWriter) WriteHeader(code int) {
	e.r.head()
	e.r.w.WriteHeader(code)
}
func (e errorPageWriter) Write(p []byte) (int, error) {
	n, err := e.r.w.Write(p)
	e.r.bytes += int64(n)
	return n, err
}

// head applies the route's field changes before the first final status
// or body byte reaches the engine; caching fields only to a 2xx or 304
// (an error keeps errpage's Cache-Control: no-store, or what the
// upstream or script set).
func (r *recorder) head() {
	if r.hdr != nil && !r.applied {
		r.applied = true
		r.hdr.apply(r.w.Header(), r.status >= 200 && r.status < 300 || r.status == http.StatusNotModified)
	}
}

var recorders = sync.Pool{New: func() any { return new(recorder) }}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(code int) {
	if r.swallow || code >= 400 && r.interceptError(code) {
		return
	}
	if r.status == 0 || r.status < 200 {
		r.status = code
	}
	if code >= 200 {
		r.head()
	}
	r.w.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.swallow {
		return len(p), nil
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.head()
	n, err := r.w.Write(p)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) WriteString(s string) (int, error) {
	if r.swallow {
		return len(s), nil
	}
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
	if r.swallow {
		return io.Copy(io.Discard, src)
	}
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
	if r.swallow {
		return nil
	}
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
