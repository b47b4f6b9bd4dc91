package fastcgi

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/server/fastcgi/fcgi"
)

// readBufferSize is the receive buffer of one connection. php-fpm writes
// its output in 8 KiB pieces; 32 KiB takes several at once.
const readBufferSize = 32 << 10

// conn is one connection to the FastCGI server. It carries one request at
// a time, always with request id 1 (php-fpm does not multiplex).
type conn struct {
	nc      net.Conn
	br      *bufio.Reader
	rd      fcgi.Reader
	timeout time.Duration // read_timeout: longest wait for output

	// reused is set once the connection has completed a request: a failure
	// on a reused connection before any answer is a stale connection, and
	// the request may be sent again on a new one.
	reused bool
	// lastEnd is when the last request on it ended.
	lastEnd time.Time

	// wmu serializes writes after the request head: STDIN records from the
	// body goroutine and ABORT_REQUEST from the client-gone callback.
	wmu sync.Mutex
	// aborted is set when ABORT_REQUEST was sent: php-fpm then closes the
	// connection after its END_REQUEST, so it is never reused.
	aborted atomic.Bool
	// armed is when the read deadline was last pushed forward (UnixNano),
	// or 0 while no read deadline applies (a body is still being sent).
	armed atomic.Int64

	closeOnce sync.Once
	abortFn   func() // c.abort, made once
}

func newConn(nc net.Conn, timeout time.Duration) *conn {
	c := &conn{nc: nc, timeout: timeout}
	c.abortFn = c.abort
	c.br = bufio.NewReaderSize(c, readBufferSize)
	c.rd.Reset(c.br)
	return c
}

// Read implements io.Reader for the bufio.Reader. It keeps the read
// deadline read_timeout ahead of the last time output arrived, like
// nginx's fastcgi_read_timeout, pushing it forward at most once per
// eighth of the timeout to keep timer work off the hot path.
func (c *conn) Read(p []byte) (int, error) {
	if at := c.armed.Load(); at != 0 {
		now := time.Now()
		if now.UnixNano()-at > int64(c.timeout/8) {
			c.nc.SetReadDeadline(now.Add(c.timeout))
			c.armed.Store(now.UnixNano())
		}
	}
	return c.nc.Read(p)
}

// armRead starts the read timeout now.
func (c *conn) armRead() {
	now := time.Now()
	c.nc.SetReadDeadline(now.Add(c.timeout))
	c.armed.Store(now.UnixNano())
}

// writeLocked writes b with the write deadline read_timeout ahead.
func (c *conn) writeLocked(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	_, err := c.nc.Write(b)
	return err
}

// abort sends ABORT_REQUEST (FastCGI section 5.4) for the current request.
func (c *conn) abort() {
	c.aborted.Store(true)
	var rec [fcgi.HeaderLen]byte
	c.writeLocked(fcgi.AppendAbortRequest(rec[:0], 1))
}

func (c *conn) close() {
	c.closeOnce.Do(func() { c.nc.Close() })
}

// clean reports whether the connection can carry another request: its
// last request ended with END_REQUEST, nothing unread is buffered, and no
// ABORT_REQUEST is pending.
func (c *conn) clean() bool {
	return !c.aborted.Load() && c.br.Buffered() == 0
}
