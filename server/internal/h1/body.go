package h1

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/server/internal/wire"
)

// body is the request body reader of one connection, reused per request.
// It reads exactly Content-Length bytes, or a chunked body (RFC 9112
// section 7.1) including its trailer section, and never more: the next
// request's bytes stay in the connection's buffer.
type body struct {
	c         *conn
	req       *http.Request
	chunked   bool
	remaining int64 // bytes left in the body (CL) or in the current chunk
	eof       bool
	err       error
	expect    bool // Expect: 100-continue not yet answered
	closed    bool
	maxTrail  int
	read      int64 // body bytes read so far (for the minimum rate)
	// done is set once the body has been read to its end; wantWatch, when
	// set, is a request context whose watcher waits for that (ctx.go).
	done      atomic.Bool
	wantWatch atomic.Pointer[reqCtx]
}

var errBodyAfterClose = errors.New("h1: read on closed body")

func (b *body) reset(c *conn, req *http.Request, n int64, chunked, expect bool) {
	b.c, b.req, b.remaining, b.chunked, b.expect, b.maxTrail = c, req, n, chunked, expect, c.srv.Limits.MaxHeaderBytes()
	b.eof, b.err, b.closed = false, nil, false
	b.read = 0
	b.wantWatch.Store(nil)
	if chunked {
		b.remaining = 0 // of the current chunk
	} else if n == 0 {
		b.eof = true
	}
	b.done.Store(b.eof)
}

func (b *body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errBodyAfterClose
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.eof {
		return 0, io.EOF
	}
	if b.expect {
		b.expect = false
		b.c.send100()
	}
	if b.c.br.Buffered() == 0 {
		b.c.armBodyRead(b.read)
	}
	var n int
	var err error
	if b.chunked {
		n, err = b.readChunked(p)
	} else {
		if int64(len(p)) > b.remaining {
			p = p[:b.remaining]
		}
		n, err = b.c.br.Read(p)
		b.remaining -= int64(n)
		if b.remaining == 0 {
			b.eof = true
			err = nil
		} else if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	}
	b.read += int64(n)
	if err != nil {
		b.err = err
	}
	if b.eof {
		if !b.done.Load() {
			b.done.Store(true)
			if x := b.wantWatch.Swap(nil); x != nil {
				b.c.startWatchNow(x)
			}
		}
		if n > 0 {
			return n, nil
		}
		return 0, io.EOF
	}
	return n, err
}

func (b *body) Close() error {
	b.closed = true
	return nil
}

func (b *body) readChunked(p []byte) (int, error) {
	br := b.c.br
	if b.remaining == 0 {
		size, err := readChunkSize(br)
		if err != nil {
			return 0, err
		}
		if size == 0 {
			if err := b.readTrailer(); err != nil {
				return 0, err
			}
			b.eof = true
			return 0, nil
		}
		b.remaining = size
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := br.Read(p)
	b.remaining -= int64(n)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	if err != nil {
		return n, err
	}
	if b.remaining == 0 {
		// chunk-data is followed by CRLF.
		if err := expectCRLF(br); err != nil {
			return n, err
		}
	}
	return n, nil
}

var errChunk = badRequest("malformed chunked encoding")

// readChunkSize reads `chunk-size [ chunk-ext ] CRLF`. Lines of the
// chunked coding must end in CRLF exactly (RFC 9112 section 7.1; the bare
// LF tolerance of section 2.2 is for the start line and header fields):
// accepting a bare LF here lets requests be smuggled past a front proxy
// that frames them differently (CVE-2025-22871).
func readChunkSize(br *bufio.Reader) (int64, error) {
	line, err := readStrictLine(br, 4096)
	if err != nil {
		if err == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, err
	}
	size, ok := wire.ParseChunkSize(line)
	if !ok {
		return 0, errChunk
	}
	return size, nil
}

func expectCRLF(br *bufio.Reader) error {
	c, err := br.ReadByte()
	if err != nil {
		return io.ErrUnexpectedEOF
	}
	if c != '\r' {
		return errChunk
	}
	if c, err = br.ReadByte(); err != nil {
		return io.ErrUnexpectedEOF
	}
	if c != '\n' {
		return errChunk
	}
	return nil
}

// readStrictLine reads a line that must end in CRLF, with no CR or LF
// inside.
func readStrictLine(br *bufio.Reader, max int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errHeaderTooLarge
	}
	if err != nil {
		return nil, err
	}
	if len(line) > max+2 {
		return nil, errHeaderTooLarge
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errChunk
	}
	line = line[:len(line)-2]
	for _, c := range line {
		if c == '\r' {
			return nil, errChunk
		}
	}
	return line, nil
}

// readTrailer reads the trailer section after the last chunk and stores
// fields the request declared in Trailer into req.Trailer.
func (b *body) readTrailer() error {
	total := 0
	for {
		line, err := readStrictLine(b.c.br, b.maxTrail)
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if len(line) == 0 {
			return nil
		}
		total += len(line)
		if total > b.maxTrail {
			return errHeaderTooLarge
		}
		colon := -1
		for i, c := range line {
			if c == ':' {
				colon = i
				break
			}
			if !tokenChar[c] {
				return errChunk
			}
		}
		if colon <= 0 {
			return errChunk
		}
		key := http.CanonicalHeaderKey(string(line[:colon]))
		val := strings.TrimSpace(string(line[colon+1:]))
		if _, declared := b.req.Trailer[key]; declared {
			b.req.Trailer[key] = append(b.req.Trailer[key], val)
		}
	}
}

// readLineInto reads one line ending in LF (a preceding CR is dropped) of at
// most max bytes. A bare CR inside the line is an error (RFC 9112 section
// 2.2). A line longer than the reader's buffer is gathered in *scratch (nil:
// such a line is errHeaderTooLarge). The result is valid until the next read.
func readLineInto(br *bufio.Reader, max int, scratch *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		if scratch == nil || len(line) > max {
			return nil, errHeaderTooLarge
		}
		acc := append((*scratch)[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = br.ReadSlice('\n')
			acc = append(acc, line...)
			if len(acc) > max+2 {
				return nil, errHeaderTooLarge
			}
		}
		*scratch = acc
		line = acc
	}
	if err != nil {
		return nil, err
	}
	if len(line) > max+2 {
		return nil, errHeaderTooLarge
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	for _, c := range line {
		if c == '\r' {
			return nil, badRequest("bare CR")
		}
	}
	return line, nil
}

// maxDiscard bounds, in bytes, the rest of a request body read and
// dropped to keep the connection for the next request (net/http's figure);
// beyond it the connection closes after the response.
const maxDiscard = 256 << 10

// wontDiscard reports whether discard(max) is sure to fail: the client
// waits for a 100 Continue it was not sent, or the unread rest of the body
// is known to exceed max bytes (a chunked body's length is not known).
func (b *body) wontDiscard(max int64) bool {
	if b.eof {
		return b.err != nil
	}
	return b.err != nil || b.expect || !b.chunked && b.remaining > max
}

// mustWait reports whether reading the rest of the body (discard) may
// wait for the client: its bytes are not all in the read buffer.
func (b *body) mustWait() bool {
	if b.eof || b.err != nil || b.expect {
		return false
	}
	return b.chunked || b.remaining > int64(b.c.br.Buffered())
}

// discard reads what is left of the body, up to max bytes, so the
// connection can serve the next request. It reports whether the body was
// consumed completely.
func (b *body) discard(max int64) bool {
	if b.eof {
		return b.err == nil
	}
	if b.err != nil || b.expect {
		// A client waiting for 100 Continue that we never sent will send
		// the body or not: the connection's state is unknown.
		return false
	}
	if !b.chunked && b.remaining > max {
		return false
	}
	// Do not wait long for a client that stopped sending (and do not let
	// the body read timeout replace this deadline).
	c := b.c
	c.rmu.Lock()
	c.rfixed = true
	c.rwc.SetReadDeadline(time.Now().Add(2 * time.Second))
	c.deadline = unknownDeadline
	c.rmu.Unlock()
	b.closed = false
	n, err := io.CopyN(io.Discard, b, max+1)
	return err == io.EOF && n <= max
}
