package fastcgi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/internal/fcgi"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/limits"
	"github.com/arkaweb/arka/server/internal/monotime"
	"github.com/arkaweb/arka/server/internal/spool"
	"github.com/arkaweb/arka/server/internal/wire"
)

// exchange is one request on one connection: send, read the answer,
// stream it to the client.
type exchange struct {
	h    *Handler
	w    http.ResponseWriter
	r    *http.Request
	rb   *reqBuf
	body reqBody
	t    target
	c    *conn

	stdinDone chan struct{} // closed when the body goroutine ends
	stdinErr  error         // its error, read after stdinDone
	// clientBody is set when the client's body failed mid-way: the script
	// got a truncated STDIN, so its answer is not forwarded.
	clientBody atomic.Bool
	// cut is set when attempt cut the reading of the client's body short
	// (the answer, or the end of the connection, came first) while the
	// client was still there: a read error then is not the client's, and
	// its request context may be canceled by it (net/http does).
	cut atomic.Bool

	gotBytes bool // any byte of an answer arrived: the request ran
	// wroteHeader is set once the script's CGI header is parsed and its
	// fields are in the response header; headerSent once WriteHeader is
	// called (at the first emit).
	wroteHeader bool
	headerSent  bool
	status      int
	bodyAllowed bool
	clientGone  bool // a write to the client failed
	// out holds body bytes not yet given to the client (see emit), in
	// rb.out.
	out []byte
	// ended is set when END_REQUEST came: the rest of x.out is given to
	// the client after the connection is released (see finish).
	ended bool
	// resp is the response buffer (response_buffering), made when body
	// bytes must go out before the script has ended; buffered says
	// whether this response is buffered (spool.Buffering).
	resp     *spool.Response
	buffered bool
	// vals is the backing array of the response's single-valued header
	// fields (see setField).
	vals []string
	// bodyLeft is what remains of the Content-Length the script declared,
	// -1 if it declared none; overLength is set once it wrote more.
	bodyLeft   int64
	overLength bool
	stderrRecs int
	end        fcgi.EndRequest
	endBuf     [8]byte
}

// Errors of a request, with the status the client gets if no header has
// been sent yet.
var (
	errNoOutput      = errors.New("script ended without a response")
	errHeaderNoEnd   = errors.New("script output ended inside the CGI header")
	errEndLength     = errors.New("END_REQUEST record of wrong length")
	errUnexpectedEnd = errors.New("connection closed before END_REQUEST")
)

type protoError struct{ msg string }

func (e *protoError) Error() string { return "protocol error: " + e.msg }

type endError struct{ end fcgi.EndRequest }

func (e *endError) Error() string {
	names := [...]string{"request complete", "cannot multiplex", "overloaded", "unknown role"}
	s := fmt.Sprintf("protocol status %d", e.end.ProtocolStatus)
	if int(e.end.ProtocolStatus) < len(names) {
		s = names[e.end.ProtocolStatus]
	}
	return "FastCGI server refused the request: " + s
}

// run sends the request on c, retrying once on a fresh connection when a
// kept connection turns out to be stale, and releases the connection.
//
// A request is sent again only when php-fpm provably did not run it: the
// request could not be written, or the peer is a worker draining a
// connection it gave up (see peerDraining). A kept connection that ends
// without an answer after the request was sent is otherwise the worker
// dying under the request (a crash, kill -9, a segfaulting extension):
// that is 502 at once, whatever the method, as for a new connection.
// Sending it again would run the script twice, and a slow script would
// then end in a 504 after read_timeout rather than the 502 it is.
func (x *exchange) run(c *conn) {
	h := x.h
	ctx := x.r.Context()
	for attempt := 0; ; attempt++ {
		// A kept connection is checked first (one non-blocking peek): php-fpm
		// closes kept connections while they are idle (pm.max_requests, a
		// restart, process_idle_timeout), and over TCP a request written to
		// a connection whose peer is gone cannot be told afterwards from one
		// whose worker died running it. Over a unix socket it can, at once
		// and for the price of the request's write (EPIPE from a process
		// gone, or EOF and a probe accepted from a worker draining, see
		// below), so a request that can be sent again skips the peek: one
		// system call less per request.
		if c.reused && (h.network != "unix" || x.body.kind == bodyStream) && c.peek.peerClosed() {
			h.redialed.Add(1)
			nc, err := h.pool.redial(ctx, c)
			if err != nil {
				x.finish(nil, err, http.StatusBadGateway)
				return
			}
			c = nc
		}
		x.c = c
		sent, err := x.attempt()
		// A kept connection that fails before any answer was stale if
		// php-fpm closed it (pm.max_requests, a restart) without running
		// the request: nothing was written, or the peer is a php-fpm worker
		// still draining a connection it gave up after its previous
		// request, which discards what it reads (see peerDraining). The
		// peek above catches most such connections; this is the race where
		// php-fpm's close arrives just after the peek. The body must be
		// sendable again (not a stream already read from the client).
		replayable := x.body.kind != bodyStream
		stale := err != nil && c.reused && attempt == 0 && !x.gotBytes && !x.wroteHeader &&
			ctx.Err() == nil && !isTimeout(err) &&
			(!sent || replayable && err == errUnexpectedEnd && c.peerDraining(h.network == "tcp"))
		if stale && x.body.kind == bodyFile {
			if _, serr := x.body.file.Seek(0, io.SeekStart); serr != nil {
				stale = false
			}
		}
		if stale {
			h.redialed.Add(1)
			nc, derr := h.pool.redial(ctx, c)
			if derr != nil {
				x.finish(nil, fmt.Errorf("%v; reconnecting: %w", err, derr), http.StatusBadGateway)
				return
			}
			c = nc
			continue
		}
		x.finish(c, err, statusFor(err))
		return
	}
}

func statusFor(err error) int {
	if err == nil {
		return 0
	}
	if isTimeout(err) {
		return http.StatusGatewayTimeout
	}
	if ee, ok := err.(*endError); ok && ee.end.ProtocolStatus == fcgi.StatusOverloaded {
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// attempt sends the request and reads the answer. sent reports whether
// the request head was written.
func (x *exchange) attempt() (sent bool, err error) {
	c := x.c
	streaming := x.body.kind == bodyStream || x.body.kind == bodyFile
	x.gotBytes = false
	now := monotime.Now()
	if at := c.armed.Load(); !streaming && at > 0 && !c.short && c.timeout == x.h.readTimeout &&
		now-at <= int64(c.timeout/8) {
		// The deadlines the previous request set, read_timeout ahead,
		// were set less than an eighth of read_timeout ago: they stand,
		// as conn.Read leaves them while output keeps coming, and Read
		// pushes them forward as usual (or, should they pass before
		// read_timeout of silence from now, sets the read deadline to
		// its end). On a busy connection this spares two deadline
		// changes per request (the runtime's timers).
		c.heard = now
	} else {
		c.timeout = x.h.readTimeout
		c.until, c.short = time.Now().Add(c.timeout), false
		c.nc.SetDeadline(c.until)
		if streaming {
			// No read timeout until the body is sent: an upload may take
			// longer than read_timeout. Writes have their own deadline.
			c.armed.Store(0)
			c.nc.SetReadDeadline(time.Time{})
		} else {
			c.heard = now
			c.armed.Store(now)
		}
	}
	var stop func() bool
	if streaming || c.br.Buffered() > 0 {
		if _, err := c.nc.Write(x.rb.w); err != nil {
			return false, fmt.Errorf("send request: %w", err)
		}
		if streaming {
			x.stdinDone = make(chan struct{})
			go x.sendStdin()
		}
		stop = wire.AfterFunc(x.r.Context(), c.abortFn)
	} else {
		// The whole request is in rb.w: send it and wait for the answer
		// without the failing read Go's net package would make first
		// (writeReq watches for the client leaving once it is sent).
		c.req, c.reqCtx = x.rb.w, x.r.Context()
		werr := c.send.Send()
		stop = c.stop
		c.req, c.reqCtx, c.stop = nil, nil, nil
		if werr != nil {
			return false, fmt.Errorf("send request: %w", werr)
		}
	}
	c.held = x
	err = x.readResponse()
	c.held = nil
	if !stop() {
		// The client left: ABORT_REQUEST is sent or being sent, after
		// which php-fpm closes the connection.
		c.aborted.Store(true)
		x.h.aborted.Add(1)
	}
	if streaming {
		select {
		case <-x.stdinDone:
		default:
			// The script answered before its body was sent. The body
			// goroutine may be writing to the connection or reading the
			// client: close one, and cut the other's read short.
			c.aborted.Store(true)
			c.close()
			if x.r.Context().Err() == nil {
				x.cut.Store(true)
			}
			http.NewResponseController(x.w).SetReadDeadline(time.Now())
			<-x.stdinDone
		}
	}
	return true, err
}

// finish releases the connection and reports err to the client and the
// log.
func (x *exchange) finish(c *conn, err error, status int) {
	h := x.h
	if c != nil {
		reusable := err == nil && c.clean() && x.stdinErr == nil
		if reusable {
			c.reused = true
		}
		h.pool.release(c, reusable)
	}
	// The worker is free from here on; the client gets the rest of the
	// response (from the response buffer, however slowly it reads) before
	// the handler returns, also when it returns by panicking.
	defer x.endResponse()
	if err == nil && x.ended && !x.clientBody.Load() {
		x.emit(true, false)
		return
	}
	if err != nil && x.headerSent && len(x.out) > 0 {
		// The response is under way and will be cut off below: pass on
		// what the script wrote before it failed.
		x.emit(false, true)
	}
	ctx := x.r.Context()
	if x.clientBody.Load() && !x.wroteHeader {
		// The client's body failed before the script answered, so the
		// answer (to a truncated body) was dropped.
		var mbe *http.MaxBytesError
		switch {
		case errors.As(x.stdinErr, &mbe):
			errpage.Write(x.w, x.r, http.StatusRequestEntityTooLarge)
		case ctx.Err() == nil && os.IsTimeout(x.stdinErr):
			errpage.Write(x.w, x.r, http.StatusRequestTimeout)
		case ctx.Err() == nil && wire.ClientGone(x.stdinErr):
			// The client closed its connection mid-upload: nobody to
			// answer (logged 499).
			panic(http.ErrAbortHandler)
		case ctx.Err() == nil:
			errpage.Write(x.w, x.r, http.StatusBadRequest)
		}
		return
	}
	if err == nil {
		return
	}
	if ctx.Err() != nil && !x.cut.Load() {
		return // the client is gone: nobody to tell, and not the server's fault
	}
	h.errs.Add(1)
	msg := err.Error()
	if isTimeout(err) {
		msg = fmt.Sprintf("no output from the script within read_timeout %v", h.readTimeout)
	}
	h.elog.Write(slog.LevelError, "fastcgi: "+msg, "script", x.t.scriptName)
	if !x.headerSent {
		// Nothing reached the client yet (the script's header may have
		// been parsed, its output held): a clean error page, without the
		// script's header fields.
		if x.wroteHeader {
			clear(x.w.Header())
		}
		if status == http.StatusServiceUnavailable {
			x.w.Header().Set("Retry-After", retryAfter)
		}
		errpage.Write(x.w, x.r, status)
		return
	}
	// The response is partly sent: cut it off, so the client sees a
	// truncated response rather than a complete-looking one.
	panic(http.ErrAbortHandler)
}

// readResponse reads records until END_REQUEST, writing STDOUT to the
// client as it comes.
func (x *exchange) readResponse() error {
	rd := &x.c.rd
	hb := x.rb.hdr[:0]
	defer func() { x.rb.hdr = hb[:0] }()
	headerDone := false
	for {
		hd, err := rd.Next()
		if err != nil {
			if err == io.EOF {
				return errUnexpectedEnd
			}
			return err
		}
		x.gotBytes = true
		if hd.RequestID != 1 {
			if hd.RequestID == 0 {
				continue // a management record: not ours, skipped
			}
			return &protoError{fmt.Sprintf("%s record for request id %d", fcgi.TypeName(hd.Type), hd.RequestID)}
		}
		switch hd.Type {
		case fcgi.TypeStdout:
			for rd.Remaining() > 0 {
				p, err := rd.Peek()
				if err != nil {
					return err
				}
				if headerDone {
					x.writeBody(p)
					rd.Discard(len(p))
					continue
				}
				if len(hb) == 0 {
					// The usual case: the whole CGI header is in the first
					// piece read (php-fpm sends it with the start of the
					// body, up to 8 KiB). It is parsed where it lies, and
					// the body bytes after it are copied once, to the
					// output (appending the piece to hb first copied them
					// twice: 1.1% of Arka's CPU on the 25 KB page).
					if n := headerEnd(p); n >= 0 {
						headerDone = true
						if err := x.writeHeader(p[:n]); err != nil {
							return err
						}
						x.writeBody(p[n:])
						rd.Discard(len(p))
						continue
					}
				}
				hb = append(hb, p...)
				rd.Discard(len(p))
				if n := headerEnd(hb); n >= 0 {
					headerDone = true
					if err := x.writeHeader(hb[:n]); err != nil {
						return err
					}
					x.writeBody(hb[n:])
				} else if len(hb) > maxHeaderBytes {
					return errHeaderTooLarge
				}
			}
		case fcgi.TypeStderr:
			if err := x.stderr(); err != nil {
				return err
			}
		case fcgi.TypeEndRequest:
			if hd.ContentLength != 8 {
				return errEndLength
			}
			if _, err := rd.ReadContent(x.endBuf[:]); err != nil {
				return err
			}
			if err := rd.Skip(); err != nil {
				return err
			}
			x.end, _ = fcgi.ParseEndRequest(x.endBuf[:])
			if x.end.ProtocolStatus != fcgi.StatusRequestComplete {
				return &endError{x.end}
			}
			if !headerDone {
				if len(hb) == 0 {
					return errNoOutput
				}
				return errHeaderNoEnd
			}
			x.ended = true // the rest goes out after the release (finish)
			return nil
		}
		// Output goes to the client when php-fpm pauses (see holding and
		// conn.readHeld): what arrives within holdDelay of the last piece
		// (often a whole page) goes out in one write, but nothing is held
		// longer than holdDelay from its first byte, so a script that
		// flushes (PHP's flush(), server-sent events) or pauses is seen
		// within holdDelay, however often it flushes. The pause is all there is to go by: php-fpm
		// sends a large echo as one record of any size, and a flush after
		// a full buffer sends nothing.
	}
}

// holding reports whether body bytes read from php-fpm wait for the
// client (conn.Read asks before it waits for more).
func (x *exchange) holding() bool { return len(x.out) > 0 && !x.clientGone }

// release gives the held bytes to the client now: php-fpm paused.
func (x *exchange) release() { x.emit(false, true) }

// outBufferSize is the most body bytes held back for one write to the
// client (see exchange.emit).
const outBufferSize = 32 << 10

// writeHeader sends the HTTP response head from the CGI header block.
func (x *exchange) writeHeader(block []byte) error {
	if x.clientBody.Load() {
		return nil // answer dropped, see finish
	}
	if x.c.aborted.Load() {
		// The client left (ABORT_REQUEST is sent) before the script
		// answered: the answer is read to its end and dropped. Nothing is
		// written, so the server logs the request as 499, not as the
		// script's status.
		x.clientGone = true
		return nil
	}
	// Check the whole block first, so a bad one leaves the response
	// header untouched for the 502.
	size := 0 // the header list size (limits.FieldSize)
	res, err := parseCGIHeader(block, func(name string, v []byte, _ bool) {
		size += limits.FieldSize(len(name), len(v))
	})
	if err != nil {
		return err
	}
	if size > maxHeaderBytes {
		return errHeaderTooLarge
	}
	hdr := x.w.Header()
	parseCGIHeader(block, func(name string, v []byte, repeat bool) {
		s, one := x.h.interned.field(v, repeat)
		setField(hdr, name, s, one, &x.vals)
	})
	if ct, ok := hdr["Content-Type"]; !ok || len(ct) == 1 && ct[0] == "" {
		// The script sent none (PHP with default_mimetype = "", or an
		// empty one, header('Content-Type:')): the
		// client gets none either, rather than a guess (a nil value tells
		// the engine not to sniff).
		hdr["Content-Type"] = nil
	}
	x.buffered = spool.Buffering(x.h.respBuffer, hdr)
	x.bodyLeft = -1
	if v := hdr["Content-Length"]; len(v) == 1 {
		if n, err := strconv.ParseInt(v[0], 10, 64); err == nil && n >= 0 {
			x.bodyLeft = n
		}
	}
	status := res.status
	if status == 0 {
		status = http.StatusOK
		if res.location {
			// RFC 3875 6.2.3: a client redirect without Status is 302.
			// A local redirect (6.2.2, Location: /path) is sent to the
			// client as a 302 too, as nginx does, rather than run again
			// inside the server. PHP itself sends Status: 302 with every
			// Location header unless the script chose a 201 or 3xx.
			status = http.StatusFound
		}
	}
	x.bodyAllowed = x.r.Method != http.MethodHead && status != http.StatusNoContent && status != http.StatusNotModified
	x.status = status
	x.wroteHeader = true
	if x.rb.out == nil {
		x.rb.out = make([]byte, 0, outBufferSize) // once per pooled reqBuf
	}
	x.out = x.rb.out[:0]
	return nil
}

func (x *exchange) writeBody(p []byte) {
	if len(p) == 0 || !x.bodyAllowed || x.clientGone || !x.wroteHeader {
		return
	}
	if x.bodyLeft >= 0 {
		// Output beyond the declared Content-Length (a stray newline
		// after a download) is dropped, as nginx does: the HTTP server
		// would refuse the whole write and the client would get less
		// than was declared.
		if int64(len(p)) > x.bodyLeft {
			if !x.overLength {
				x.overLength = true
				x.h.elog.Write(slog.LevelWarn, "fastcgi: script wrote more than its Content-Length; the rest is dropped",
					"script", x.t.scriptName)
			}
			p = p[:x.bodyLeft]
			if len(p) == 0 {
				return
			}
		}
		x.bodyLeft -= int64(len(p))
	}
	for len(p) > 0 {
		if len(x.out) == cap(x.out) {
			x.emit(false, false)
			if x.clientGone {
				return
			}
		}
		n := min(len(p), cap(x.out)-len(x.out))
		x.out = append(x.out, p[:n]...)
		p = p[n:]
	}
}

// emit gives the client the response head, if not yet sent, and the body
// bytes held in x.out. final says the script has ended: a body that is
// all in x.out then gets a Content-Length (no chunked framing on
// HTTP/1.1, and the compression middleware sees the size). flush pushes
// the bytes out to the client now.
func (x *exchange) emit(final, flush bool) {
	if x.clientGone || !x.wroteHeader {
		x.out = x.out[:0]
		return
	}
	if !x.headerSent {
		x.headerSent = true
		if final && x.bodyAllowed && x.bodyLeft < 0 {
			var b [20]byte
			delete(x.w.Header(), "Content-Length") // one the script wrote that was not a number
			s, one := x.h.interned.field(strconv.AppendInt(b[:0], int64(len(x.out)), 10), true)
			setField(x.w.Header(), "Content-Length", s, one, &x.vals)
		}
		x.w.WriteHeader(x.status)
	}
	if x.resp == nil && !final && x.buffered {
		// Body bytes must go out before the script has ended: from here
		// on through the response buffer, so that a client slower than
		// the script does not hold the worker.
		x.resp = spool.NewResponse(x.w, x.h.tempDir, x.h.spool, x.r.RemoteAddr)
	}
	if x.resp != nil {
		_, err := x.resp.Write(x.out)
		x.out = x.out[:0]
		if err != nil {
			x.clientGone = true
		} else if flush {
			x.resp.Flush()
		}
		return
	}
	if len(x.out) > 0 {
		_, err := x.w.Write(x.out)
		x.out = x.out[:0]
		if err != nil {
			x.clientGone = true // keep reading to END_REQUEST; the client is gone or the length was wrong
			return
		}
	}
	if flush {
		if f, ok := x.w.(http.Flusher); ok {
			f.Flush()
			return
		}
		http.NewResponseController(x.w).Flush()
	}
}

// endResponse waits until the response buffer, if any, has given the
// client everything, and frees it.
func (x *exchange) endResponse() {
	if x.resp != nil {
		x.resp.Finish()
		x.resp = nil
	}
}

const (
	stderrKeep       = 1 << 10 // bytes of one STDERR record kept for the log
	stderrRecsLogged = 20      // STDERR records logged per request
)

// stderr reads one STDERR record into the error log.
func (x *exchange) stderr() error {
	rd := &x.c.rd
	buf := x.rb.errb[:0]
	for rd.Remaining() > 0 {
		p, err := rd.Peek()
		if err != nil {
			return err
		}
		if room := stderrKeep - len(buf); room > 0 {
			buf = append(buf, p[:min(len(p), room)]...)
		}
		rd.Discard(len(p))
	}
	x.rb.errb = buf[:0]
	x.stderrRecs++
	if x.stderrRecs > stderrRecsLogged {
		return nil
	}
	for line := range bytes.Lines(buf) {
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		x.h.elog.Write(slog.LevelWarn, "fastcgi: script stderr", "script", x.t.scriptName, "stderr", string(line))
	}
	return nil
}

// sendStdin streams the request body as STDIN records, one per read, in
// its own goroutine so that a script that answers before it has read its
// input cannot deadlock against the body.
func (x *exchange) sendStdin() {
	defer close(x.stdinDone)
	c := x.c
	bp := x.h.getCopyBuf()
	defer x.h.putCopyBuf(bp)
	buf := (*bp)[:cap(*bp)]
	const maxRec = 65528
	remain := x.body.length
	for remain > 0 {
		n := int(min(remain, maxRec))
		k, rerr := x.body.src.Read(buf[fcgi.HeaderLen : fcgi.HeaderLen+n])
		if k > 0 {
			remain -= int64(k)
			if err := c.writeLocked(fcgi.StdinRecord(buf, 1, k)); err != nil {
				x.stdinErr = fmt.Errorf("send request body: %w", err)
				return
			}
		}
		if rerr != nil && remain > 0 {
			if x.cut.Load() {
				// attempt stopped the body: the connection is closed and
				// the client did nothing wrong.
				x.stdinErr = rerr
				return
			}
			if rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			x.stdinErr = rerr
			x.clientBody.Store(true)
			c.abort()
			return
		}
	}
	var end [fcgi.HeaderLen]byte
	if err := c.writeLocked(fcgi.AppendHeader(end[:0], fcgi.TypeStdin, 1, 0, 0)); err != nil {
		x.stdinErr = fmt.Errorf("send request body: %w", err)
		return
	}
	c.armRead()
}
