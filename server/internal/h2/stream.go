package h2

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/server/internal/core"
	"github.com/arkaweb/arka/server/internal/limits"
	"github.com/arkaweb/arka/server/internal/wire"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// stream is one request/response exchange.
type stream struct {
	c  *conn
	id uint32

	// Reader-goroutine state.
	remoteClosed bool  // END_STREAM received
	declaredCL   int64 // content-length of the request, -1 if none
	received     int64
	recvWindow   atomic.Int32

	localClosed atomic.Bool // END_STREAM or RST_STREAM sent
	running     atomic.Bool // the handler runs
	lingering   bool        // kept after the handler for a draining body (under c.smu)
	inline      bool        // the handler runs on the reader goroutine (inline.go)
	sendWindow  int64       // under c.wmu
	headerBytes uint32      // the request's header list size, counted in c.headerHeld while the handler runs

	ctx    *streamCtx
	ctxVal streamCtx // ctx points here: one allocation with the stream
	body   body
	w      responseWriter
	req    *http.Request
	reqVal http.Request // req points here (newRequest)
	url    url.URL
	// vals backs the request's header values when it has at most two
	// fields besides the pseudo-header ones (h2load, curl, API clients):
	// no allocation for them, and the stream stays in its size class
	// (1024 bytes).
	vals [2]string
}

func (st *stream) handlerRunning() bool { return st.running.Load() }

// abort ends the stream's context and body with err (reset, connection
// closed) and wakes writers blocked on flow control.
func (st *stream) abort(err error) {
	// The response is given up first: a handler woken by the failed body
	// or the cancelled context must find its writes refused, or it could
	// still send DATA on a stream the peer has reset (h2spec 5.1 closed/9).
	st.c.wmu.Lock()
	st.w.aborted = true
	st.c.wcond.Broadcast()
	st.c.wmu.Unlock()
	st.ctx.cancel(context.Canceled)
	st.body.fail(err)
}

// run calls the handler on a worker goroutine and completes the stream.
func (st *stream) run() {
	c := st.c
	defer func() {
		p := recover()
		if p != nil && p != http.ErrAbortHandler {
			buf := make([]byte, 16<<10)
			c.srv.logger().Error("h2: panic serving", "remote", c.remote, "panic", p,
				"stack", string(buf[:runtime.Stack(buf, false)]))
		}
		if p != nil {
			st.resetLocal(http2.ErrCodeInternal)
		} else {
			// The output is sent from this goroutine when the stream is
			// the connection's only one (writeInline), else by the writer.
			alone := c.alone()
			st.w.flushLater = true
			st.w.finish()
			st.w.flushLater = false
			if alone {
				c.writeInline()
			} else {
				c.kickWriter()
			}
		}
		st.ctx.cancel(context.Canceled)
		st.running.Store(false)
		c.smu.Lock()
		c.active--
		c.headerHeld -= int64(st.headerBytes)
		if c.active == 0 {
			c.idleSince = time.Now()
			c.armIdleLocked()
		}
		c.smu.Unlock()
		// Return the window of body bytes nobody will read; afterHandler
		// asks a client still sending to stop (RFC 9113 section 8.1).
		if left := st.body.close(); left > 0 {
			c.credit(nil, int32(left))
		}
		st.afterHandler()
		st.w.releaseHeader()
	}()
	c.srv.Handler.ServeHTTP(&st.w, st.req)
}

// headerMaps are response header maps, reused once their response is
// done (a handler must not use its ResponseWriter after it returned):
// the map and its growth were two of the ten allocations of a small
// static response.
var headerMaps = sync.Pool{New: func() any { return make(http.Header, 8) }}

// maxPooledHeader bounds the fields of a header map given back.
const maxPooledHeader = 32

// releaseHeader gives the response's header map back (the handler has
// returned and the response is sent or given up).
func (w *responseWriter) releaseHeader() {
	h := w.header
	w.header = nil
	if h == nil || len(h) > maxPooledHeader {
		return
	}
	clear(h)
	headerMaps.Put(h)
}

// afterHandler resets a stream whose request body is still coming, and
// closes it when both sides are done. Runs on the worker goroutine, so it
// takes the locks it needs.
func (st *stream) afterHandler() {
	c := st.c
	c.smu.Lock()
	_, open := c.streams[st.id]
	c.smu.Unlock()
	if !open {
		return
	}
	c.wmu.Lock()
	aborted := st.w.aborted
	c.wmu.Unlock()
	if aborted {
		// Reset already (by the peer, a stall or the connection's end):
		// no RST_STREAM of ours, or frames the peer sends on the stream
		// afterwards would be ignored as in flight instead of answered
		// with STREAM_CLOSED (RFC 9113 section 5.1, "closed").
		c.closeStream(st)
		return
	}
	if !st.body.ended() {
		// The response is complete but the request is not: the client is
		// asked to stop (RST_STREAM NO_ERROR, RFC 9113 section 8.1) and the
		// stream is forgotten at once, so a request that never ends (a
		// GET without END_STREAM) pins no memory. Only a body small enough
		// to drain keeps its stream, a few per connection, trimmed.
		if st.drains() && c.linger(st) {
			return
		}
		c.wmu.Lock()
		if !c.dead {
			c.fw.WriteRSTStream(st.id, http2.ErrCodeNo)
			c.noteReset(st.id)
		}
		c.wmu.Unlock()
		c.kickWriter()
		c.closeStream(st)
		return
	}
	c.closeStream(st)
}

// maxLingering bounds the streams of a connection kept after their
// response while the rest of a small request body drains (see drains).
const maxLingering = 4

// linger keeps st, whose handler is done, until its request body ends,
// if the connection has fewer than maxLingering such streams; it drops
// what only the handler needed (request, response header, buffers), so a
// lingering stream costs its table entry. It reports whether st is kept.
func (c *conn) linger(st *stream) bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.lingering >= maxLingering || c.streams[st.id] != st {
		return false
	}
	c.lingering++
	st.lingering = true
	st.body.mu.Lock()
	st.req = nil
	st.body.mu.Unlock()
	st.w.header, st.w.pending, st.w.trailers = nil, nil, nil
	return true
}

// drains reports whether the rest of a request body the handler left
// unread is read and dropped rather than refused with RST_STREAM: its
// declared length fits the stream's initial window, so the client never
// waits for a WINDOW_UPDATE that will not come.
func (st *stream) drains() bool {
	return st.declaredCL >= 0 && st.declaredCL <= streamWindow
}

// resetLocal sends RST_STREAM for a stream whose handler failed.
func (st *stream) resetLocal(code http2.ErrCode) {
	c := st.c
	c.wmu.Lock()
	if !st.localClosed.Load() && !c.dead {
		st.localClosed.Store(true)
		c.fw.WriteRSTStream(st.id, code)
	}
	c.wmu.Unlock()
	c.kickWriter()
}

// body is a request body: bytes pushed by the reader, read by the handler.
type body struct {
	st      *stream
	mu      sync.Mutex
	cond    sync.Cond
	buf     []byte  // received, not yet read; from bodyBufs (bp) while not empty
	bp      *[]byte // the pool's box of buf
	off     int
	err     error
	eof     bool
	closed  bool // the handler is done; pushes are discarded
	unacked int32

	// Read timeouts (Limits.BodyRead and BodyMinRate): the first read,
	// the last bytes pushed, all bytes pushed; a handler's own deadline
	// (http.ResponseController) replaces them when set.
	start    time.Time
	last     time.Time
	total    int64
	deadline time.Time
	timer    *time.Timer
	fixed    bool
	waiting  bool // the handler waits for the client's next bytes

	// expect100: the request has "Expect: 100-continue"; the first Read
	// sends the 100 (send100) unless the response has begun. Read's alone.
	expect100 bool
	finalSent bool // the final response's HEADERS are out (under c.wmu)
}

func (b *body) init(st *stream, eof bool) {
	b.st = st
	b.cond.L = &b.mu
	b.eof = eof
}

// push adds data; it reports false if the handler no longer reads.
func (b *body) push(p []byte, end bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.err != nil {
		return false
	}
	if len(p) > 0 {
		b.total += int64(len(p))
		b.last = time.Now()
		if b.off > 0 && b.off == len(b.buf) {
			b.buf, b.off = b.buf[:0], 0
		}
		if b.bp == nil {
			b.bp = bodyBufs.Get().(*[]byte)
			b.buf = (*b.bp)[:0]
		}
		b.buf = append(b.buf, p...)
	}
	if end {
		b.eof = true
	}
	b.cond.Broadcast()
	return true
}

func (b *body) fail(err error) {
	b.mu.Lock()
	if b.err == nil && !b.eof {
		b.err = err
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *body) ended() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof
}

// close marks the body done and returns how many buffered bytes were left
// unread (their window must go back to the connection).
func (b *body) close() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := len(b.buf) - b.off
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	b.releaseLocked()
	return left
}

// bodyBufs hold request body bytes between their arrival and the
// handler's read. A stream gives its buffer back as soon as the handler
// has read everything, so one waiting for more (a slow upload, a handler
// busy elsewhere) holds none.
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// releaseLocked returns the body buffer to bodyBufs (b.mu held); one that
// grew past 64 KiB is left to the collector.
func (b *body) releaseLocked() {
	if b.bp != nil && cap(b.buf) <= 64<<10 {
		*b.bp = b.buf[:0]
		bodyBufs.Put(b.bp)
	}
	b.buf, b.bp, b.off = nil, nil, 0
}

func (b *body) Read(p []byte) (int, error) {
	if b.expect100 {
		b.expect100 = false
		b.st.send100()
	}
	b.mu.Lock()
	for b.off == len(b.buf) && !b.eof && b.err == nil && !b.closed {
		if err := b.waitLocked(); err != nil {
			b.mu.Unlock()
			return 0, err
		}
	}
	if b.closed {
		b.mu.Unlock()
		return 0, errors.New("h2: read on closed body")
	}
	if b.off == len(b.buf) {
		err := b.err
		if err == nil {
			err = io.EOF
		}
		b.mu.Unlock()
		return 0, err
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	if b.off == len(b.buf) {
		b.releaseLocked()
	}
	b.unacked += int32(n)
	var credit int32
	if b.unacked >= streamWindow/8 || b.off == len(b.buf) && !b.eof {
		credit, b.unacked = b.unacked, 0
	}
	b.mu.Unlock()
	if credit > 0 {
		b.st.c.credit(b.st, credit)
	}
	return n, nil
}

func (b *body) Close() error { return nil }

// waitLocked waits (b.mu held) for the reader to push, until the read
// deadline: the handler's, or the silence and minimum-rate bound of
// limits.Limits.BodyDeadline. Past it the read fails with a timeout error.
func (b *body) waitLocked() error {
	now := time.Now()
	if b.start.IsZero() {
		b.start = now
	}
	dl, err := b.deadline, error(os.ErrDeadlineExceeded)
	if !b.fixed {
		lim := &b.st.c.srv.Limits
		dl, err = lim.BodyDeadline(b.start, b.last, b.total), limits.ErrBodyTimeout
	}
	if !dl.IsZero() {
		wait := dl.Sub(now)
		if wait <= 0 {
			return err
		}
		if b.timer == nil {
			b.timer = time.AfterFunc(wait, func() {
				b.mu.Lock()
				b.cond.Broadcast()
				b.mu.Unlock()
			})
		} else {
			b.timer.Reset(wait)
		}
	}
	b.waiting = true
	b.cond.Wait()
	b.waiting = false
	return nil
}

// starved reports whether the handler waits for body bytes that do not
// come.
func (b *body) starved() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// streamCtx is a stream's request context: the connection's values, and
// cancelled when the client resets the stream, the connection ends (the
// connection aborts every stream) or the handler returns. It implements
// AfterFunc, so contexts derived from it need no goroutine.
type streamCtx struct {
	context.Context // the connection context: Deadline and Value
	mu              sync.Mutex
	done            chan struct{}
	err             error
	after           []*afterFunc
}

type afterFunc struct {
	f    func()
	done bool
}

func (x *streamCtx) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done == nil {
		x.done = make(chan struct{})
		if x.err != nil {
			close(x.done)
		}
	}
	return x.done
}

func (x *streamCtx) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// AfterFunc arranges for f to run (in its own goroutine) once the context
// is done; stop prevents that if it has not happened yet.
func (x *streamCtx) AfterFunc(f func()) (stop func() bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	x.after = append(x.after, a)
	return func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		if a.done {
			return false
		}
		a.done = true
		return true
	}
}

func (x *streamCtx) cancel(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		return
	}
	x.err = err
	if x.done != nil {
		close(x.done)
	}
	for _, a := range x.after {
		if !a.done {
			a.done = true
			go a.f()
		}
	}
	x.after = nil
}

// responseWriter is a stream's http.ResponseWriter.
type responseWriter struct {
	st          *stream
	header      http.Header
	status      int
	wroteHeader bool
	headerSent  bool
	bodyOK      bool
	head        bool
	aborted     bool // under c.wmu
	flushLater  bool // the caller has the output sent: no kickWriter (see stream.run)
	cl          int64
	written     int64
	pending     []byte
	trailers    []string
	deadline    time.Time // write deadline (http.ResponseController)
	waitFrom    time.Time // when a wait for window began, since the last DATA sent (under c.wmu)
}

var errAborted = errors.New("h2: stream closed")

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	core.CheckStatus("h2", code)
	if code == http.StatusSwitchingProtocols {
		return // no such thing over HTTP/2 (RFC 9113 section 8.6)
	}
	if core.Interim(code) {
		w.writeInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	w.bodyOK, w.cl = core.Final(code, w.header)
}

// send100 answers "Expect: 100-continue" (RFC 9110 section 10.1.1) as the
// handler starts reading the body: a HEADERS frame with :status 100 (and
// Date), unless the final response's HEADERS are out already (a 1xx after
// them would be malformed, RFC 9113 section 8.1). The body may be read on
// another goroutine than the handler's: what it checks is under c.wmu.
func (st *stream) send100() {
	c := st.c
	c.wmu.Lock()
	if !st.w.aborted && !c.dead && !st.body.finalSent {
		c.writeHeaderBlock(st.id, false, http.StatusContinue, nil, nil)
	}
	c.wmu.Unlock()
	c.kickWriter()
}

func (w *responseWriter) writeInformational(code int) {
	c := w.st.c
	c.wmu.Lock()
	if !w.aborted && !c.dead {
		c.writeHeaderBlock(w.st.id, false, code, w.header, nil)
	}
	c.wmu.Unlock()
	c.kickWriter()
	// The header map stays as it is: it is the handler's, and the final
	// response is sent with it (as net/http does); a handler that wants
	// fields on the 1xx only deletes them after WriteHeader.
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := core.CheckWrite(w.bodyOK, w.cl, w.written, len(p)); err != nil {
		return 0, err
	}
	w.written += int64(len(p))
	if w.head {
		return len(p), nil
	}
	if w.written == w.cl {
		// The last body bytes: nothing more can follow but END_STREAM
		// (and trailers) when the handler returns, so the output waits
		// for that and goes out in one write (see stream.run), as
		// net/http's buffered writer keeps a short body until then.
		w.flushLater = true
	}
	if !w.headerSent && core.Hold(w.cl, len(w.pending), len(p)) {
		w.pending = append(w.pending, p...)
		return len(p), nil
	}
	// No kick for the HEADERS frame: writeData, which follows, has the
	// output sent.
	if err := w.sendHeader(false, false); err != nil {
		return 0, err
	}
	if err := w.writeData(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *responseWriter) WriteString(s string) (int, error) {
	if w.wroteHeader && w.bodyOK && !w.headerSent && !w.head && core.Hold(w.cl, len(w.pending), len(s)) {
		w.written += int64(len(s))
		w.pending = append(w.pending, s...)
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// sendHeader sends the HEADERS frame. final means the handler returned:
// the length is what is pending, and END_STREAM goes with the data. kick
// false leaves having the output sent to the caller (see kickWriter).
func (w *responseWriter) sendHeader(final, kick bool) error {
	if w.headerSent {
		return nil
	}
	w.headerSent = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	h := w.header
	// Length, Content-Type and trailers as both engines decide them; the
	// body goes in DATA frames, its end in END_STREAM.
	_, w.trailers = core.PrepareHead(h, w.coreHead(final), w.trailers)
	end := final && len(w.trailers) == 0 && (len(w.pending) == 0 || w.head || !w.bodyOK)
	c := w.st.c
	c.wmu.Lock()
	if w.aborted || c.dead {
		c.wmu.Unlock()
		return errAborted
	}
	c.writeHeaderBlock(w.st.id, end, w.status, h, w.trailers)
	w.st.body.finalSent = true
	if end {
		w.st.localClosed.Store(true)
	}
	c.wmu.Unlock()
	if kick && !w.flushLater {
		c.kickWriter()
	}
	if len(w.pending) > 0 && !w.head && w.bodyOK {
		p := w.pending
		w.pending = w.pending[:0]
		return w.writeData(p, final && len(w.trailers) == 0)
	}
	return nil
}

// writeData sends p as DATA frames as flow control allows, blocking while
// the windows are closed: until the handler's write deadline, and no
// longer than Limits.Write without progress, after which the stream is
// reset (stall).
func (w *responseWriter) writeData(p []byte, end bool) error {
	st, c := w.st, w.st.c
	stalled := false
	// Runs after the unlock below: the stream is given up (its handler's
	// writes fail from now on, its context is cancelled), and so is a
	// connection on which nothing moved for as long.
	defer func() {
		if stalled {
			c.stallReset(st)
		}
	}()
	alone := c.alone()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for len(p) > 0 || end {
		if w.aborted || c.dead {
			return errAborted
		}
		if len(p) == 0 && c.endLastData(st.id) {
			st.localClosed.Store(true)
			break
		}
		if len(c.out) >= maxQueued && len(p) > 0 {
			if alone && c.wstate.CompareAndSwap(writerIdle, writerRunning) {
				// The connection's only stream sends the output itself
				// (writeInline): no writer goroutine to wake and wait for.
				c.wmu.Unlock()
				c.drain(false)
				c.wmu.Lock()
				continue
			}
			// The connection's output is full: wait for the writer to take
			// it, so a fast handler cannot queue a whole large file (the
			// peer's windows may be huge). The writer's own write deadline
			// bounds this wait.
			c.kickWriterLocked()
			c.wcond.Wait()
			continue
		}
		n := int64(len(p))
		n = min(n, st.sendWindow, c.sendConn, int64(c.peerMaxFrame))
		if n <= 0 && len(p) > 0 {
			dl, stall := w.deadline, false
			if to := c.srv.Limits.WriteTimeout(); to > 0 {
				if w.waitFrom.IsZero() {
					w.waitFrom = time.Now()
				}
				if sd := w.waitFrom.Add(to); dl.IsZero() || sd.Before(dl) {
					dl, stall = sd, true
				}
			}
			if !dl.IsZero() {
				wait := time.Until(dl)
				if wait <= 0 {
					if stall {
						// RFC 9113 section 5.4.2: the stream ends here, not
						// the connection (see stallReset).
						stalled = true
						w.aborted = true
						if !st.localClosed.Load() && !c.dead {
							st.localClosed.Store(true)
							c.fw.WriteRSTStream(st.id, http2.ErrCodeCancel)
							c.noteReset(st.id)
						}
						c.kickWriterLocked()
					}
					return errWriteTimeout
				}
				if timer == nil {
					timer = time.AfterFunc(wait, func() {
						c.wmu.Lock()
						c.wcond.Broadcast()
						c.wmu.Unlock()
					})
				} else {
					timer.Reset(wait)
				}
			}
			// Stalled for lack of either window: a client that keeps the
			// stream windows large but never replenishes the connection's
			// starves every stream as surely (RFC 9113 section 6.9).
			blocked := st.sendWindow <= 0 || c.sendConn <= 0
			if blocked {
				c.stalled++
			}
			if st.inline {
				c.lendNow() // only the reader brings window
			}
			c.kickWriter()
			c.wcond.Wait()
			if blocked {
				c.stalled--
			}
			continue
		}
		last := end && int(n) == len(p)
		c.appendDataLocked(st.id, last, p[:n])
		st.sendWindow -= n
		c.sendConn -= n
		c.streamCredit += n
		p = p[n:]
		if n > 0 {
			w.waitFrom = time.Time{}
			c.lastProgress = time.Now()
		}
		if last {
			st.localClosed.Store(true)
			end = false
		}
		if len(c.out) >= maxQueued && !alone {
			c.kickWriter()
		}
	}
	if alone && len(c.out) >= maxQueued {
		// Sent here rather than by a writer goroutine (see above).
		c.wmu.Unlock()
		c.writeInline()
		c.wmu.Lock()
	} else if !w.flushLater {
		c.kickWriterLocked()
	}
	return nil
}

// alone reports whether the connection has one stream whose handler runs:
// its output has nothing to wait for to go out together.
func (c *conn) alone() bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.active == 1
}

// stallReset finishes a stream reset because it got no window for
// Limits.Write: its context and body end, it is forgotten, and when the
// connection as a whole sent no DATA for as long (or has no window at
// all), the connection is closed too (GOAWAY ENHANCE_YOUR_CALM): none of
// its streams progresses.
func (c *conn) stallReset(st *stream) {
	st.abort(errWriteTimeout)
	c.closeStream(st)
	c.wmu.Lock()
	stuck := c.sendConn <= 0 || time.Since(c.lastProgress) >= c.srv.Limits.WriteTimeout()
	c.wmu.Unlock()
	if stuck {
		c.goAway(http2.ErrCodeEnhanceYourCalm)
		c.closeSoon()
	}
}

var errWriteTimeout = errors.New("h2: write deadline exceeded")

// maxQueued bounds a connection's unsent output, in bytes. The writer
// holds two such buffers while a connection streams (one being sent, one
// being filled). 64 KiB rather than 256: 64 clients downloading a 1 MiB
// file peaked at 41 MB RSS instead of 85-89 MB, for no more CPU per
// request (TLS sends a record, 16 KiB, per write system call either way).
const maxQueued = 64 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// ReadFrom copies src into the response with a pooled buffer (io.Copy would
// allocate 32 KiB per call); a file's bytes are read straight into the
// output instead (sendFile).
//
// A file's bytes come as fast as they are written, so they are not
// handed to the writer a buffer at a time: they are queued until the
// output is full (maxQueued) or the copy ends, and the connection's only
// stream sends them itself (writeInline), 64 KiB per write call, with no
// writer goroutine to wake and wait for. Other sources (a socket, a pipe)
// may pause for long: what they gave is sent at once.
func (w *responseWriter) ReadFrom(src io.Reader) (int64, error) {
	if !isFile(src) {
		bp := copyBufs.Get().(*[]byte)
		defer copyBufs.Put(bp)
		return io.CopyBuffer((*plainWriter)(w), src, *bp)
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	held := w.flushLater
	w.flushLater = true
	var n int64
	var err error
	if f, _ := fileOf(src); w.head || !w.bodyOK || !regular(f) {
		bp := copyBufs.Get().(*[]byte)
		n, err = io.CopyBuffer((*plainWriter)(w), src, *bp)
		copyBufs.Put(bp)
	} else if err = w.sendHeader(false, false); err == nil {
		// Read straight into the output (filesend.go).
		n, err = w.sendFile(src)
	}
	// Complete (Write set flushLater): it goes out when the handler returns.
	w.flushLater = held || w.written == w.cl
	if !w.flushLater {
		if c := w.st.c; c.alone() {
			c.writeInline()
		} else {
			c.kickWriter()
		}
	}
	return n, err
}

// isFile reports whether r reads an *os.File (as io.CopyN's
// LimitedReader does).
func isFile(r io.Reader) bool {
	if l, ok := r.(*io.LimitedReader); ok {
		r = l.R
	}
	_, ok := r.(*os.File)
	return ok
}

// appendDataLocked queues a DATA frame (RFC 9113 section 6.1) straight
// into the output (c.wmu held): x/net's Framer would copy p into a buffer
// of its own first, 20% of the copying of a 1 MiB response.
func (c *conn) appendDataLocked(id uint32, end bool, p []byte) {
	if c.bufs == nil {
		c.acquireOutLocked()
	}
	var flags byte
	if end {
		flags = byte(http2.FlagDataEndStream)
	}
	n := len(p)
	if need := len(c.out) + 9 + n; need > cap(c.out) {
		// Grown once to what a full output takes (maxQueued, then one
		// frame more) rather than by append's steps (16, 21, 40, 57,
		// 72 KiB): 190 KiB of garbage per buffer, which set the peak
		// heap of 64 connections starting 1 MiB downloads.
		out := make([]byte, len(c.out), max(need, maxQueued+9+16<<10))
		copy(out, c.out)
		c.out = out
	}
	c.dataID, c.dataAt = id, len(c.out)
	c.out = append(c.out, byte(n>>16), byte(n>>8), byte(n), byte(http2.FrameData), flags,
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
	c.out = append(c.out, p...)
}

// endLastData sets END_STREAM on stream id's DATA frame when it is the
// last frame of the output still queued (c.wmu held), and reports
// whether it did: a response whose length is known ends with its last
// DATA frame (as nginx sends it) rather than with an empty one after it,
// one frame less for the client to process.
func (c *conn) endLastData(id uint32) bool {
	if c.dataID != id || id == 0 {
		return false
	}
	at := c.dataAt
	if at+9 > len(c.out) || c.out[at+3] != byte(http2.FrameData) {
		return false
	}
	n := int(c.out[at])<<16 | int(c.out[at+1])<<8 | int(c.out[at+2])
	if at+9+n != len(c.out) {
		return false // frames were queued after it
	}
	c.out[at+4] |= byte(http2.FlagDataEndStream)
	c.dataID = 0
	return true
}

// plainWriter is a responseWriter without ReadFrom, which io.CopyBuffer
// would call again; a pointer, so it goes into an io.Writer without an
// allocation (a struct wrapping the writer did, once per ReadFrom).
type plainWriter responseWriter

func (p *plainWriter) Write(b []byte) (int, error) { return (*responseWriter)(p).Write(b) }

func (c *conn) kickWriterLocked() { c.kickWriter() }

// finish completes the response after the handler returned.
func (w *responseWriter) finish() {
	if w.st.localClosed.Load() {
		return
	}
	if !w.headerSent {
		w.sendHeader(true, true)
		if w.st.localClosed.Load() {
			return
		}
	}
	c := w.st.c
	if core.HasTrailers(w.header, w.trailers) {
		c.wmu.Lock()
		if !w.aborted && !c.dead {
			tr := http.Header{}
			core.EachTrailer(w.header, w.trailers, func(name string, v []string) { tr[name] = v })
			c.writeTrailers(w.st.id, tr)
			w.st.localClosed.Store(true)
		}
		c.wmu.Unlock()
		c.kickWriter()
		return
	}
	if core.Short(w.coreHead(true)) {
		// Promised more than written: the client must not take this as
		// complete (RFC 9113 section 8.1.1).
		w.st.resetLocal(http2.ErrCodeProtocol)
		return
	}
	w.writeData(nil, true)
}

// coreHead is the response as package core's rules see it.
func (w *responseWriter) coreHead(final bool) core.Head {
	return core.Head{Status: w.status, BodyOK: w.bodyOK, HEAD: w.head, Final: final, CL: w.cl, Written: w.written, Pending: w.pending}
}

func (w *responseWriter) Flush() { w.FlushError() }

func (w *responseWriter) FlushError() error {
	if err := w.sendHeader(false, true); err != nil {
		return err
	}
	w.st.c.kickWriter()
	return nil
}

// SetWriteDeadline bounds waits for flow-control window.
func (w *responseWriter) SetWriteDeadline(t time.Time) error {
	w.deadline = t
	return nil
}

// SetReadDeadline bounds the handler's waits for the request body; it
// replaces Limits.BodyRead and BodyMinRate for the rest of the request (a
// zero t means no deadline), as over HTTP/1.1.
func (w *responseWriter) SetReadDeadline(t time.Time) error {
	b := &w.st.body
	b.mu.Lock()
	b.deadline, b.fixed = t, true
	b.cond.Broadcast()
	b.mu.Unlock()
	return nil
}

// EnableFullDuplex: HTTP/2 streams are always full duplex.
func (w *responseWriter) EnableFullDuplex() error { return nil }

// Hijack is not possible on an HTTP/2 stream.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, http.ErrNotSupported
}

// connection-specific fields never go into HTTP/2 (RFC 9113 section 8.2.2).
var connectionSpecific = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Transfer-Encoding": true, "Upgrade": true,
}

// writeHeaderBlock encodes a response header block and writes it as
// HEADERS plus CONTINUATION frames. Called with c.wmu held.
func (c *conn) writeHeaderBlock(id uint32, end bool, status int, h http.Header, trailers []string) {
	c.hbuf.Reset()
	// :status first. "200" is the static table's entry 8 (RFC 7541
	// Appendix A), one byte; else, or when the peer's SETTINGS may have left
	// a dynamic table size update pending, through the encoder, which puts
	// that update at the start of the block (RFC 7541 section 4.2).
	if status == 200 && !c.hencSized {
		c.hbuf.WriteByte(0x80 | 8) // indexed field (section 6.1)
	} else {
		c.henc.WriteField(hpack.HeaderField{Name: ":status", Value: statusText(status)})
		c.hencSized = false
	}
	for k, vs := range h {
		if len(vs) == 1 && len(trailers) == 0 {
			// Checked when it was cached (fieldcache.go).
			if enc := cachedEncoding(k, vs[0]); enc != nil {
				c.hbuf.Write(enc)
				continue
			}
		}
		if connectionSpecific[k] || strings.HasPrefix(k, http.TrailerPrefix) || !core.ValidFieldName(k) {
			continue
		}
		skip := false
		for _, t := range trailers {
			if t == k {
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		lk := wire.Lower(k)
		for _, v := range vs {
			cv := core.CleanValue(v)
			if enc := cacheField(k, lk, v, cv); enc != nil {
				c.hbuf.Write(enc)
				continue
			}
			c.henc.WriteField(hpack.HeaderField{Name: lk, Value: cv})
		}
	}
	if _, ok := h["Date"]; !ok {
		d := wire.DateString()
		if enc := cachedEncoding("Date", d); enc != nil {
			c.hbuf.Write(enc)
		} else if enc := cacheField("Date", "date", d, d); enc != nil {
			c.hbuf.Write(enc)
		} else {
			c.henc.WriteField(hpack.HeaderField{Name: "date", Value: d})
		}
	}
	c.writeBlock(id, end)
}

func (c *conn) writeTrailers(id uint32, tr http.Header) {
	c.hbuf.Reset()
	for k, vs := range tr {
		if connectionSpecific[k] || !core.ValidFieldName(k) {
			continue
		}
		lk := wire.Lower(k)
		for _, v := range vs {
			c.henc.WriteField(hpack.HeaderField{Name: lk, Value: core.CleanValue(v)})
		}
	}
	c.writeBlock(id, true)
}

// writeBlock splits c.hbuf into HEADERS and CONTINUATION frames.
func (c *conn) writeBlock(id uint32, end bool) {
	block := c.hbuf.Bytes()
	max := int(c.peerMaxFrameLocked())
	first := block
	if len(first) > max {
		first = first[:max]
	}
	block = block[len(first):]
	c.fw.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: end, EndHeaders: len(block) == 0})
	for len(block) > 0 {
		n := min(len(block), max)
		c.fw.WriteContinuation(id, n == len(block), block[:n])
		block = block[n:]
	}
}

// peerMaxFrameLocked reads the peer's frame size limit; it changes only
// on the reader goroutine, under wmu for writers.
func (c *conn) peerMaxFrameLocked() uint32 { return c.peerMaxFrame }

var statusTexts = func() (t [1000]string) {
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return
}()

func statusText(code int) string {
	if code >= 0 && code < len(statusTexts) {
		return statusTexts[code]
	}
	return strconv.Itoa(code)
}
