package h1

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/monotime"
	"github.com/arkaweb/arka/server/internal/wire"
)

const (
	stateIdle   int32 = iota // kept alive, waiting for the next request's first byte
	stateNew                 // new, waiting for the first request's first byte
	stateHead                // reading a request head
	stateActive              // serving a request
	stateHijacked
)

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4096) }}
)

// tcpConn is what the engine needs of a plain TCP connection beyond
// net.Conn: ReadFrom (sendfile) and CloseWrite. *net.TCPConn has both, as
// do wrappers that delegate to it.
type tcpConn interface {
	net.Conn
	ReadFrom(io.Reader) (int64, error)
	CloseWrite() error
}

// conn is one client connection; everything in it is reused from request
// to request.
type conn struct {
	srv    *Server
	rwc    net.Conn
	tcp    tcpConn         // nil over TLS: no sendfile
	batch  *wire.BatchConn // under TLS, if the server put one there (writeBatched)
	tls    *tls.ConnectionState
	br     *bufio.Reader
	bw     *bufio.Writer
	remote string
	// pre holds the byte that ended an idle wait (waitRequest).
	pre    wire.PrefixReader
	line   []byte          // the request line being parsed, when Server.Rejected is set
	ctx    context.Context // the connection's context: cancelled when it ends
	cancel context.CancelFunc
	state  atomic.Int32
	seq    uint64 // order of acceptance (Server.seq)

	url     url.URL
	header  http.Header
	vals    []string // backing store for single-value header slices
	scratch []byte   // long header lines
	lower   []byte
	keys    []byte  // canonical forms of uncommon field names
	fields  []field // the request head's fields (readRequest)
	prev    string  // the last request's line and field text (readRequest)
	w       response
	memo    fieldMemo // the last response's header fields (response.go)
	body    body
	watch   *watcher // set while a request context is being watched
	// watchX is the request that asked for the watcher, since watchSince
	// (monotime); the server's scanner starts it (ctx.go: startWatch).
	watchX     atomic.Pointer[reqCtx]
	watchSince atomic.Int64
	deadline   time.Time
	// rmu guards the read deadline while a handler runs: its body reads
	// (possibly on another goroutine) arm the body read timeout, and its
	// own deadline (rfixed: set through http.ResponseController, often to
	// cut such a read short) must win. bodyArmed is when the body read
	// timeout was last pushed forward.
	rmu       sync.Mutex
	rfixed    bool
	bodyArmed time.Time
	bodyStart time.Time // the first armBodyRead of the request

	wdeadline time.Time // the write deadline in force
	wfixed    bool      // a handler set the write deadline itself
	// wrote is armWrite's clock reading for the response's last write
	// (zero if it read none): the idle wait that follows starts from it
	// rather than reading the clock again (serve).
	wrote time.Time
	// start is when the request's head began to arrive, in monotime
	// units, if serve read the clock for its header deadline; else 0.
	// The server's dispatch takes it as the request's start
	// (response.RequestStart) instead of reading the clock again.
	start int64

	// tail is a body write that goes out behind the buffered bytes in the
	// same system call (writev): set by response.writeBody for the one
	// flush it makes, consumed by deadlineWriter.Write. iov is the
	// net.Buffers' storage, kept here so that the writev allocates nothing.
	tail  []byte
	tailN int // bytes of tail written
	iov   [2][]byte
	bufs  net.Buffers
}

// deadlineWriter refreshes the connection's write deadline before each
// write, so a client that stops reading is dropped after WriteTimeout
// without a response being limited in total length (nginx's send_timeout).
type deadlineWriter struct{ c *conn }

func (d deadlineWriter) Write(p []byte) (int, error) {
	c := d.c
	c.armWrite()
	if c.tail == nil {
		return c.rwc.Write(p)
	}
	// p is the buffered head (and body start), c.tail the rest of a large
	// body write: both in one writev. It reports the bytes of p written,
	// as bufio.Writer expects; writeBody learns the tail's from tailN.
	c.iov = [2][]byte{p, c.tail}
	c.tail = nil
	c.bufs = c.iov[:]
	n, err := c.writeBuffers()
	c.iov, c.bufs = [2][]byte{}, nil
	c.tailN = int(max(n-int64(len(p)), 0))
	return int(min(n, int64(len(p)))), err
}

// buffersWriter is a wrapper of a *net.TCPConn that passes net.Buffers on
// to it, so that they go out in one writev (net.Buffers.WriteTo uses
// writev only for the net package's own connection types).
type buffersWriter interface {
	WriteBuffers(*net.Buffers) (int64, error)
}

// writeBuffers writes c.bufs: in one writev on a TCP connection (or a
// wrapper that is a buffersWriter), else one write per buffer.
func (c *conn) writeBuffers() (int64, error) {
	if bw, ok := c.rwc.(buffersWriter); ok {
		return bw.WriteBuffers(&c.bufs)
	}
	return c.bufs.WriteTo(c.rwc)
}

// armWrite pushes the write deadline Limits.Write ahead of now before a
// write, unless a handler set its own. The system call is made only once
// the deadline in force is a second (a quarter of a shorter timeout)
// nearer than that.
func (c *conn) armWrite() {
	if to := c.srv.Limits.WriteTimeout(); to > 0 && !c.wfixed {
		now := time.Now()
		c.wrote = now
		if c.wdeadline.Sub(now) < to-min(time.Second, to/4) {
			c.wdeadline = now.Add(to)
			c.rwc.SetWriteDeadline(c.wdeadline)
		}
	}
}

func newConn(s *Server, rw net.Conn, state *tls.ConnectionState) *conn {
	c := &conn{srv: s, rwc: rw, tls: state, remote: rw.RemoteAddr().String()}
	c.pre.R = rw
	c.tcp, _ = rw.(tcpConn)
	if tc, ok := rw.(*tls.Conn); ok {
		c.batch, _ = tc.NetConn().(*wire.BatchConn)
	}
	base := s.BaseContext
	if base == nil {
		base = context.Background()
	}
	base = context.WithValue(base, http.LocalAddrContextKey, rw.LocalAddr())
	c.ctx, c.cancel = context.WithCancel(base)
	c.header = make(http.Header, 16)
	c.vals = make([]string, 0, 32)
	// Eight fields fit a map's single group, which clear (once per
	// response: response.reset) empties with one memclr; a hint of 16 made
	// a table of four groups, each cleared apart, and a static page's
	// answer sets seven or eight fields. More fields grow it as usual.
	c.w.header = make(http.Header, 8)
	return c
}

func (c *conn) serve() {
	c.br = readerPool.Get().(*bufio.Reader)
	c.br.Reset(c.rwc)
	c.acquireWriter()
	defer func() {
		p := recover()
		if p != nil && p != http.ErrAbortHandler {
			buf := make([]byte, 16<<10)
			buf = buf[:runtime.Stack(buf, false)]
			c.srv.logger().Error("panic serving", "remote", c.remote, "panic", p, "stack", string(buf))
		}
		if p == http.ErrAbortHandler && c.state.Load() == stateActive {
			c.w.sendCut()
		}
		c.cancel()
		c.watchX.Store(nil)
		if c.state.Load() != stateHijacked {
			c.rwc.Close()
			c.br.Reset(nil)
			readerPool.Put(c.br)
			c.releaseWriter()
		}
	}()
	for first := true; ; first = false {
		if first {
			c.state.Store(stateNew)
		} else {
			c.state.Store(stateIdle)
		}
		if c.srv.closing.Load() {
			return
		}
		if c.br.Buffered() == 0 {
			// A new connection gets the header timeout for its first
			// request (nginx's client_header_timeout), a kept-alive one
			// the idle timeout.
			wait := c.srv.Limits.IdleTimeout()
			rht := c.srv.Limits.ReadHeaderTimeout()
			if first && rht > 0 && (wait <= 0 || rht < wait) {
				wait = rht
			}
			// The wait is first given the header timeout only, if that is
			// shorter, and the rest of the idle timeout once that passes
			// without a byte: the head that follows then mostly finds the
			// read deadline it needs already set (within a second), where
			// switching between the idle and the header deadline cost two
			// timer updates per request over TLS (3 % of the CPU profile).
			// The response's write just read the clock (armWrite):
			// microseconds ago, within what a deadline needs.
			start := c.wrote
			if start.IsZero() {
				start = time.Now()
			}
			part := wait
			if rht > 0 && rht < wait {
				part = rht
			}
			if wait > 0 {
				c.setReadDeadline(start.Add(part))
			}
			// An idle keep-alive connection holds no write buffer: on a
			// small board thousands of them would otherwise hold megabytes.
			c.releaseWriter()
			err := c.waitRequest()
			if err != nil && part < wait && isTimeout(err) && c.br.Buffered() == 0 && !c.srv.closing.Load() {
				c.deadline = start.Add(wait) // exactly: the first part may have ended early
				c.rwc.SetReadDeadline(c.deadline)
				err = c.waitRequest()
			}
			c.acquireWriter()
			if err != nil {
				return
			}
		}
		c.state.Store(stateHead)
		c.start = 0
		if rht := c.srv.Limits.ReadHeaderTimeout(); rht > 0 && !c.headerBuffered() {
			now := time.Now()
			c.start = monotime.Of(now)
			c.setReadDeadline(now.Add(rht))
		}
		req, err := c.readRequest()
		if err != nil {
			c.state.Store(stateActive) // the error answer is written
			c.writeError(err)
			return
		}
		c.state.Store(stateActive)
		if req.Body != http.NoBody {
			// Bodies are read at the handler's pace (it may set its own
			// deadlines through http.ResponseController).
			c.setReadDeadline(time.Time{})
		}
		if c.bw.Buffered() > 0 {
			// The answer to the previous, pipelined request was held
			// while this head was read (see the flush below); it goes
			// out before this handler runs, which may wait (for its
			// body, PHP, an upstream) as long as it likes.
			if err := c.bw.Flush(); err != nil {
				return
			}
		}
		c.w.reset(c, req)
		c.rfixed = false
		c.bodyArmed = time.Time{}
		c.srv.Handler.ServeHTTP(&c.w, req)
		if c.state.Load() == stateHijacked {
			return
		}
		if !c.w.wroteHeader && c.w.ctx.Err() != nil {
			// The client ended its side while the handler ran (the
			// watcher read its FIN or TLS close_notify) and nothing was
			// answered: logged 499, so no default 200 either, which a
			// client that only half-closed could still read. (The
			// watcher ends the request's context before the
			// connection's: test the one the handler saw.)
			c.stopWatch()
			return
		}
		c.w.finish()
		c.stopWatch()
		// A handler deadline or a body read set the read deadline directly:
		// the next setReadDeadline must not trust the cache. (Their
		// goroutines have ended with the handler: no lock needed.)
		if c.rfixed || !c.bodyArmed.IsZero() {
			c.deadline = unknownDeadline
		}
		if c.wfixed {
			c.wfixed = false
			c.wdeadline = time.Time{}
			c.rwc.SetWriteDeadline(time.Time{})
		}
		if !c.w.closeAfter && c.body.mustWait() {
			// The answer goes out before the unread rest of the body is
			// discarded: that may wait up to two seconds for the client.
			if err := c.bw.Flush(); err != nil {
				return
			}
		}
		if c.w.closeAfter || !c.body.discard(maxDiscard) {
			c.closeWrite() // flushes c.bw
			return
		}
		// The answer waits in c.bw only while the next request's whole
		// head is already here: reading it then cannot wait, and the
		// answer goes out before that request's handler runs (above).
		// Anything less (nothing, a stray CRLF after a body, which RFC
		// 9112 section 2.2 says to ignore, or the first bytes of a head)
		// means the next read may wait for the client, which may be
		// waiting for this answer.
		if !c.headerBuffered() {
			c.wrote = time.Time{}
			if err := c.bw.Flush(); err != nil {
				return
			}
		}
	}
}

// waitRequest waits for the first byte of the next request. Over TLS the
// read buffer goes back to readerPool meanwhile, so an idle keep-alive
// connection holds only its TLS state: the byte is read alone (the rest of
// its record is then already decrypted, so no system call is added) and a
// pooled reader reads on from it. Over plain TCP it peeks: reading one byte
// alone there would cost a second read system call per request.
func (c *conn) waitRequest() error {
	if c.tls == nil {
		_, err := c.br.Peek(1)
		return err
	}
	c.br.Reset(nil)
	readerPool.Put(c.br)
	c.br = nil // no longer ours until the wait ends
	err := c.pre.Fill()
	c.br = readerPool.Get().(*bufio.Reader)
	c.br.Reset(&c.pre)
	return err
}

func (c *conn) acquireWriter() {
	if c.bw == nil {
		c.bw = writerPool.Get().(*bufio.Writer)
		c.bw.Reset(deadlineWriter{c})
	}
}

func (c *conn) releaseWriter() {
	if c.bw != nil && c.bw.Buffered() == 0 {
		c.bw.Reset(nil)
		writerPool.Put(c.bw)
		c.bw = nil
	}
}

// unknownDeadline marks c.deadline as not known (see serve).
var unknownDeadline = time.Unix(3, 0)

// armBodyRead sets the read deadline before a body read that will wait
// for the client, at most once a second (or an eighth of the timeout, if
// shorter), unless the handler set its own:
// Limits.BodyRead of silence, and no later than the minimum rate allows
// for the received bytes (limits.Limits.BodyDeadline).
func (c *conn) armBodyRead(received int64) {
	to := c.srv.Limits.BodyReadTimeout()
	if to <= 0 {
		return
	}
	c.rmu.Lock()
	if !c.rfixed {
		if now := time.Now(); now.Sub(c.bodyArmed) >= min(time.Second, to/8) {
			if c.bodyArmed.IsZero() {
				c.bodyStart = now
			}
			c.bodyArmed = now
			c.rwc.SetReadDeadline(c.srv.Limits.BodyDeadline(c.bodyStart, now, received))
		}
	}
	c.rmu.Unlock()
}

// setReadDeadline sets the read deadline unless it is already within a
// second of t (timers are not free).
func (c *conn) setReadDeadline(t time.Time) {
	if t.IsZero() {
		if !c.deadline.IsZero() {
			c.deadline = t
			c.rwc.SetReadDeadline(t)
		}
		return
	}
	if d := t.Sub(c.deadline); d < time.Second && d > -time.Second {
		return
	}
	c.deadline = t
	c.rwc.SetReadDeadline(t)
}

// headerBuffered reports whether a whole header section is already in the
// read buffer (then no header timeout is needed).
func (c *conn) headerBuffered() bool {
	n := c.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := c.br.Peek(n)
	// The empty line that ends the head: CRLF, or a bare LF (RFC 9112
	// section 2.2). bytes.Contains runs vectorised: scanning a browser's
	// head of 500 bytes a byte at a time was up to a tenth of the engine's
	// time per request (BenchmarkRequestBrowser).
	return bytes.Contains(b, crlfCRLF[1:]) || bytes.Contains(b, lfLF)
}

var crlfCRLF, lfLF = []byte("\r\n\r\n"), []byte("\n\n")

// closeBufSize fits a full write buffer (4 KiB) sealed as TLS records and
// the close_notify alert: the buffers closeWrite gathers them in.
const closeBufSize = 4096 + 512

var closeBufs = sync.Pool{New: func() any { b := make([]byte, 0, closeBufSize); return &b }}

// closeWrite half-closes the connection so the client reads our last
// response before it sees the close, as RFC 9112 section 9.6 advises.
// Over TLS too (tls.Conn's CloseWrite sends close_notify): without the
// drain, closing a socket with unread request bytes makes the kernel send
// a reset, and a client still writing (a 431 for an oversized header)
// sees "broken pipe" instead of our answer.
//
// It flushes what the write buffer holds first. Over TLS the last records
// of the response and the close_notify alert go out in one write, gathered
// under the TLS connection (wire.BatchConn), where crypto/tls would write
// each on its own: a new TLS connection per request (Connection: close)
// then costs two writes, the server's handshake flight and the answer,
// instead of three.
func (c *conn) closeWrite() {
	cw, ok := c.rwc.(interface{ CloseWrite() error })
	if !ok {
		if c.bw != nil {
			c.bw.Flush()
		}
		return
	}
	var batch *wire.BatchConn
	if tc, ok := c.rwc.(*tls.Conn); ok {
		batch, _ = tc.NetConn().(*wire.BatchConn)
	}
	if batch != nil {
		bp := closeBufs.Get().(*[]byte)
		batch.Hold(*bp)
		if c.bw != nil {
			c.bw.Flush()
		}
		cw.CloseWrite()
		// crypto/tls ends CloseWrite with a write deadline of now, so
		// that later writes fail: the gathered records get the 5 s it
		// gives the alert, then the same end.
		batch.SetWriteDeadline(time.Now().Add(5 * time.Second))
		b, _ := batch.Flush()
		batch.SetWriteDeadline(time.Now())
		if cap(b) <= 2*closeBufSize {
			*bp = b[:0]
			closeBufs.Put(bp)
		}
	} else {
		if c.bw != nil {
			c.bw.Flush()
		}
		cw.CloseWrite()
	}
	c.rwc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	io.CopyN(io.Discard, c.rwc, 256<<10)
}

// writeError answers a request that could not be parsed, then the
// connection closes. Timeouts and closed connections get no answer.
func (c *conn) writeError(err error) {
	var pe *parseError
	if !errors.As(err, &pe) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && c.br.Buffered() > 0 {
			pe = &parseError{http.StatusRequestTimeout, "request header read timeout"}
		} else {
			return
		}
	}
	// The same HTML page as every handler's errors (package errpage); the
	// cause (pe.msg) is not shown, as no error page shows internals.
	body := errpage.Page(pe.status)
	c.rwc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	c.bw.WriteString("HTTP/1.1 " + strconv.Itoa(pe.status) + " " + wire.StatusText(pe.status) +
		"\r\nDate: " + wire.DateString() + // RFC 9110 section 6.6.1: on every 4xx
		"\r\nContent-Type: " + errpage.ContentType + "\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n")
	c.bw.Write(body)
	c.bw.Flush()
	if c.srv.Rejected != nil {
		r := &http.Request{RemoteAddr: c.remote, TLS: c.tls, Header: http.Header{}}
		r.Method, r.RequestURI, r.Proto = splitLine(string(c.line))
		c.srv.Rejected(r, pe.status, int64(len(body)))
	}
	c.closeWrite()
}

// maxLoggedLine bounds the part of a request line kept for Rejected.
const maxLoggedLine = 512

// splitLine splits a request line, however malformed, into method,
// target and protocol at its first two spaces.
func splitLine(l string) (method, target, proto string) {
	method, rest, _ := strings.Cut(l, " ")
	target, proto, _ = strings.Cut(rest, " ")
	return method, target, proto
}

// send100 answers Expect: 100-continue when the handler starts reading.
func (c *conn) send100() {
	if c.w.wroteHeader {
		return
	}
	c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	c.bw.Flush()
}

// readRequest parses one request (RFC 9112 sections 2-7).
func (c *conn) readRequest() (*http.Request, error) {
	max := c.srv.Limits.MaxHeaderBytes()
	var line []byte
	var err error
	c.line = c.line[:0]
	for skipped := 0; ; skipped++ {
		line, err = readLineInto(c.br, max, &c.scratch)
		if err == errHeaderTooLarge {
			return nil, errURITooLong
		}
		if err != nil {
			return nil, err
		}
		// RFC 9112 section 2.2: ignore empty lines before the request-line.
		if len(line) > 0 || skipped > 4 {
			break
		}
	}
	total := len(line)
	if c.srv.Rejected != nil {
		// For Rejected, if the request is refused; cut, so that a
		// connection holds little for it.
		c.line = append(c.line, line[:min(len(line), maxLoggedLine)]...)
	}
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return nil, badRequest("malformed request line")
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 < 0 {
		return nil, badRequest("malformed request line")
	}
	method, target, version := line[:sp1], rest[:sp2], rest[sp2+1:]
	for _, ch := range method {
		if !tokenChar[ch] {
			return nil, badRequest("malformed method")
		}
	}
	if !targetOK(target) {
		return nil, badRequest("malformed request target")
	}
	var major, minor int
	switch {
	case string(version) == "HTTP/1.1":
		major, minor = 1, 1
	case string(version) == "HTTP/1.0":
		major, minor = 1, 0
	case len(version) == 8 && string(version[:5]) == "HTTP/" && version[6] == '.' &&
		'0' <= version[5] && version[5] <= '9' && '0' <= version[7] && version[7] <= '9':
		if version[5] != '1' {
			return nil, errVersion
		}
		major, minor = 1, int(version[7]-'0')
	default:
		return nil, badRequest("malformed HTTP version")
	}

	// One allocation holds the request line's strings and every field
	// value; field names are constants or slices of it too.
	buf := append(c.keys[:0], method...)
	buf = append(buf, target...)
	mEnd, tEnd := len(method), len(method)+len(target)
	// The field positions go in a slice of the connection: a [32]field
	// array on the stack was 1.5 KB to zero for every request (a tenth of
	// readRequest's own time in perf annotate under wrk).
	fields := c.fields[:0]
	for {
		line, err = readLineInto(c.br, max, &c.scratch)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			break
		}
		total += len(line) + 2
		if total > max {
			return nil, errHeaderTooLarge
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, badRequest("obsolete line folding") // RFC 9112 section 5.2
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return nil, badRequest("malformed header field")
		}
		name := line[:colon]
		for _, ch := range name {
			if !tokenChar[ch] {
				return nil, badRequest("malformed header field name")
			}
		}
		v := line[colon+1:]
		for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
			v = v[1:]
		}
		for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
			v = v[:len(v)-1]
		}
		if !fieldValueOK(v) {
			return nil, badRequest("invalid character in header field value")
		}
		var f field
		if len(name) == 4 && wire.EqualFoldASCII(name, "host") {
			f.key = "Host" // in every request: no map lookup
		} else {
			f.key, buf, f.ks, f.ke = canonicalKey(name, &c.lower, buf)
		}
		f.vs = len(buf)
		buf = append(buf, v...)
		f.ve = len(buf)
		fields = append(fields, f)
	}
	c.keys = buf[:0]
	if cap(fields) <= maxKeptFields {
		c.fields = fields[:0]
	} else {
		c.fields = nil // a head of many fields: not held while idle
	}
	// A keep-alive client usually repeats its request byte for byte (a
	// load generator, a monitor, an API client polling): the previous
	// request's string is then shared, as strings are immutable, instead
	// of allocated again. The connection holds it until the next request
	// anyway, through its header map.
	all := c.prev
	if string(buf) != all {
		all = string(buf)
		c.prev = all
	}

	// The request and its context in one allocation (WithContext's copy
	// stays on the stack): each request still gets objects of its own,
	// which a handler may keep. The copy is of the new, zeroed request,
	// just allocated and so in the cache, where copying a template kept in
	// the connection read its cold memory for every request.
	st := &reqState{x: reqCtx{parent: c.ctx, c: c}}
	x, r := &st.x, &st.r
	*r = *r.WithContext(x)
	c.w.ctx = x
	r.Method = all[:mEnd]
	r.RequestURI = all[mEnd:tEnd]
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", major, minor
	if minor == 0 {
		r.Proto = "HTTP/1.0"
	}
	r.RemoteAddr = c.remote
	r.TLS = c.tls
	clear(c.header)
	c.vals = c.vals[:0]
	h := c.header
	// Host is kept out of the map (net/http leaves it out too): adding it
	// only to delete it below cost a tenth of the parse.
	var hostArr [1]string
	hosts := hostArr[:0]
	for _, f := range fields {
		k := f.key
		if k == "" {
			k = all[f.ks:f.ke]
		}
		v := all[f.vs:f.ve]
		if k == "Host" {
			hosts = append(hosts, v)
			continue
		}
		if old, ok := h[k]; ok {
			h[k] = append(old, v)
			continue
		}
		if len(c.vals) < cap(c.vals) {
			i := len(c.vals)
			c.vals = append(c.vals, v)
			h[k] = c.vals[i : i+1 : i+1]
		} else {
			h[k] = []string{v}
		}
	}
	r.Header = h

	host, path, rawQuery, err := splitTarget(r.Method, r.RequestURI)
	if err != nil {
		return nil, err
	}
	c.url = url.URL{RawQuery: rawQuery}
	u := &c.url
	switch {
	case r.Method == http.MethodConnect:
		u.Host = host
	case path == "*":
		u.Path = "*"
	default:
		if err := setPath(u, path); err != nil {
			return nil, err
		}
	}
	r.URL = u

	// Host (RFC 9112 section 3.2): required in HTTP/1.1, exactly once; the
	// absolute-form's authority wins over the field.
	switch {
	case len(hosts) > 1:
		return nil, badRequest("more than one Host field")
	case len(hosts) == 0 && minor >= 1 && host == "":
		return nil, badRequest("missing Host field")
	case len(hosts) == 1 && !wire.ValidHost(hosts[0]):
		return nil, badRequest("malformed Host field")
	}
	if host != "" {
		if !wire.ValidHost(host) {
			return nil, badRequest("malformed host in request target")
		}
		r.Host = host
	} else if len(hosts) == 1 {
		r.Host = hosts[0]
	}

	// Message body length (RFC 9112 section 6.3).
	te, cl := h["Transfer-Encoding"], h["Content-Length"]
	chunked := false
	var n int64
	switch {
	case len(te) > 0:
		if minor == 0 {
			return nil, badRequest("Transfer-Encoding in an HTTP/1.0 request")
		}
		if len(cl) > 0 {
			return nil, badRequest("both Transfer-Encoding and Content-Length")
		}
		if len(te) != 1 || !strings.EqualFold(strings.TrimSpace(te[0]), "chunked") {
			if strings.HasSuffix(strings.ToLower(strings.TrimSpace(te[len(te)-1])), "chunked") {
				return nil, errTECoding
			}
			return nil, badRequest("chunked is not the final transfer coding")
		}
		chunked = true
		n = -1
		delete(h, "Transfer-Encoding")
	case len(cl) > 0:
		v, err := parseContentLength(cl)
		if err != nil {
			return nil, err
		}
		n = v
	}
	r.ContentLength = n
	if chunked {
		r.TransferEncoding = chunkedTE
		r.Trailer = wire.DeclaredTrailer(h["Trailer"])
	}
	if n == 0 && !chunked {
		r.Body = http.NoBody
		c.body.reset(c, r, 0, false, false)
	} else {
		expect := false
		if e := h["Expect"]; len(e) == 1 && strings.EqualFold(e[0], "100-continue") {
			// RFC 9110 section 10.1.1: ignored in an HTTP/1.0 request.
			expect = minor >= 1
		} else if len(e) > 0 {
			return nil, &parseError{http.StatusExpectationFailed, "unsupported expectation"}
		}
		c.body.reset(c, r, n, chunked, expect)
		r.Body = &c.body
	}
	r.Close = wantsClose(r)
	return r, nil
}

// maxKeptFields bounds the field slice a connection keeps between
// requests (48 bytes a field).
const maxKeptFields = 64

// field is a request head's field line in readRequest's buffer.
type field struct {
	key    string
	ks, ke int // canonical key in buf when key == ""
	vs, ve int // value in buf
}

// reqState is what readRequest allocates for each request.
type reqState struct {
	x reqCtx
	r http.Request
}

var chunkedTE = []string{"chunked"}

func parseContentLength(vals []string) (int64, error) {
	n, err := wire.ParseContentLength(vals)
	if err != nil {
		return 0, badRequest(err.Error())
	}
	return n, nil
}

// wantsClose reports whether the connection ends after this request
// (RFC 9112 section 9.3): "Connection: close", or HTTP/1.0 without
// "Connection: keep-alive".
func wantsClose(r *http.Request) bool {
	conn := r.Header["Connection"]
	if r.ProtoMinor == 0 {
		return !wire.HasToken(conn, "keep-alive")
	}
	return wire.HasToken(conn, "close")
}
