// Package spool reads a request body whole before it is forwarded, as
// nginx's request buffering does: in memory up to a small size, beyond it
// in an unlinked temporary file, bounded in total. The FastCGI and proxy
// handlers use it so that a slow uploader holds neither a php-fpm worker
// nor an upstream connection while it sends.
package spool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// DefaultMax is the largest body spooled when a handler sets no bound of
// its own (the site's max_body_size applies before it).
const DefaultMax = 1 << 30

// ErrTooLarge is a body over the bound given to Read.
var ErrTooLarge = errors.New("request body too large")

// WriteError is a failure of the spool file (the disk), as opposed to a
// read error of the client's; its message starts "spool request body".
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "spool request body: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Body is a body read whole: Mem when it fitted in memory, else File
// (positioned at its start). Len is its length in bytes.
type Body struct {
	Mem   []byte
	File  *os.File
	Len   int64
	lease lease // the file's part of the Budget
}

// Reader returns the body's bytes from the start.
func (b *Body) Reader() io.Reader {
	if b.File != nil {
		return b.File
	}
	return bytes.NewReader(b.Mem)
}

// Close removes the spool file, if any, and gives its part of the Budget
// back.
func (b *Body) Close() {
	if b.File != nil {
		b.File.Close()
		b.File = nil
	}
	b.lease.release()
}

// Read reads src to its end: exactly n bytes when n >= 0 (fewer is
// io.ErrUnexpectedEOF), else until EOF. Up to len(mem) bytes go into mem
// (Body.Mem aliases it); a longer body goes to an unlinked file in dir,
// copied with buf. The file is made only once mem is full, so a client
// that declares a large Content-Length but sends little holds no file.
// More than max bytes (max > 0) is ErrTooLarge, without reading them all
// when n says so. The file counts against bud (nil: unbounded) as a body
// of the client at remoteAddr (an http.Request's RemoteAddr, "ip:port"):
// one file, and n bytes when n >= 0, else its bytes as they come; past
// the budget Read returns ErrBusy, and ErrTooLarge for a length over a
// client's whole share. Errors of src are returned as they are
// (timeouts, *http.MaxBytesError); the file's are *WriteError.
func Read(src io.Reader, n int64, mem []byte, max int64, dir string, buf []byte, bud *Budget, remoteAddr string) (Body, error) {
	if max > 0 && n > max || bud != nil && n > bud.clientBytes && n > int64(len(mem)) {
		return Body{}, ErrTooLarge // (over a client's share: it could never fit)
	}
	if n >= 0 && n <= int64(len(mem)) {
		m, err := io.ReadFull(src, mem[:n])
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Body{Mem: mem[:m], Len: int64(m)}, err
	}
	first, err := io.ReadFull(src, mem)
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		if n >= 0 {
			return Body{}, io.ErrUnexpectedEOF
		}
		return Body{Mem: mem[:first], Len: int64(first)}, nil
	case nil:
	default:
		return Body{}, err
	}
	if max > 0 && int64(first) > max {
		return Body{}, ErrTooLarge
	}
	var b Body
	if bud != nil {
		l := lease{b: bud, client: bud.clientOf(remoteAddr), files: 1, bytes: int64(first)}
		if n >= 0 {
			l.bytes = n
		}
		bud.checkDisk(dir)
		if !bud.take(l.client, l.files, l.bytes, false) {
			return Body{}, ErrBusy
		}
		b.lease = l
	}
	f, err := os.CreateTemp(dir, "arka-body-*")
	if err != nil {
		b.Close()
		return Body{}, &WriteError{err}
	}
	os.Remove(f.Name()) // unlinked: the file goes away with the descriptor
	b.File = f
	if _, err := f.Write(mem[:first]); err != nil {
		b.Close()
		return Body{}, &WriteError{err}
	}
	w := fileWriter{f: f}
	var r io.Reader
	limit := int64(-1)
	switch {
	case n >= 0:
		r = io.LimitReader(src, n-int64(first))
	case max > 0:
		limit = max - int64(first)
		r = io.LimitReader(src, limit+1)
		w.lease = &b.lease
	default:
		r = src
		w.lease = &b.lease
	}
	m, err := io.CopyBuffer(w, r, buf)
	if err != nil {
		b.Close()
		var we *WriteError
		switch {
		case errors.As(err, &we):
			return Body{}, we
		case err == ErrBusy:
			return Body{}, ErrBusy
		}
		return Body{}, err
	}
	if n >= 0 && int64(first)+m < n {
		b.Close()
		return Body{}, io.ErrUnexpectedEOF
	}
	if limit >= 0 && m > limit {
		b.Close()
		return Body{}, ErrTooLarge
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		b.Close()
		return Body{}, &WriteError{fmt.Errorf("seek: %w", err)}
	}
	b.Len = int64(first) + m
	return b, nil
}

// fileWriter hides *os.File's ReadFrom, so CopyBuffer uses the buffer
// given, and marks write errors apart from the client's read errors.
// With a lease it reserves each write's bytes first (a body of unknown
// length), and fails with ErrBusy past the budget.
type fileWriter struct {
	f     *os.File
	lease *lease
}

func (w fileWriter) Write(p []byte) (int, error) {
	if w.lease != nil && !w.lease.grow(int64(len(p))) {
		return 0, ErrBusy
	}
	n, err := w.f.Write(p)
	if err != nil {
		return n, &WriteError{err}
	}
	return n, nil
}
