package fastcgi

import (
	"io"
	"net/http"
	"os"

	"github.com/arkaweb/arka/server/internal/spool"
)

// How a request body reaches the script's STDIN.
//
// php-fpm reads at most CONTENT_LENGTH bytes of STDIN (its
// sapi_cgi_read_post stops there; without CONTENT_LENGTH a script sees no
// body at all), so the length must be known before the request is sent:
//
//   - small bodies (at most smallBody bytes) are read before a connection
//     is taken and sent with the request in one write;
//   - larger bodies, and all of unknown length (HTTP/1.1 chunked, HTTP/2
//     without content-length), are spooled to an unlinked temporary file
//     first (package spool), then streamed from it with their length, so a
//     slow upload never holds a php-fpm worker, as with nginx's
//     fastcgi_request_buffering;
//   - with request_buffering = false, larger bodies of known length are
//     streamed from the client while the script runs, one STDIN record per
//     read, never held whole.
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
	spool  spool.Body
}

func (b *reqBody) close() { b.spool.Close() }

// errBodyTooLarge is a body over Options.MaxSpool or Options.PHPMaxBody.
var errBodyTooLarge = spool.ErrTooLarge

// readBody decides how the body of r is sent, reading it if it is small or
// buffered. Errors are errBodyTooLarge, *http.MaxBytesError (the server's
// body limit), spool.ErrBusy (the spool's budget), a *spool.WriteError or
// a read error of the client's.
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
	if h.maxBody > 0 && cl > h.maxBody {
		return reqBody{}, errBodyTooLarge // PHP would drop it: 413 before it is read
	}
	if cl > smallBody && !h.buffering {
		return reqBody{kind: bodyStream, length: cl, src: r.Body}, nil
	}
	rb.body = grow(rb.body, smallBody)
	buf := h.getCopyBuf()
	defer h.putCopyBuf(buf)
	b, err := spool.Read(r.Body, cl, rb.body, h.maxSpool, h.tempDir, (*buf)[:cap(*buf)], h.spool, r.RemoteAddr)
	switch {
	case err != nil:
		return reqBody{}, err
	case b.File != nil:
		return reqBody{kind: bodyFile, length: b.Len, file: b.File, src: b.File, spool: b}, nil
	case b.Len == 0:
		return reqBody{kind: bodyNone, length: -1}, nil
	}
	rb.body = b.Mem
	return reqBody{kind: bodyBuffered, length: b.Len}, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
