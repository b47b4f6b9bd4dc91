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
	Mem  []byte
	File *os.File
	Len  int64
}

// Reader returns the body's bytes from the start.
func (b *Body) Reader() io.Reader {
	if b.File != nil {
		return b.File
	}
	return bytes.NewReader(b.Mem)
}

// Close removes the spool file, if any.
func (b *Body) Close() {
	if b.File != nil {
		b.File.Close()
		b.File = nil
	}
}

// Read reads src to its end: exactly n bytes when n >= 0 (fewer is
// io.ErrUnexpectedEOF), else until EOF. Up to len(mem) bytes go into mem
// (Body.Mem aliases it); a longer body goes to an unlinked file in dir,
// copied with buf. More than max bytes (max > 0) is ErrTooLarge, without
// reading them all when n says so. Errors of src are returned as they are
// (timeouts, *http.MaxBytesError); the file's are *WriteError.
func Read(src io.Reader, n int64, mem []byte, max int64, dir string, buf []byte) (Body, error) {
	if max > 0 && n > max {
		return Body{}, ErrTooLarge
	}
	if n >= 0 && n <= int64(len(mem)) {
		m, err := io.ReadFull(src, mem[:n])
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Body{Mem: mem[:m], Len: int64(m)}, err
	}
	first := 0
	if n < 0 {
		m, err := io.ReadFull(src, mem)
		switch err {
		case io.EOF, io.ErrUnexpectedEOF:
			return Body{Mem: mem[:m], Len: int64(m)}, nil
		case nil:
		default:
			return Body{}, err
		}
		first = m
	}
	f, err := os.CreateTemp(dir, "arka-body-*")
	if err != nil {
		return Body{}, &WriteError{err}
	}
	os.Remove(f.Name()) // unlinked: the file goes away with the descriptor
	b := Body{File: f}
	if _, err := f.Write(mem[:first]); err != nil {
		b.Close()
		return Body{}, &WriteError{err}
	}
	var r io.Reader = src
	limit := int64(-1)
	switch {
	case n >= 0:
		r = io.LimitReader(src, n)
	case max > 0:
		limit = max - int64(first)
		r = io.LimitReader(src, limit+1)
	}
	m, err := io.CopyBuffer(fileWriter{f}, r, buf)
	if err != nil {
		b.Close()
		var we *WriteError
		if errors.As(err, &we) {
			return Body{}, we
		}
		return Body{}, err
	}
	if n >= 0 && m < n {
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
type fileWriter struct{ f *os.File }

func (w fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		return n, &WriteError{err}
	}
	return n, nil
}
