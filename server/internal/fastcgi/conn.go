package fastcgi

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/internal/fcgi"
	"github.com/arkaweb/arka/server/internal/monotime"
	"github.com/arkaweb/arka/server/internal/wire"
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
	timeout time.Duration // read_timeout of the current request: longest wait for output

	// probed is set once a worker answered the connection's probe
	// (probeSent: the probe is written); see pool.probe.
	probed, probeSent bool
	// idleSince is when it last went idle (under pool.mu).
	idleSince time.Time

	// reused is set once the connection has completed a request: a failure
	// on a reused connection before any answer is a stale connection, and
	// the request may be sent again on a new one.
	reused bool

	// wmu serializes writes after the request head: STDIN records from the
	// body goroutine and ABORT_REQUEST from the client-gone callback.
	wmu sync.Mutex
	// aborted is set when ABORT_REQUEST was sent: php-fpm then closes the
	// connection after its END_REQUEST, so it is never reused.
	aborted atomic.Bool
	// armed is when the read deadline was last pushed forward (monotime.Now());
	// 0 while no read deadline applies (a body is still being sent), -1
	// once it is fixed (after ABORT_REQUEST).
	armed atomic.Int64
	// heard is when the silence read_timeout limits began (monotime.Now()):
	// the last read that brought output, or the request's sending (while
	// armed > 0; written by the reading goroutine, and by armRead before
	// armed is set).
	heard int64

	// answered is set once the server sent anything on the connection
	// (see pool.kickUntilAnswered).
	answered atomic.Bool

	// until is the read deadline read_timeout sets (while armed > 0);
	// short is set while a shorter one, holdDelay, is in place (see
	// readHeld). dmu orders the changes of the read deadline between Read
	// and abort, which runs in another goroutine.
	until time.Time
	short bool
	dmu   sync.Mutex
	// holdEnd is when the output held now must go to the client: holdDelay
	// after the first held byte was read (see readHeld); zero while
	// nothing is held.
	holdEnd time.Time
	// held is the request's output not yet given to the client, while a
	// response is read (see readHeld); nil otherwise.
	held heldOutput

	closeOnce sync.Once
	abortFn   func() // c.abort, made once
	peek      peeker // checks a kept connection before use
	// send writes req (a request whose body is all in it) and waits for
	// the answer without a failing read first (wire.Sender).
	send   wire.Sender
	req    []byte
	reqCtx context.Context // the client's request context, for stop
	stop   func() bool     // wire.AfterFunc(reqCtx, abortFn)'s, once req is sent
}

func newConn(nc net.Conn, timeout time.Duration) *conn {
	c := &conn{nc: nc, timeout: timeout}
	c.abortFn = c.abort
	c.peek.init(nc)
	c.send.Init(nc, c.writeReq)
	c.br = bufio.NewReaderSize(c, readBufferSize)
	c.rd.Reset(c.br)
	return c
}

// writeReq sends c.req, then has the connection aborted if the client
// leaves (c.stop), as exchange.attempt does for other requests.
func (c *conn) writeReq() error {
	if _, err := c.nc.Write(c.req); err != nil {
		return err
	}
	c.stop = wire.AfterFunc(c.reqCtx, c.abortFn)
	return nil
}

// heldOutput is the response output a connection's reader holds back
// for the client (the exchange): whether there is any, and giving it to
// the client.
type heldOutput interface {
	holding() bool
	release()
}

// holdDelay is how long output already read is held back, when php-fpm
// has sent nothing more yet, before it goes to the client: php-fpm sends
// a page in 8 KiB pieces microseconds apart, so waiting this long gathers
// a whole page into one write (with a Content-Length) instead of one
// write per piece through the response buffer's goroutine, while a
// script's flush() or pause still reaches the client within a
// millisecond. nginx's fastcgi_buffering holds such output until a buffer
// is full.
var holdDelay = time.Millisecond // a variable for tests

// Read implements io.Reader for the bufio.Reader. It fails with a
// timeout once php-fpm has sent nothing for read_timeout, counted from
// the last read that brought output (or from the request's sending),
// like nginx's fastcgi_read_timeout. To keep timer work off the hot path
// the read deadline is pushed forward at most once per eighth of the
// timeout, so it may fire up to that much early: the read then looks at
// the silence so far and, short of read_timeout, sets the deadline to
// its exact end and waits on. A read after a timeout (the first read
// after wire.Sender's wait ended on the deadline) moves nothing: only
// output does.
func (c *conn) Read(p []byte) (int, error) {
	for {
		at := c.armed.Load()
		n, err := c.read(p, at)
		if n > 0 {
			if at > 0 {
				now := monotime.Now()
				c.heard = now
				if now-at > int64(c.timeout/8) && c.armed.CompareAndSwap(at, now) {
					c.until = time.Now().Add(c.timeout)
					if !c.short {
						c.nc.SetReadDeadline(c.until)
					}
				}
			}
			if !c.answered.Load() {
				c.answered.Store(true)
			}
			return n, err
		}
		if at <= 0 || !isTimeout(err) || !c.rearm() {
			return n, err
		}
	}
}

// rearm, after the read deadline passed, sets it to read_timeout after
// the silence began and reports whether that is still ahead (the
// deadline, pushed forward once per eighth of read_timeout, fired early).
func (c *conn) rearm() bool {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.armed.Load() <= 0 {
		return false // ABORT_REQUEST fixed the deadline
	}
	left := time.Duration(c.heard + int64(c.timeout) - monotime.Now())
	if left <= 0 {
		return false
	}
	c.until = time.Now().Add(left)
	if !c.short {
		c.nc.SetReadDeadline(c.until)
	}
	return true
}

// read reads into p, holding output back for holdDelay where it can (see
// readHeld); at is c.armed as Read loaded it.
func (c *conn) read(p []byte, at int64) (int, error) {
	if c.held != nil && c.held.holding() {
		if at > 0 {
			return c.readHeld(p)
		}
		// No read timeout yet (the body is still being sent): no short
		// wait either, the output goes out before the wait.
		c.held.release()
		c.holdEnd = time.Time{}
		return c.nc.Read(p)
	}
	c.holdEnd = time.Time{}
	if c.short {
		c.restoreDeadline()
	}
	return c.nc.Read(p)
}

// readHeld reads while output is held back: it waits for more until
// holdDelay after the first held byte arrived (not after the last one, so
// a script that flushes more often than holdDelay is not held until
// outBufferSize fills), then gives the held output to the client and
// waits on (up to read_timeout) as usual.
func (c *conn) readHeld(p []byte) (int, error) {
	now := time.Now()
	if c.holdEnd.IsZero() {
		c.holdEnd = now.Add(holdDelay)
	} else if !now.Before(c.holdEnd) {
		return c.releaseHeld(p)
	}
	c.dmu.Lock()
	ok, until := c.armed.Load() > 0, c.until
	if ok {
		d := c.holdEnd
		if d.After(until) {
			d = until
		}
		c.nc.SetReadDeadline(d)
		c.short = true
	}
	c.dmu.Unlock()
	n, err := c.nc.Read(p)
	if n > 0 || !ok || !isTimeout(err) || !time.Now().Before(until) {
		return n, err
	}
	// A pause: the client gets what came so far.
	return c.releaseHeld(p)
}

// releaseHeld gives the held output to the client, then reads with the
// read_timeout deadline.
func (c *conn) releaseHeld(p []byte) (int, error) {
	c.held.release()
	c.holdEnd = time.Time{}
	c.restoreDeadline()
	return c.nc.Read(p)
}

// restoreDeadline puts back the read_timeout deadline after a short wait,
// unless abort set its own meanwhile.
func (c *conn) restoreDeadline() {
	c.dmu.Lock()
	if c.armed.Load() > 0 {
		c.nc.SetReadDeadline(c.until)
	}
	c.short = false
	c.dmu.Unlock()
}

// armRead starts the read timeout now (once the request body is sent).
func (c *conn) armRead() {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if at := c.armed.Load(); at >= 0 {
		c.until = time.Now().Add(c.timeout)
		c.heard = monotime.Now()
		c.armed.Store(c.heard)
		c.nc.SetReadDeadline(c.until)
	}
}

// writeLocked writes b with the write deadline read_timeout ahead.
func (c *conn) writeLocked(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	_, err := c.nc.Write(b)
	return err
}

// abortGrace is how long the end of an aborted request is awaited.
const abortGrace = 2 * time.Second

// abort sends ABORT_REQUEST (FastCGI section 5.4) for the current request.
// php-fpm does not stop a running script for it; the script ends on its
// own (its END_REQUEST is awaited, so the worker and the slot are freed
// together) or, if it is still writing output after abortGrace, the
// connection is closed under it and its next write fails, which ends it
// like a client that went away.
func (c *conn) abort() {
	c.aborted.Store(true)
	var rec [fcgi.HeaderLen]byte
	c.writeLocked(fcgi.AppendAbortRequest(rec[:0], 1))
	c.dmu.Lock()
	c.armed.Store(-1)
	c.nc.SetReadDeadline(time.Now().Add(min(abortGrace, c.timeout)))
	c.dmu.Unlock()
}

// peerDraining tells, after the connection ended (EOF) without answering
// a request, whether the peer is a php-fpm worker that gave the connection
// up after its previous request, rather than a process that died while
// running this one. Such a worker (pm.max_requests reached) shuts down its
// sending side and then reads and discards everything until the client
// closes (php-src main/fastcgi.c, fcgi_close), so it never ran the request
// and accepts more bytes; a dead process refuses them: EPIPE at once over
// a unix socket, and over TCP once its RST is back, a round trip after the
// first probe. The probe is an empty STDIN record.
func (c *conn) peerDraining(tcp bool) bool {
	var rec [fcgi.HeaderLen]byte
	probe := fcgi.AppendHeader(rec[:0], fcgi.TypeStdin, 1, 0, 0)
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := c.nc.Write(probe); err != nil {
		return false
	}
	if tcp {
		time.Sleep(5 * time.Millisecond)
		if _, err := c.nc.Write(probe); err != nil {
			return false
		}
	}
	return true
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
