package wire

import (
	"net"
	"sync"
)

// BatchConn is the connection under a TLS one (crypto/tls), whose writes
// can be gathered: crypto/tls writes each record of at most 16 KiB with
// its own system call, so a 64 KiB write of an HTTP/2 engine's output
// costs four; between Hold and Flush they are appended to a buffer and
// go out in one. Outside Hold and Flush, Write goes straight through.
//
// Safe for concurrent use: crypto/tls may write from a reading goroutine
// too (a KeyUpdate answer, an alert), and such writes keep their order.
type BatchConn struct {
	net.Conn
	mu   sync.Mutex
	hold bool
	buf  []byte
}

// Write writes p, or appends it to the batch while one is held.
func (b *BatchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	if b.hold {
		b.buf = append(b.buf, p...)
		b.mu.Unlock()
		return len(p), nil
	}
	b.mu.Unlock()
	return b.Conn.Write(p)
}

// Hold starts a batch: writes are appended to buf[:0] until Flush.
func (b *BatchConn) Hold(buf []byte) {
	b.mu.Lock()
	b.hold, b.buf = true, buf[:0]
	b.mu.Unlock()
}

// Flush ends the batch and writes it in one call. It returns the batch's
// buffer for reuse.
func (b *BatchConn) Flush() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	buf := b.buf
	b.hold, b.buf = false, nil
	if len(buf) == 0 {
		return buf, nil
	}
	_, err := b.Conn.Write(buf)
	return buf, err
}
