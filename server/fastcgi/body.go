package fastcgi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
)

// How a request body reaches the script's STDIN.
//
// php-fpm reads at most CONTENT_LENGTH bytes of STDIN (its
// sapi_cgi_read_post stops there; without CONTENT_LENGTH a script sees no
// body at all), so the length must be known before the request is sent:
//
//   - small bodies (at most smallBody bytes) are read before a connection
//     is taken and sent with the request in one write;
//   - larger bodies of known length are streamed from the client while the
//     script runs, one STDIN record per read, never held whole;
//   - bodies of unknown length (HTTP/1.1 chunked, HTTP/2 without
//     content-length) are spooled to an unlinked temporary file first, then
//     streamed from it with their length. Memory use stays bounded and a
//     slow upload never holds a php-fpm worker, as with nginx, which
//     buffers such bodies for FastCGI whatever fastcgi_request_buffering
//     says.
type bodyKind int

const (
	bodyNone bodyKind = iota
	bodyBuffered
	bodyStream
	bodyFile
)

// smallBody is the largest body read into memory before the request is
// sent. Queued requests hold it while they wait, so it stays small.
const smallBody = 16 << 10

type reqBody struct {
	kind   bodyKind
	length int64     // CONTENT_LENGTH; -1 when there is no body
	src    io.Reader // bodyStream, bodyFile
	file   *os.File  // bodyFile
}

func (b *reqBody) close() {
	if b.file != nil {
		b.file.Close()
	}
}

// errBodyTooLarge is an unknown-length body over Options.MaxSpool.
var errBodyTooLarge = errors.New("request body too large")

// readBody decides how the body of r is sent, reading it if it is small or
// of unknown length. Errors are errBodyTooLarge, *http.MaxBytesError (the
// server's body limit) or a read error of the client's.
func (h *Handler) readBody(r *http.Request, rb *reqBuf, dst *reqBody) error {
	b, err := h.planBody(r, rb)
	*dst = b
	return err
}

func (h *Handler) planBody(r *http.Request, rb *reqBuf) (reqBody, error) {
	cl := r.ContentLength
	if r.Body == nil || r.Body == http.NoBody || cl == 0 {
		return reqBody{kind: bodyNone, length: -1}, nil
	}
	if cl > 0 && cl <= smallBody {
		rb.body = grow(rb.body, int(cl))
		if _, err := io.ReadFull(r.Body, rb.body); err != nil {
			return reqBody{}, err
		}
		return reqBody{kind: bodyBuffered, length: cl}, nil
	}
	if cl > 0 {
		return reqBody{kind: bodyStream, length: cl, src: r.Body}, nil
	}

	// Unknown length: up to smallBody in memory, beyond that to a file.
	rb.body = grow(rb.body, smallBody)
	n, err := io.ReadFull(r.Body, rb.body)
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		rb.body = rb.body[:n]
		if n == 0 {
			return reqBody{kind: bodyNone, length: -1}, nil
		}
		return reqBody{kind: bodyBuffered, length: int64(n)}, nil
	case nil:
	default:
		return reqBody{}, err
	}
	f, err := os.CreateTemp(h.tempDir, "arka-fastcgi-body-*")
	if err != nil {
		return reqBody{}, fmt.Errorf("spool request body: %w", err)
	}
	os.Remove(f.Name()) // unlinked: the file goes away with the descriptor
	b := reqBody{kind: bodyFile, file: f, src: f}
	if _, err := f.Write(rb.body); err != nil {
		b.close()
		return reqBody{}, fmt.Errorf("spool request body: %w", err)
	}
	buf := h.getCopyBuf()
	defer h.putCopyBuf(buf)
	limit := h.maxSpool - int64(n)
	m, err := io.CopyBuffer(onlyWriter{f}, io.LimitReader(r.Body, limit+1), (*buf)[:cap(*buf)])
	if err != nil {
		b.close()
		var we *writeError
		if errors.As(err, &we) {
			return reqBody{}, fmt.Errorf("spool request body: %w", we.err)
		}
		return reqBody{}, err
	}
	if m > limit {
		b.close()
		return reqBody{}, errBodyTooLarge
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		b.close()
		return reqBody{}, fmt.Errorf("spool request body: %w", err)
	}
	b.length = int64(n) + m
	return b, nil
}

// onlyWriter hides *os.File's ReadFrom, so CopyBuffer uses the pooled
// buffer, and marks write errors (the disk) apart from read errors (the
// client).
type onlyWriter struct{ f *os.File }

type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

func (w onlyWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		return n, &writeError{err}
	}
	return n, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
