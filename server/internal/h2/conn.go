package h2

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/server/internal/wire"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// conn is one HTTP/2 connection. The reader goroutine (serve) owns the
// frame reader and stream creation; handlers run on worker goroutines and
// write frames into the shared output under wmu; the writer goroutine
// sends the output.
type conn struct {
	srv    *Server
	rwc    net.Conn
	tls    *tls.ConnectionState
	remote string
	ctx    context.Context
	cancel context.CancelFunc
	tmpl   *http.Request
	// br buffers reads between frames; while the connection waits for the
	// client it goes back to readerPool (nil), and pre holds the byte
	// that ended the wait (see waitFrame).
	br  *bufio.Reader
	pre wire.PrefixReader
	fr  *http2.Framer
	hd  blockDecoder // header blocks (hdecode.go)

	// Reader-goroutine state.
	maxStreamID  uint32       // highest client-initiated stream id seen
	peerMaxFrame uint32       // SETTINGS_MAX_FRAME_SIZE of the peer
	peerWindow   int32        // SETTINGS_INITIAL_WINDOW_SIZE of the peer
	recvConn     atomic.Int32 // connection receive window left
	sawSettings  bool
	goAwaySent   bool
	// resetIDs holds the last streams this side reset (under wmu): frames
	// the peer sent before it saw the RST_STREAM are ignored, not errors
	// (RFC 9113 section 5.1, "closed").
	resetIDs [32]uint32
	resetPos int
	// resetLevel is a leaky bucket of the streams the client reset while
	// we still worked on them, as of resetAt: the "rapid reset" guard.
	resetLevel float64
	resetAt    time.Time
	guard      frameGuard // bounds header blocks (CONTINUATION)
	ctrl       ctrlGuard  // bounds control-frame floods (flood.go)

	smu     sync.Mutex
	streams map[uint32]*stream
	active  int // streams whose handler runs
	// headerHeld is the header list bytes of those streams' requests
	// (maxHeldHeaderBytes).
	headerHeld int64
	lingering  int       // streams kept after their handler (stream.linger)
	idleSince  time.Time // when active last became 0
	rdeadline  time.Time // the read deadline in force (under smu)
	// idleRetries counts idle deadlines met in a row while the connection
	// was not idle (idleRetry); the reader's.
	idleRetries int

	// Under wmu: streams whose handler waits for stream window, and when
	// a DATA frame was last queued (the connection's progress).
	stalled      int
	lastProgress time.Time
	// fileWaits counts streams waiting for window while they keep their
	// file open (at most one, see sendFile), under wmu.
	fileWaits int

	// Output, guarded by wmu. out and spare come from outPool (bufs)
	// when frames are queued and go back once the writer has sent them.
	wmu      sync.Mutex
	wcond    *sync.Cond // flow-control waits
	out      []byte
	spare    []byte
	bufs     *outBufs
	fw       *http2.Framer // writes frames into out
	henc     *hpack.Encoder
	hbuf     bytes.Buffer
	sendConn int64 // connection send window
	sendHigh int64 // the highest sendConn the peer granted (givesBack)
	// streamCredit is the DATA the streams sent that the peer has not given
	// back with stream WINDOW_UPDATEs (givesBack), under wmu.
	streamCredit int64
	consumed     int64 // received bytes handed to handlers, not yet credited
	dead         bool  // the connection failed: writes fail
	writing      bool  // the writer goroutine is sending
	// dataID and dataAt: the stream and offset in out of the last DATA
	// frame queued (0: none since out was last emptied), so that a
	// response's end can be marked on it (endLastData).
	dataID uint32
	dataAt int

	// hencSized: henc may hold a dynamic table size update for the next
	// header block (RFC 7541 section 4.2), so :status goes through it.
	hencSized bool
	// The writer goroutine runs only while there is output to send:
	// kickWriter starts it, and it ends once everything queued is sent,
	// so an idle connection has one goroutine (the reader), not two.
	wstate atomic.Int32 // writerIdle, writerRunning, writerKicked, writerStopped
	// wdeadline is the write deadline in force (the writer role's).
	wdeadline time.Time
	writeFn   func() // c.writeLoop, bound once (a go statement on a method value allocates)
	// batch is the connection under TLS when it can gather writes: the
	// records of an output larger than one go out in one system call.
	batch *wire.BatchConn

	// Handlers run on the reader goroutine (inline.go): inline is the
	// stream onHeaders left to run there, role who reads frames meanwhile,
	// roleBack gives reading back to the serving goroutine, noInline
	// counts streams left to the workers after a lend, inlineSeq counts
	// inline runs and watchSeq is the count the watchdog saw last.
	// helperWaiting (a helper waits for the next frame) and recalled (its
	// wait is cut short) are under smu.
	inline        *stream
	role          atomic.Int32
	roleBack      chan bool
	noInline      int
	inlineSeq     atomic.Uint32
	watchSeq      uint32 // the watchdog's (Server.inlineWatch)
	helperWaiting bool
	recalled      bool
	recallSeen    bool // the helper's last wait was cut short by a recall (the reader's)
}

// Writer goroutine states (conn.wstate).
const (
	writerIdle    int32 = iota // none runs
	writerRunning              // one runs
	writerKicked               // one runs and must look at the output again
	writerStopped              // the connection ended: none runs or starts
)

// outWriter appends frames to c.out; used only under wmu.
type outWriter struct{ c *conn }

func (w outWriter) Write(p []byte) (int, error) {
	if w.c.bufs == nil {
		w.c.acquireOutLocked()
	}
	w.c.out = append(w.c.out, p...)
	return len(p), nil
}

// Buffers a connection holds only while it has something to read or send,
// so that an idle connection keeps neither (1000 idle connections held
// 45 KB each, 47 MB, with them kept).
var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}
	outPool    = sync.Pool{New: func() any {
		return &outBufs{out: make([]byte, 0, 16<<10), spare: make([]byte, 0, 16<<10)}
	}}
)

// outBufs are the two output buffers the writer swaps, pooled together.
type outBufs struct{ out, spare []byte }

// maxPooledOut bounds the output buffers returned to outPool, as the
// writer bounds those it keeps: maxQueued plus a frame fits.
const maxPooledOut = 1 << 20

func (c *conn) acquireOutLocked() {
	c.bufs = outPool.Get().(*outBufs)
	if c.out == nil {
		c.out = c.bufs.out[:0]
	}
	if c.spare == nil {
		c.spare = c.bufs.spare[:0]
	}
}

// releaseOutLocked gives the output buffers back once everything queued
// has been sent (wmu held, the writer not writing).
func (c *conn) releaseOutLocked() {
	if c.bufs == nil || len(c.out) > 0 || c.writing {
		return
	}
	b := c.bufs
	b.out, b.spare = c.out[:0], c.spare[:0]
	if cap(b.out) > maxPooledOut || cap(b.out) == 0 {
		b.out = make([]byte, 0, 16<<10)
	}
	if cap(b.spare) > maxPooledOut || cap(b.spare) == 0 {
		b.spare = make([]byte, 0, 16<<10)
	}
	outPool.Put(b)
	c.bufs, c.out, c.spare = nil, nil, nil
	c.dataID = 0
}

// waitFrame waits for the client's next byte without holding a read
// buffer, when none is buffered: the buffer goes back to readerPool and a
// pooled one reads on from the byte read. Over TLS the rest of the record
// is already decrypted, so this costs no system call.
func (c *conn) waitFrame() error {
	if c.br != nil {
		if c.br.Buffered() > 0 {
			return nil
		}
		c.br.Reset(nil)
		readerPool.Put(c.br)
		c.br = nil
	}
	if err := c.pre.Fill(); err != nil {
		return err
	}
	c.br = readerPool.Get().(*bufio.Reader)
	c.br.Reset(&c.pre)
	return nil
}

// releaseReader returns the read buffer when the connection ends.
func (c *conn) releaseReader() {
	if c.br != nil {
		c.br.Reset(nil)
		readerPool.Put(c.br)
		c.br = nil
	}
}

var errConnDead = errors.New("h2: connection closed")

func newConn(s *Server, rw net.Conn, st *tls.ConnectionState) *conn {
	c := &conn{
		srv: s, rwc: rw, tls: st, remote: rw.RemoteAddr().String(),
		streams:      map[uint32]*stream{},
		peerMaxFrame: 16384, peerWindow: 65535,
		sendConn: 65535, sendHigh: 65535,
	}
	c.wcond = sync.NewCond(&c.wmu)
	c.recvConn.Store(connWindow)
	c.pre.R = rw
	if tc, ok := rw.(*tls.Conn); ok {
		c.batch, _ = tc.NetConn().(*wire.BatchConn)
	}
	c.writeFn = c.writeLoop
	c.roleBack = make(chan bool, 1)
	base := s.BaseContext
	if base == nil {
		base = context.Background()
	}
	base = context.WithValue(base, http.LocalAddrContextKey, rw.LocalAddr())
	c.ctx, c.cancel = context.WithCancel(base)
	c.tmpl = (&http.Request{}).WithContext(c.ctx)
	c.br = readerPool.Get().(*bufio.Reader)
	c.br.Reset(rw)
	c.idleSince = time.Now()
	c.lastProgress = c.idleSince
	c.guard = frameGuard{c: c}
	c.fr = http2.NewFramer(io.Discard, &c.guard)
	c.fr.SetMaxReadFrameSize(maxFrameRead)
	// The decoder keeps going well past our limit so that one large field
	// (a 40 KB cookie) is a 431 for its stream, as over HTTP/1.1, rather
	// than a COMPRESSION_ERROR for the whole connection: x/net refuses a
	// single string longer than MaxHeaderListSize. onHeaders applies the
	// real limit.
	c.fr.MaxHeaderListSize = 8 * s.maxHeaderBytes()
	c.hd.init(c.fr.MaxHeaderListSize)
	c.fw = http2.NewFramer(outWriter{c}, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	return c
}

// serve runs the connection: preface, settings, then frames until the
// end. It returns when the connection has ended, whichever goroutine read
// its last frame (see readLoop): after it, no goroutine reads the
// connection.
func (c *conn) serve() {
	ended := true
	defer func() {
		if ended {
			c.end(recover())
		}
	}()

	// RFC 9113 section 3.4: the client preface, then SETTINGS, within the
	// header read timeout.
	if to := c.srv.Limits.ReadHeaderTimeout(); to > 0 {
		c.rdeadline = time.Now().Add(to)
		c.rwc.SetReadDeadline(c.rdeadline)
	}
	var pre [len(clientPreface)]byte
	if _, err := io.ReadFull(c.br, pre[:]); err != nil || string(pre[:]) != clientPreface {
		return
	}
	c.wmu.Lock()
	c.fw.WriteSettings(
		http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: c.srv.maxStreams()},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamWindow},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: maxFrameRead},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: c.srv.maxHeaderBytes()},
		http2.Setting{ID: http2.SettingEnableConnectProtocol, Val: 1},
	)
	c.fw.WriteWindowUpdate(0, connWindow-65535)
	c.wmu.Unlock()
	c.kickWriter()
	ended = false
	c.readLoop(false)
}

// end finishes the connection once its frames are read: p is a panic of
// the reader, logged.
func (c *conn) end(p any) {
	if p != nil {
		buf := make([]byte, 16<<10)
		c.srv.logger().Error("h2: panic in connection", "remote", c.remote, "panic", p,
			"stack", string(buf[:runtime.Stack(buf, false)]))
	}
	c.shutdown()
	c.releaseReader()
}

// readLoop reads and processes frames until the connection ends, or, on
// a goroutine that took reading over from a handler running inline
// (helper), until it gives reading back (see inline.go). The goroutine
// that reads the connection's last frame ends it (end).
func (c *conn) readLoop(helper bool) {
	ended := false
	defer func() {
		p := recover()
		if !ended && p == nil {
			return
		}
		c.end(p)
		if helper {
			c.helperEnded()
		}
	}()
	for {
		if helper && c.giveBack() {
			return
		}
		if c.sawSettings {
			c.setReadDeadline()
		}
		if err := c.waitFrameAs(helper); err != nil {
			if helper && c.wasRecalled(err) {
				continue // the handler returned: give reading back
			}
			if c.idleRetry(err) {
				continue
			}
			c.readError(err)
			ended = true
			return
		}
		c.idleRetries = 0
		f, err := c.readFrame()
		if err != nil {
			c.readError(err)
			ended = true
			return
		}
		if err := c.processFrame(f); err != nil {
			if !c.handleError(err) {
				ended = true
				return
			}
		}
		if st := c.inline; st != nil {
			c.inline = nil
			if !c.runInline(st) {
				return // the connection ended meanwhile, on the helper
			}
		}
	}
}

// setReadDeadline arms the idle timeout while no handler runs.
func (c *conn) setReadDeadline() {
	if c.br != nil && c.br.Buffered() > 0 {
		return
	}
	c.smu.Lock()
	c.armIdleLocked()
	c.smu.Unlock()
}

// armIdleLocked sets the read deadline (smu held): Limits.Idle after the
// last handler ended while none runs, else none. Frames that start no
// stream (PING, WINDOW_UPDATE, a body for a finished handler) do not move
// it, so a connection whose streams make no progress ends as idle.
//
// An idle deadline is kept while it falls within a quarter of the
// timeout after the one due, and set to 5/4 of it when moved: a
// connection is closed between Idle and 5/4 Idle after its last stream,
// and the deadline moves about once per quarter of the timeout rather
// than after every response (1.2% of the small page's CPU, perf).
//
// While a handler runs, an idle deadline at least Idle away is kept too,
// rather than cleared for the request and set again at its end (two
// deadline updates per request, 3% of the small page's CPU): the reader
// that meets it at a frame boundary with a handler running, or before
// Idle has passed, sets it anew and reads on (idleRetry). Only a client
// that stops for Idle in the middle of a frame while a handler runs has
// its connection closed by it, where it was never closed before.
func (c *conn) armIdleLocked() {
	if c.recalled {
		return // the helper sets it when it sees the recall (inline.go)
	}
	to := c.srv.Limits.IdleTimeout()
	if c.active > 0 || to <= 0 {
		if !c.rdeadline.IsZero() && (to <= 0 || time.Until(c.rdeadline) < to) {
			c.rdeadline = time.Time{}
			c.rwc.SetReadDeadline(c.rdeadline)
		}
		return
	}
	d := c.idleSince.Add(to)
	if !c.rdeadline.Before(d) && c.rdeadline.Sub(d) <= to/4 {
		return
	}
	c.rdeadline = d.Add(to / 4)
	c.rwc.SetReadDeadline(c.rdeadline)
}

// idleRetry reports whether err, from the wait for the next frame, is
// the expiry of an idle deadline kept while the connection was not idle
// (see armIdleLocked): a handler runs, or the last one ended less than
// Idle ago. Then the deadline is set for what the connection is now, and
// the reader waits again. The preface's and a header block's deadlines
// are not retried, and neither is a timeout met three times in a row
// (crypto/tls keeps a read error it does not take for temporary, which
// would come back at once, for ever).
func (c *conn) idleRetry(err error) bool {
	var ne net.Error
	if !c.sawSettings || c.guard.inBlock || !errors.As(err, &ne) || !ne.Timeout() || c.idleRetries >= 3 {
		return false
	}
	c.idleRetries++
	c.smu.Lock()
	defer c.smu.Unlock()
	to := c.srv.Limits.IdleTimeout()
	if c.active == 0 && to > 0 && !time.Now().Before(c.idleSince.Add(to)) {
		return false // idle indeed
	}
	c.armIdleLocked()
	return true
}

// readError handles an error from the frame reader: connection errors get
// a GOAWAY, stream errors (from header decoding) a RST_STREAM.
func (c *conn) readError(err error) {
	var se http2.StreamError
	if errors.As(err, &se) {
		// ReadFrame reports malformed header blocks as stream errors and can
		// go on; but we return from serve on any error, so close cleanly.
		c.goAway(http2.ErrCodeProtocol)
		return
	}
	var ce http2.ConnectionError
	if errors.As(err, &ce) {
		c.goAway(http2.ErrCode(ce))
		return
	}
	if errors.Is(err, http2.ErrFrameTooLarge) {
		c.goAway(http2.ErrCodeFrameSize)
		return
	}
	if errors.Is(err, errHeaderBlock) {
		c.goAway(http2.ErrCodeEnhanceYourCalm)
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		if c.guard.inBlock {
			c.goAway(http2.ErrCodeEnhanceYourCalm) // a header block too slow
		} else {
			c.goAway(http2.ErrCodeNo) // idle
		}
		return
	}
	// EOF, resets: nothing to say.
}

// handleError answers an error from processing a frame. It reports
// whether the connection goes on.
func (c *conn) handleError(err error) bool {
	var se http2.StreamError
	if errors.As(err, &se) {
		c.resetStream(se.StreamID, se.Code)
		return true
	}
	var ce http2.ConnectionError
	if errors.As(err, &ce) {
		c.goAway(http2.ErrCode(ce))
		return false
	}
	c.goAway(http2.ErrCodeInternal)
	return false
}

func streamErr(id uint32, code http2.ErrCode) error {
	return http2.StreamError{StreamID: id, Code: code}
}
func connErr(code http2.ErrCode) error { return http2.ConnectionError(code) }

func (c *conn) processFrame(f http2.Frame) error {
	if !c.sawSettings {
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			return connErr(http2.ErrCodeProtocol) // RFC 9113 section 3.4
		}
	}
	if c.ctrlFlood(f) {
		return connErr(http2.ErrCodeEnhanceYourCalm)
	}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.MetaHeadersFrame:
		return c.onHeaders(f)
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f)
	case *http2.PingFrame:
		if f.StreamID != 0 {
			return connErr(http2.ErrCodeProtocol)
		}
		if f.IsAck() {
			return nil
		}
		c.wmu.Lock()
		c.fw.WritePing(true, f.Data)
		c.wmu.Unlock()
		c.kickWriter()
		return c.checkOutputFlood()
	case *http2.RSTStreamFrame:
		return c.onRSTStream(f)
	case *http2.PriorityFrame:
		if f.StreamDep == f.StreamID {
			return streamErr(f.StreamID, http2.ErrCodeProtocol) // RFC 9113 section 5.3.1
		}
		return nil
	case *http2.GoAwayFrame:
		c.goAwayGraceful()
		return nil
	case *http2.PushPromiseFrame:
		return connErr(http2.ErrCodeProtocol) // clients must not push
	case *http2.ContinuationFrame:
		return connErr(http2.ErrCodeProtocol) // only valid after HEADERS
	default:
		return nil // unknown frame types are ignored (section 4.1)
	}
}

func (c *conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		if f.Length > 0 {
			return connErr(http2.ErrCodeFrameSize)
		}
		return nil
	}
	if f.StreamID != 0 {
		return connErr(http2.ErrCodeProtocol)
	}
	c.sawSettings = true
	// The settings are applied and the ACK queued under one hold of wmu:
	// a handler woken by a larger window must not queue DATA before the
	// ACK (h2spec 6.9.2/1 reads the ACK first and failed 2 full runs in
	// 7 when its DATA came before).
	c.wmu.Lock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxFrameSize:
			c.peerMaxFrame = s.Val
		case http2.SettingInitialWindowSize:
			// Section 6.9.2: adjust every stream's send window by the change.
			delta := int64(s.Val) - int64(c.peerWindow)
			c.peerWindow = int32(s.Val)
			c.smu.Lock()
			defer c.smu.Unlock()
			for _, st := range c.streams {
				st.sendWindow += delta
				if st.sendWindow > 1<<31-1 {
					return connErr(http2.ErrCodeFlowControl)
				}
			}
		case http2.SettingHeaderTableSize:
			c.henc.SetMaxDynamicTableSizeLimit(min(s.Val, 4096))
			c.hencSized = true
		}
		return nil
	})
	if err != nil {
		c.wcond.Broadcast()
		c.wmu.Unlock()
		return err
	}
	c.fw.WriteSettingsAck()
	c.wcond.Broadcast()
	c.wmu.Unlock()
	c.kickWriter()
	return c.checkOutputFlood()
}

// checkOutputFlood closes connections whose peer makes us queue control
// frames faster than it reads them (PING and SETTINGS floods).
func (c *conn) checkOutputFlood() error {
	c.wmu.Lock()
	n := len(c.out)
	c.wmu.Unlock()
	if n > 4<<20 {
		return connErr(http2.ErrCodeEnhanceYourCalm)
	}
	return nil
}

func (c *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	if f.Increment == 0 {
		if f.StreamID == 0 {
			return connErr(http2.ErrCodeProtocol)
		}
		return streamErr(f.StreamID, http2.ErrCodeProtocol)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if f.StreamID == 0 {
		c.sendConn += int64(f.Increment)
		if c.sendConn > 1<<31-1 {
			return connErr(http2.ErrCodeFlowControl)
		}
		c.sendHigh = max(c.sendHigh, c.sendConn)
		c.wcond.Broadcast()
		return nil
	}
	c.smu.Lock()
	st := c.streams[f.StreamID]
	c.smu.Unlock()
	if st == nil {
		if f.StreamID > c.maxStreamID {
			return connErr(http2.ErrCodeProtocol) // idle stream (section 5.1)
		}
		return nil // closed: WINDOW_UPDATE may still arrive
	}
	st.sendWindow += int64(f.Increment)
	if st.sendWindow > 1<<31-1 {
		return streamErr(f.StreamID, http2.ErrCodeFlowControl)
	}
	c.wcond.Broadcast()
	return nil
}

func (c *conn) onRSTStream(f *http2.RSTStreamFrame) error {
	if f.StreamID > c.maxStreamID {
		return connErr(http2.ErrCodeProtocol) // RST_STREAM on an idle stream
	}
	c.smu.Lock()
	st := c.streams[f.StreamID]
	c.smu.Unlock()
	if st == nil {
		return nil
	}
	if st.handlerRunning() && c.rapidReset(time.Now()) {
		return connErr(http2.ErrCodeEnhanceYourCalm)
	}
	st.abort(errStreamReset)
	c.closeStream(st)
	return nil
}

var errStreamReset = errors.New("h2: stream reset by the client")

// Rapid-reset guard (CVE-2023-44487): streams the client resets while
// their handler runs fill a bucket that leaks resetRate a second; past
// resetBurst the connection is closed. A browser cancelling now and then
// never gets near it; a flood of HEADERS+RST_STREAM does within a second.
const resetRate = 100

func (c *conn) resetBurst() float64 { return float64(2*c.srv.maxStreams() + 100) }

// rapidReset counts one reset at now and reports whether the connection
// is over the limit.
func (c *conn) rapidReset(now time.Time) bool {
	if !c.resetAt.IsZero() {
		c.resetLevel = max(0, c.resetLevel-now.Sub(c.resetAt).Seconds()*resetRate)
	}
	c.resetAt = now
	c.resetLevel++
	return c.resetLevel > c.resetBurst()
}

// onData delivers request body bytes (section 6.1) under flow control.
func (c *conn) onData(f *http2.DataFrame) error {
	id := f.StreamID
	n := int32(f.Length) // includes padding: it counts against windows
	if n > c.recvConn.Load() {
		return connErr(http2.ErrCodeFlowControl)
	}
	c.recvConn.Add(-n)
	c.smu.Lock()
	st := c.streams[id]
	c.smu.Unlock()
	data := f.Data()
	pad := n - int32(len(data))
	if st == nil || st.remoteClosed {
		// Return the window at once: nobody will read this.
		c.credit(nil, n)
		if id > c.maxStreamID {
			return connErr(http2.ErrCodeProtocol)
		}
		if st == nil && c.wasReset(id) {
			return nil // in flight when we reset the stream: ignored
		}
		return streamErr(id, http2.ErrCodeStreamClosed)
	}
	if n > st.recvWindow.Load() {
		return streamErr(id, http2.ErrCodeFlowControl)
	}
	st.recvWindow.Add(-n)
	if pad > 0 {
		c.credit(st, pad)
	}
	st.received += int64(len(data))
	if st.declaredCL >= 0 && st.received > st.declaredCL {
		return streamErr(id, http2.ErrCodeProtocol) // section 8.1.1
	}
	if f.StreamEnded() {
		if st.declaredCL >= 0 && st.received != st.declaredCL {
			return streamErr(id, http2.ErrCodeProtocol)
		}
		st.remoteClosed = true
	}
	if !st.body.push(data, f.StreamEnded()) {
		// The handler is done: discard, keep the connection window open,
		// and ask a client still sending to stop (RFC 9113 section 8.1).
		c.credit(nil, int32(len(data)))
		if !f.StreamEnded() && st.localClosed.Load() && !st.drains() {
			c.resetStream(id, http2.ErrCodeNo)
			return nil
		}
	}
	if st.remoteClosed {
		c.maybeClose(st)
	}
	return nil
}

// credit returns receive window to the peer: n bytes for the connection
// (sent in batches), and for stream st when it is not nil.
func (c *conn) credit(st *stream, n int32) {
	if n <= 0 {
		return
	}
	c.wmu.Lock()
	c.consumed += int64(n)
	sent := false
	if c.consumed >= connWindow/4 {
		c.fw.WriteWindowUpdate(0, uint32(c.consumed))
		c.recvConn.Add(int32(c.consumed))
		c.consumed = 0
		sent = true
	}
	if st != nil && !st.localClosed.Load() {
		c.fw.WriteWindowUpdate(st.id, uint32(n))
		st.recvWindow.Add(n)
		sent = true
	}
	c.wmu.Unlock()
	if sent {
		c.kickWriter()
	}
}

// resetStream sends RST_STREAM and forgets the stream. The stream counts
// as closed on this side from then on, so its handler, still running, adds
// no second RST_STREAM when it gives up (RFC 9113 section 5.1).
func (c *conn) resetStream(id uint32, code http2.ErrCode) {
	c.smu.Lock()
	st := c.streams[id]
	c.smu.Unlock()
	c.wmu.Lock()
	c.fw.WriteRSTStream(id, code)
	if st != nil {
		st.localClosed.Store(true)
	}
	c.noteReset(id)
	c.wmu.Unlock()
	c.kickWriter()
	if st != nil {
		st.abort(errStreamReset)
		c.closeStream(st)
	}
}

// noteReset records that this side sent RST_STREAM for id (wmu held).
func (c *conn) noteReset(id uint32) {
	c.resetIDs[c.resetPos] = id
	c.resetPos = (c.resetPos + 1) % len(c.resetIDs)
}

// wasReset reports whether this side recently reset stream id.
func (c *conn) wasReset(id uint32) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for _, r := range c.resetIDs {
		if r == id {
			return true
		}
	}
	return false
}

// goAway sends GOAWAY with code and ends the connection after the output
// is written.
func (c *conn) goAway(code http2.ErrCode) {
	c.wmu.Lock()
	if !c.goAwaySent {
		c.goAwaySent = true
		c.fw.WriteGoAway(c.maxStreamID, code, nil)
	}
	c.wmu.Unlock()
	c.kickWriter()
}

// goAwayGraceful announces shutdown: no new streams; open ones finish.
func (c *conn) goAwayGraceful() {
	c.goAway(http2.ErrCodeNo)
	c.smu.Lock()
	n := len(c.streams)
	c.smu.Unlock()
	if n == 0 {
		c.closeSoon()
	}
}

// closeSoon ends the connection once the output is flushed.
func (c *conn) closeSoon() {
	go func() {
		c.flushAndWait(time.Second)
		c.rwc.Close()
	}()
}

func (c *conn) shutdown() {
	c.cancel()
	c.smu.Lock()
	var all []*stream
	for _, st := range c.streams {
		all = append(all, st)
	}
	c.smu.Unlock()
	for _, st := range all {
		st.abort(errConnDead)
	}
	c.flushAndWait(time.Second)
	c.wmu.Lock()
	c.dead = true
	c.wcond.Broadcast()
	c.wmu.Unlock()
	c.rwc.Close()
	// Wait for a running writer to end (its writes fail on the closed
	// connection) and keep any other from starting.
	for !c.wstate.CompareAndSwap(writerIdle, writerStopped) {
		time.Sleep(time.Millisecond)
	}
}

// flushAndWait waits (bounded) until the output buffer is empty.
func (c *conn) flushAndWait(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c.wmu.Lock()
		empty := len(c.out) == 0 && !c.writing
		c.wmu.Unlock()
		if empty {
			return
		}
		c.kickWriter()
		time.Sleep(time.Millisecond)
	}
}

// kickWriter has the output sent: it starts the writer goroutine, or
// tells the running one to look again before it ends.
func (c *conn) kickWriter() {
	for {
		switch c.wstate.Load() {
		case writerIdle:
			if c.wstate.CompareAndSwap(writerIdle, writerRunning) {
				go c.writeFn()
				return
			}
		case writerRunning:
			if c.wstate.CompareAndSwap(writerRunning, writerKicked) {
				return
			}
		default: // kicked already, or stopped
			return
		}
	}
}

// writeLoop sends the output, then ends (see kickWriter). When it starts
// (or is kicked again) it yields once, so that the handlers made runnable
// by the same read can add their frames first, then writes everything in
// one call.
func (c *conn) writeLoop() { c.drain(true) }

// writeInline sends the output on the calling goroutine, a handler's,
// when no writer runs, and reports whether it did; else the running
// writer is told to look again. A stream that is the connection's only
// one has nothing to batch with: sending its response from its own
// goroutine saves starting a writer goroutine, its yield and its exit for
// every request (see the package doc).
func (c *conn) writeInline() {
	if c.wstate.CompareAndSwap(writerIdle, writerRunning) {
		c.drain(false)
		return
	}
	c.kickWriter()
}

// drain sends the output until none is left and the writer role is given
// back (wstate writerIdle). The caller holds the role (writerRunning or
// writerKicked). yield: see writeLoop.
func (c *conn) drain(yield bool) {
	for {
		if yield {
			runtime.Gosched()
		}
		for {
			c.wmu.Lock()
			if len(c.out) == 0 {
				c.releaseOutLocked()
				c.wmu.Unlock()
				break
			}
			buf := c.out
			c.out, c.spare = c.spare[:0], nil
			c.dataID = 0
			c.writing = true
			c.wcond.Broadcast() // writers waiting for room in the output
			c.wmu.Unlock()
			if to := c.srv.Limits.WriteTimeout(); to > 0 {
				// Moved only when less than the timeout is left, to 5/4
				// of it: each write gets at least Limits.Write, and the
				// deadline is set about once per quarter of it rather than
				// for every response (1.7% of the small page's CPU).
				if now := time.Now(); c.wdeadline.Sub(now) < to {
					c.wdeadline = now.Add(to + to/4)
					c.rwc.SetWriteDeadline(c.wdeadline)
				}
			}
			err := c.send(buf)
			c.wmu.Lock()
			c.writing = false
			if cap(buf) <= 1<<20 {
				c.spare = buf[:0] // bounded by maxQueued plus a frame, so kept
			}
			if err != nil {
				c.dead = true
				c.out = c.out[:0]
				c.dataID = 0
				c.wcond.Broadcast()
				c.wmu.Unlock()
				c.rwc.Close()
				break
			}
			c.wmu.Unlock()
		}
		for {
			if c.wstate.CompareAndSwap(writerRunning, writerIdle) {
				return
			}
			if c.wstate.CompareAndSwap(writerKicked, writerRunning) {
				break // output queued since: send it
			}
		}
	}
}

// batchBufs hold the TLS records of one output while they are gathered
// (send).
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, maxQueued+32<<10); return &b }}

// send writes buf to the connection. An output of more than one TLS
// record (16 KiB) goes out in one system call: its records are gathered
// under the TLS connection (wire.BatchConn), where crypto/tls would write
// each on its own, four for 64 KiB.
func (c *conn) send(buf []byte) error {
	if c.batch == nil || len(buf) <= 16<<10 {
		_, err := c.rwc.Write(buf)
		return err
	}
	bp := batchBufs.Get().(*[]byte)
	c.batch.Hold(*bp)
	_, err := c.rwc.Write(buf)
	b, ferr := c.batch.Flush()
	if cap(b) <= 2*maxPooledOut {
		*bp = b[:0]
		batchBufs.Put(bp)
	}
	if err == nil {
		err = ferr
	}
	return err
}

// closeStream removes a stream once both sides are done with it.
func (c *conn) closeStream(st *stream) {
	c.smu.Lock()
	if c.streams[st.id] == st {
		delete(c.streams, st.id)
		if st.lingering {
			st.lingering = false
			c.lingering--
		}
	}
	n := len(c.streams)
	c.smu.Unlock()
	c.wmu.Lock()
	goingAway := c.goAwaySent
	c.wmu.Unlock()
	if goingAway && n == 0 {
		c.closeSoon()
	}
}

// progressing reports whether some stream of the connection has a handler
// that is not waiting on the client (for body bytes or window): a
// connection that holds a slot only through streams the client starves
// may be closed to make room (Server.CloseIdle).
func (c *conn) progressing() bool {
	c.smu.Lock()
	active := c.active
	starved := 0
	if active > 0 {
		for _, st := range c.streams {
			if st.running.Load() && st.body.starved() {
				starved++
			}
		}
	}
	c.smu.Unlock()
	if active == 0 {
		return false
	}
	c.wmu.Lock()
	starved += c.stalled
	c.wmu.Unlock()
	return starved < active
}

// maybeClose closes a stream whose both halves are done.
func (c *conn) maybeClose(st *stream) {
	if st.remoteClosed && st.localClosed.Load() {
		c.closeStream(st)
	}
}

// frameGuard sits between the connection's buffered reader and the
// framer, and reads frame headers as they pass: x/net's framer assembles a
// header block (HEADERS and CONTINUATION frames) inside one ReadFrame, so
// the bound of RFC 9113 section 10.5 ("CONTINUATION flood") must be kept
// here. A header block may have maxBlockFrames frames and must end within
// the header read timeout; beyond either the connection gets GOAWAY
// ENHANCE_YOUR_CALM. Reads never cross a frame header, so each is seen
// whole. Used by the reader goroutine only.
type frameGuard struct {
	c       *conn
	hdr     [9]byte
	hn      int    // bytes of hdr read
	payload uint32 // bytes of the current frame's payload left
	inBlock bool   // in a header block without END_HEADERS yet
	frames  int    // frames of the current header block
}

const maxBlockFrames = 64

var errHeaderBlock = errors.New("h2: header block too long (CONTINUATION frames)")

func (g *frameGuard) Read(p []byte) (int, error) {
	if g.payload > 0 {
		if uint32(len(p)) > g.payload {
			p = p[:g.payload]
		}
		n, err := g.c.br.Read(p)
		g.payload -= uint32(n)
		return n, err
	}
	if len(p) > len(g.hdr)-g.hn {
		p = p[:len(g.hdr)-g.hn]
	}
	n, err := g.c.br.Read(p)
	copy(g.hdr[g.hn:], p[:n])
	g.hn += n
	if g.hn == len(g.hdr) {
		g.hn = 0
		g.payload = uint32(g.hdr[0])<<16 | uint32(g.hdr[1])<<8 | uint32(g.hdr[2])
		if err := g.frame(http2.FrameType(g.hdr[3]), http2.Flags(g.hdr[4])); err != nil {
			return 0, err // not n: io.ReadFull would drop the error of a full read
		}
	}
	return n, err
}

// frame notes a frame header; it fails a header block over its bounds.
func (g *frameGuard) frame(t http2.FrameType, fl http2.Flags) error {
	switch {
	case t == http2.FrameHeaders && !fl.Has(http2.FlagHeadersEndHeaders):
		g.inBlock, g.frames = true, 1
		// The block must end within the header read timeout.
		if to := g.c.srv.Limits.ReadHeaderTimeout(); to > 0 {
			g.c.smu.Lock()
			d := time.Now().Add(to)
			if g.c.rdeadline.IsZero() || d.Before(g.c.rdeadline) {
				g.c.rdeadline = d
				g.c.rwc.SetReadDeadline(d)
			}
			g.c.smu.Unlock()
		}
	case t == http2.FrameContinuation && g.inBlock:
		g.frames++
		if g.frames > maxBlockFrames {
			return errHeaderBlock
		}
		if fl.Has(http2.FlagContinuationEndHeaders) {
			g.inBlock = false
		}
	}
	return nil
}
