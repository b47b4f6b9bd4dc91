package h1

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/arkaweb/arka/server/internal/core"
	"github.com/arkaweb/arka/server/internal/wire"
)

// response is the http.ResponseWriter of one connection, reused for each
// of its requests.
type response struct {
	c      *conn
	req    *http.Request
	ctx    *reqCtx
	header http.Header

	status      int
	wroteHeader bool // WriteHeader called with a final status (or implied)
	headerSent  bool // status line and fields are in the write buffer
	head        bool
	bodyOK      bool  // the status allows a body
	cl          int64 // declared Content-Length, -1 if none
	written     int64 // body bytes the handler wrote
	chunked     bool
	closeAfter  bool
	trailers    []string
	pending     []byte // body held back until the handler ends or it grows
	fullDuplex  bool
}

func (w *response) reset(c *conn, req *http.Request) {
	clear(w.header)
	pending := w.pending[:0]
	ctx := w.ctx
	*w = response{c: c, req: req, ctx: ctx, header: w.header, cl: -1, pending: pending}
	w.head = req.Method == http.MethodHead
	w.closeAfter = req.Close
}

func (w *response) Header() http.Header { return w.header }

// RequestStart implements monotime.Stamped: when the request's head began
// to arrive, if the engine read the clock for it (conn.start), else 0.
func (w *response) RequestStart() int64 { return w.c.start }

// WriteHeader sends informational responses (1xx) at once and records the
// final status; the header section goes out with the first body bytes, a
// Flush, or the end of the handler.
func (w *response) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	core.CheckStatus("h1", code)
	if core.Interim(code) {
		// RFC 9110 section 15.2: never to an HTTP/1.0 client, which
		// would take it for the final answer.
		if w.req.ProtoMinor >= 1 {
			w.writeInformational(code)
		}
		return
	}
	w.wroteHeader = true
	w.status = code
	w.bodyOK, w.cl = core.Final(code, w.header)
}

func (w *response) writeInformational(code int) {
	bw := w.c.bw
	bw.WriteString(statusLine(code))
	writeFields(bw, w.header, nil, nil)
	bw.WriteString("\r\n")
	bw.Flush()
	// The header map stays as it is: it is the handler's, and the final
	// response is sent with it (as net/http does); a handler that wants
	// fields on the 1xx only deletes them after WriteHeader.
}

func (w *response) Write(p []byte) (int, error) {
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
	if !w.headerSent {
		if core.Hold(w.cl, len(w.pending), len(p)) {
			w.pending = append(w.pending, p...)
			return len(p), nil
		}
		w.sendHeader(false)
	}
	return w.writeBody(p)
}

func (w *response) WriteString(s string) (int, error) {
	if !w.headerSent && core.Hold(w.cl, len(w.pending), len(s)) && w.wroteHeader && w.bodyOK && !w.head {
		w.written += int64(len(s))
		w.pending = append(w.pending, s...)
		return len(s), nil
	}
	return w.Write([]byte(s))
}

func (w *response) writeBody(p []byte) (int, error) {
	bw := w.c.bw
	if w.chunked {
		bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		bw.WriteString("\r\n")
		n, err := bw.Write(p)
		bw.WriteString("\r\n")
		return n, err
	}
	if c := w.c; len(p) > bw.Available() && bw.Buffered() > 0 && c.tcp != nil {
		// bufio would fill its buffer from p and write it, then write
		// the rest: two system calls (a proxied or FastCGI page of 30 KB
		// after its head). One writev sends both. Over TLS each buffer
		// would be its own record and write anyway: left to bufio.
		c.tail, c.tailN = p, 0
		err := bw.Flush()
		if c.tail != nil {
			// Flush did not write (an earlier error): p is not sent.
			c.tail = nil
			return 0, err
		}
		if err == nil && c.tailN < len(p) {
			err = io.ErrShortWrite
		}
		return c.tailN, err
	}
	if c := w.c; c.batch != nil && len(p) > bw.Available() && len(p) <= maxBatch {
		return c.writeBatched(p)
	}
	return bw.Write(p)
}

// maxBatch is the largest body write whose TLS records are gathered into
// one system call (writeBatched): four full records.
const maxBatch = 64 << 10

var batchPool = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// writeBatched writes p through bufio with the TLS connection's records
// gathered under it (wire.BatchConn) and sent in one system call: over
// TLS the buffered head, then p's records, were each a write of their own
// (a 25 KB FastCGI page after its head: three, 4 + 16 + 5 KiB of
// records). On php-page (A B A B twice under shared load, load 17 to
// 26) Arka's CPU per page went from 0.26-0.32 to 0.20-0.25 ms, 0.91-1.07x
// nginx's against 1.00-1.22x.
func (c *conn) writeBatched(p []byte) (int, error) {
	bp := batchPool.Get().(*[]byte)
	c.batch.Hold((*bp)[:0])
	n, err := c.bw.Write(p)
	buf, ferr := c.batch.Flush()
	if cap(buf) <= 2*maxBatch {
		*bp = buf[:0]
		batchPool.Put(bp)
	}
	if err == nil && ferr != nil {
		return 0, ferr
	}
	return n, err
}

// maxAnswerBeforeBody bounds, in bytes, a complete response sent before
// the unread rest of its request's body is discarded (see sendHeader):
// loopback and LAN sockets buffer far more.
const maxAnswerBeforeBody = 16 << 10

// sendHeader writes the status line and header fields. final says the
// handler has finished, so an unknown length is the pending bytes.
func (w *response) sendHeader(final bool) {
	if w.headerSent {
		return
	}
	w.headerSent = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	h := w.header
	// Length, Content-Type and trailers as both engines decide them; the
	// framing of a body of unknown length is HTTP/1.1's own.
	length, trailers := core.PrepareHead(h, w.coreHead(final), w.trailers)
	// A header that repeats the last one's strings (fieldMemo) is known
	// without looking its fields up again: no Transfer-Encoding (the
	// memo is kept after it was deleted), and whether Connection says
	// close and Date is set, as the memo recorded them.
	m := &w.c.memo
	memo := len(trailers) == 0 && m.matches(h)
	connClose := m.connClose
	if !memo {
		delete(h, "Transfer-Encoding")
		connClose = wire.HasToken(h["Connection"], "close")
	}
	if connClose {
		w.closeAfter = true
	}
	if w.c.srv.closing.Load() {
		w.closeAfter = true
	}
	// A client that sends its whole request before reading the response
	// would deadlock against a response that fills its window while the
	// body is unread: read the rest of the body first (up to 256 KiB), or
	// close after this response. Handlers that stream both ways call
	// EnableFullDuplex. (net/http does the same.) An answer whose length
	// is known and small enough for the socket's buffers (a 401, 405 or
	// 413 to an upload, a small file) cannot deadlock: it goes out first, and the connection discards
	// the body after it (serve), so a client that pauses does not hold
	// its answer up.
	small := length >= 0 && length <= maxAnswerBeforeBody
	if !w.fullDuplex && !w.closeAfter && !w.c.body.eof && w.req.Body != http.NoBody {
		if small {
			// Only a body that cannot be discarded decides now: its
			// answer says the connection closes.
			w.closeAfter = w.c.body.wontDiscard(maxDiscard)
		} else if !w.c.body.discard(maxDiscard) {
			w.closeAfter = true
		}
	}
	w.trailers = trailers
	switch {
	case !w.bodyOK:
		w.cl = -1
	case length >= 0:
		w.cl = length
	case w.head:
	case w.req.ProtoMinor >= 1:
		w.chunked = true
	default:
		w.closeAfter = true // HTTP/1.0: the close delimits the body
	}
	bw := w.c.bw
	bw.WriteString(statusLine(w.status))
	hasDate := m.hasDate
	if memo {
		bw.Write(m.buf)
	} else {
		writeFields(bw, h, w.trailers, m)
		_, hasDate = h["Date"]
	}
	if !hasDate {
		bw.WriteString("Date: ")
		bw.Write(wire.Date())
		bw.WriteString("\r\n")
	}
	if w.chunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if w.closeAfter {
		if !connClose {
			bw.WriteString("Connection: close\r\n")
		}
	} else if w.req.ProtoMinor == 0 {
		bw.WriteString("Connection: keep-alive\r\n")
	}
	bw.WriteString("\r\n")
	if len(w.pending) > 0 {
		p := w.pending
		w.pending = w.pending[:0]
		w.writeBody(p)
	}
}

// coreHead is the response as package core's rules see it.
func (w *response) coreHead(final bool) core.Head {
	return core.Head{Status: w.status, BodyOK: w.bodyOK, HEAD: w.head, Final: final, CL: w.cl, Written: w.written, Pending: w.pending}
}

// writeFields writes header fields in name order (stable output from one
// response to the next), skipping declared trailers and keys with
// http.TrailerPrefix, and names that are not tokens; control characters
// in values become spaces (core.CleanValue). With memo, the fields are
// remembered there (the caller copies them from it when its next header
// matches: sendHeader).
func writeFields(bw *bufio.Writer, h http.Header, trailers []string, memo *fieldMemo) {
	var arr [24]string
	keys := arr[:0]
	for k := range h {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	var out []byte
	if memo != nil {
		out = memo.buf[:0]
	}
outer:
	for _, k := range keys {
		if !validFieldName(k) || strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		for _, t := range trailers {
			if t == k {
				continue outer
			}
		}
		name := k
		switch k {
		// net/http's canonical keys of fields RFC 9110 spells otherwise
		// (sections 8.8.3 and 11.6.1), sent as registered, as nginx
		// does: field names are case-insensitive; this is for people
		// reading responses.
		case "Etag":
			name = "ETag"
		case "Www-Authenticate":
			name = "WWW-Authenticate"
		}
		for _, v := range h[k] {
			out = append(out, name...)
			out = append(out, ": "...)
			out = append(out, core.CleanValue(v)...)
			out = append(out, "\r\n"...)
		}
	}
	bw.Write(out)
	if memo != nil {
		memo.keep(keys, h, trailers, out)
	}
}

// fieldMemo is the last header section a connection wrote, serialised,
// with the field names and value strings it came from. A handler that
// answers again with the same strings (the static handler's values,
// computed once per cached file, and the server's constants) gets the
// same bytes with one copy, instead of sorting, checking and cleaning
// each field again: the response head is then in effect precomputed per
// file, while the handler still only sets header fields. Values are
// compared by identity (pointer and length), never by content, so a
// handler that builds its values afresh only pays the comparison.
type fieldMemo struct {
	keys []string // sorted, as written
	vals []string // the values of keys, in order
	nv   []int    // how many values each key has
	buf  []byte   // the serialised fields when ok, else storage for them
	ok   bool
	// What sendHeader would otherwise look up in a matching header.
	connClose bool // Connection has "close"
	hasDate   bool // Date is set
}

// maxMemo bounds the header section kept (bytes): larger ones, rare and
// not worth holding per connection, are not memoised.
const maxMemo = 2048

func (m *fieldMemo) matches(h http.Header) bool {
	if !m.ok || len(m.keys) != len(h) {
		return false
	}
	j := 0
	for i, k := range m.keys {
		vs, ok := h[k]
		if !ok || len(vs) != m.nv[i] {
			return false
		}
		for _, v := range vs {
			p := m.vals[j]
			j++
			if len(v) != len(p) || unsafe.StringData(v) != unsafe.StringData(p) {
				return false
			}
		}
	}
	return true
}

// keep remembers out as the serialisation of h (keys sorted); out is
// m.buf's storage, or a new slice grown from it.
func (m *fieldMemo) keep(keys []string, h http.Header, trailers []string, out []byte) {
	m.ok = false
	if len(out) > maxMemo {
		m.buf = nil
		return
	}
	m.buf = out
	if len(trailers) > 0 {
		return
	}
	m.keys = append(m.keys[:0], keys...)
	m.vals = m.vals[:0]
	m.nv = m.nv[:0]
	for _, k := range keys {
		m.vals = append(m.vals, h[k]...)
		m.nv = append(m.nv, len(h[k]))
	}
	m.connClose = wire.HasToken(h["Connection"], "close")
	_, m.hasDate = h["Date"]
	m.ok = true
}

func writeValue(bw *bufio.Writer, v string) { bw.WriteString(core.CleanValue(v)) }

func validFieldName(k string) bool { return core.ValidFieldName(k) }

// Flush sends what the handler wrote so far.
func (w *response) Flush() { w.FlushError() }

func (w *response) FlushError() error {
	if !w.headerSent {
		w.sendHeader(false)
	}
	return w.c.bw.Flush()
}

// sendCut sends what a handler that gave up (panic(http.ErrAbortHandler))
// wrote of its response, head and body still held in the buffers, before
// the connection closes: the client then sees a body shorter than its
// Content-Length, or chunks without the last one, and knows the response
// was cut short (RFC 9112 section 8), where it got nothing at all. Not
// when the head alone would read as a whole response (HEAD, 204, 304) or
// the close itself would end the body (HTTP/1.0, unknown length): a cut
// response would read as complete.
func (w *response) sendCut() {
	if !w.wroteHeader || w.req == nil {
		return
	}
	if !w.headerSent {
		if w.head || !w.bodyOK || w.cl < 0 && w.req.ProtoMinor == 0 {
			return
		}
		w.closeAfter = true // and the request's unread body is not discarded first
		w.sendHeader(false)
	}
	w.c.armWrite()
	w.c.bw.Flush()
}

// finish completes the response after the handler returned.
func (w *response) finish() {
	if !w.headerSent {
		w.sendHeader(true)
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString("0\r\n")
		core.EachTrailer(w.header, w.trailers, func(name string, vs []string) {
			if !validFieldName(name) {
				return
			}
			for _, v := range vs {
				bw.WriteString(name)
				bw.WriteString(": ")
				writeValue(bw, v)
				bw.WriteString("\r\n")
			}
		})
		bw.WriteString("\r\n")
	}
	if core.Short(w.coreHead(true)) {
		// The handler promised more than it wrote: the client would wait
		// for bytes that never come. Close instead.
		w.closeAfter = true
	}
}

// ReadFrom copies src to the body; with a known length over plain TCP it
// uses sendfile(2) (through net.TCPConn.ReadFrom).
func (w *response) ReadFrom(src io.Reader) (int64, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.c.tcp == nil || w.head || !w.bodyOK || w.cl < 0 {
		bp := copyBufs.Get().(*[]byte)
		defer copyBufs.Put(bp)
		return io.CopyBuffer(writerOnly{w}, src, *bp)
	}
	if !w.headerSent {
		if _, set := w.header["Content-Type"]; !set {
			// Sniff from the first bytes, as net/http would.
			var buf [512]byte
			n, err := io.ReadFull(src, buf[:])
			w.header["Content-Type"] = []string{http.DetectContentType(buf[:n])}
			m, werr := w.Write(buf[:n])
			if werr != nil || err != nil {
				if err == io.ErrUnexpectedEOF || err == io.EOF {
					err = nil
				}
				return int64(m), errors.Join(werr, err)
			}
			rest, err := w.ReadFrom(src)
			return int64(m) + rest, err
		}
		w.sendHeader(false)
	}
	if err := w.c.bw.Flush(); err != nil {
		return 0, err
	}
	// net.TCPConn.ReadFrom uses sendfile for an *os.File, bare or inside one
	// io.LimitedReader: do not wrap a LimitedReader in another. The body
	// goes in chunks of sendChunk with the write deadline pushed ahead
	// before each, so that Limits.Write bounds a send without progress (a
	// client that stops reading), not the time a large body takes.
	left := w.cl - w.written
	outer, _ := src.(*io.LimitedReader)
	if outer != nil {
		src, left = outer.R, min(left, outer.N)
	}
	part := io.LimitedReader{R: src}
	var n int64
	var err error
	for n < left {
		part.N = min(left-n, sendChunk)
		want := part.N
		w.c.armWrite()
		var m int64
		m, err = w.c.tcp.ReadFrom(&part)
		n += m
		if err != nil || m < want {
			break // an error, or src ended
		}
	}
	if outer != nil {
		outer.N -= n
	}
	w.written += n
	return n, err
}

// sendChunk is the most ReadFrom sends (with sendfile) between two pushes
// of the write deadline: at Limits.Write's default of 60 s, a client
// reading at 4.5 KB/s still gets a whole body.
const sendChunk = 256 << 10

type writerOnly struct{ io.Writer }

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Hijack hands the connection to the handler (WebSockets).
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c := w.c
	if w.headerSent {
		return nil, nil, errors.New("h1: Hijack after the response started")
	}
	c.stopWatchForHijack()
	c.state.Store(stateHijacked)
	c.rwc.SetDeadline(time.Time{})
	return c.rwc, bufio.NewReadWriter(c.br, c.bw), nil
}

// SetReadDeadline replaces the body read timeout for the rest of this
// request (http.ResponseController).
func (w *response) SetReadDeadline(t time.Time) error {
	c := w.c
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rfixed = true
	return c.rwc.SetReadDeadline(t)
}

// SetWriteDeadline replaces the per-write timeout for the rest of this
// response (http.ResponseController).
func (w *response) SetWriteDeadline(t time.Time) error {
	w.c.wfixed = !t.IsZero()
	w.c.wdeadline = t
	return w.c.rwc.SetWriteDeadline(t)
}

// EnableFullDuplex lets the handler read the body while writing the
// response; this engine always allows it.
func (w *response) EnableFullDuplex() error {
	w.fullDuplex = true
	return nil
}

// Status lines for common codes, precomputed.
var statusLines = func() map[int]string {
	m := map[int]string{}
	for code := 100; code < 600; code++ {
		if t := wire.StatusText(code); t != "" {
			m[code] = "HTTP/1.1 " + strconv.Itoa(code) + " " + t + "\r\n"
		}
	}
	return m
}()

func statusLine(code int) string {
	if s, ok := statusLines[code]; ok {
		return s
	}
	return "HTTP/1.1 " + strconv.Itoa(code) + " status code " + strconv.Itoa(code) + "\r\n"
}
