package encoding

import (
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/wire"
)

// Options configure the Middleware.
type Options struct {
	// MinSize: responses shorter than this many bytes are sent as they are.
	MinSize int64
	// Levels per coding (zstd 1..4, brotli 0..11, gzip 1..9).
	Levels [NumCodings]int
	// Pools supplies encoders; shared by every middleware of a server.
	Pools *Pools
	// Constrained, when it returns true (the board is hot), drops every
	// coding to its cheapest level. Nil means never.
	Constrained func() bool
	// CompressCookies codes responses that set a cookie too. By default
	// they are sent as they are: a response that carries a secret (a
	// session, a CSRF token) and reflects request input leaks the secret
	// through its compressed length (BREACH), and setting a cookie is the
	// sign of such a response that a server can see.
	CompressCookies bool
}

// Middleware encodes responses made per request (proxy, FastCGI) with the
// best coding the client accepts: zstd, else brotli at a low level (Safari
// has no zstd), else gzip. It streams, flushing the encoder when the handler
// flushes, and leaves alone responses that are already encoded, marked
// Cache-Control: no-transform (RFC 9111 section 5.2.2.6), setting a cookie
// (unless Options.CompressCookies; BREACH), partial (206),
// bodiless (1xx, 204, 304), not of a compressible type, or shorter than
// MinSize. A HEAD response takes GET's decision when its length is known
// (a Content-Length, or the body a handler wrote anyway) and is not coded
// otherwise, as GET's decision depends on that length (RFC 9110 section
// 9.3.2).
type Middleware struct {
	o    Options
	pool sync.Pool
	vary sync.Pool
}

// New returns a Middleware. Levels left all zero take the configuration's
// defaults (config.DefaultZstdLevel, DefaultBrotliLevel, DefaultGzipLevel);
// otherwise they are used as given (config validated them: brotli 0 is a
// level, zstd and gzip start at 1).
func New(o Options) *Middleware {
	if o.Pools == nil {
		o.Pools = &Pools{}
	}
	if o.Levels == [NumCodings]int{} {
		o.Levels[Zstd], o.Levels[Brotli], o.Levels[Gzip] = config.DefaultZstdLevel, config.DefaultBrotliLevel, config.DefaultGzipLevel
	}
	return &Middleware{o: o}
}

var allCodings = [NumCodings]bool{false, true, true, true}

// Wrap returns h with response encoding.
func (m *Middleware) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := ParseAccept(r.Header["Accept-Encoding"])
		c := a.ChooseDynamic(allCodings)
		if c == Identity {
			// Not encoded for this client, but the choice depended on its
			// Accept-Encoding: say so (RFC 9110 section 12.5.5), as
			// nginx's gzip_vary does, so shared caches keep variants apart.
			vw, _ := m.vary.Get().(*varyWriter)
			if vw == nil {
				vw = &varyWriter{}
			}
			*vw = varyWriter{ResponseWriter: w, minSize: m.o.MinSize, head: r.Method == http.MethodHead}
			h.ServeHTTP(vw, r)
			vw.ResponseWriter = nil
			m.vary.Put(vw)
			return
		}
		level := m.o.Levels[c]
		if m.o.Constrained != nil && m.o.Constrained() {
			level = cheapest[c]
		}
		ew, _ := m.pool.Get().(*encWriter)
		if ew == nil {
			ew = &encWriter{}
		}
		*ew = encWriter{w: w, m: m, coding: c, level: level, head: r.Method == http.MethodHead, reuse: mayReuse(r),
			buf: ew.buf[:0], coded: ew.coded[:0]}
		returned := false
		defer func() {
			if returned {
				ew.finish(r)
			} else if ew.enc != nil {
				// The handler aborted (panic(http.ErrAbortHandler) for a
				// response cut short): what is buffered must not go out
				// as if complete, with a Content-Length of its own.
				m.o.Pools.Put(ew.coding, ew.level, ew.enc)
			}
			buf, coded := ew.buf, ew.coded
			*ew = encWriter{buf: buf[:0], coded: coded[:0]}
			m.pool.Put(ew)
		}()
		h.ServeHTTP(ew, r)
		returned = true
	})
}

var cheapest = [NumCodings]int{0, 1, 1, 1}

type state uint8

const (
	undecided state = iota
	passthrough
	encoding
	// whole: encoding a body whose length the handler declared; its bytes
	// are gathered in buf and coded at once, or found coded (reuse.go).
	whole
	// sentWhole: the whole body is sent; more is refused.
	sentWhole
)

type encWriter struct {
	w      http.ResponseWriter
	m      *Middleware
	coding Coding
	level  int
	head   bool

	status int  // status given by the handler, 0 until WriteHeader
	sent   bool // status sent to w
	st     state
	buf    []byte // body held back while undecided (< MinSize bytes) or whole
	enc    Encoder

	reuse bool   // the request may share coded bodies (mayReuse)
	want  int    // whole: the body's declared length
	coded []byte // whole: the coded body, when not found in the cache
}

func (e *encWriter) Header() http.Header { return e.w.Header() }

// Unwrap lets http.ResponseController reach the connection (Hijack,
// deadlines) through this writer.
func (e *encWriter) Unwrap() http.ResponseWriter { return e.w }

func (e *encWriter) WriteHeader(code int) {
	if e.status != 0 || e.sent {
		return
	}
	if code >= 100 && code <= 199 {
		// Informational (103 Early Hints, 101 Switching Protocols) go
		// straight through; 101 ends our involvement.
		if code == http.StatusSwitchingProtocols {
			e.st = passthrough
			e.sent = true
		}
		e.w.WriteHeader(code)
		return
	}
	e.status = code
	e.decideFromHeaders()
}

// decideFromHeaders settles what it can from the status and header fields.
func (e *encWriter) decideFromHeaders() {
	h := e.w.Header()
	switch {
	case e.status == http.StatusNoContent, e.status == http.StatusNotModified,
		e.status == http.StatusPartialContent,
		h.Get("Content-Encoding") != "", h.Get("Content-Range") != "",
		wire.HasToken(h["Cache-Control"], "no-transform"),
		!e.m.o.CompressCookies && len(h["Set-Cookie"]) > 0:
		e.pass()
		return
	}
	if ct := h.Get("Content-Type"); ct != "" && !Compressible(ct) {
		e.pass()
		return
	}
	if cl := h.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n < e.m.o.MinSize {
			e.pass()
			return
		}
		if h.Get("Content-Type") != "" {
			// Not with declared trailers: a coded Content-Length would
			// drop them on HTTP/1.1 (they need chunked framing).
			if e.reuse && !e.head && n <= reuseMaxBody && !privateResponse(h) && len(h["Trailer"]) == 0 {
				e.want = int(n)
				e.recode()
				e.st = whole
				return
			}
			e.start()
		}
		return
	}
	// HEAD without a Content-Length (a script's answer: php-fpm sends no
	// body for HEAD) is not coded: whether GET's would be depends on a
	// length not known here (see finish).
}

func (e *encWriter) pass() {
	e.st = passthrough
	e.sendStatus()
}

func (e *encWriter) sendStatus() {
	if !e.sent {
		e.sent = true
		if e.status == 0 {
			e.status = http.StatusOK
		}
		e.w.WriteHeader(e.status)
	}
}

// start switches to encoding: header fields change to describe the encoded
// representation (RFC 9110 section 8.4: Content-Encoding; Content-Length
// unknown; a strong validator no longer applies, so the ETag is weakened as
// nginx does; byte ranges of the identity body no longer apply).
func (e *encWriter) start() {
	e.recode()
	e.st = encoding
	e.sendStatus()
	if !e.head {
		e.enc = e.m.o.Pools.Get(e.coding, e.level, e.w)
	}
}

// recode changes the header fields to describe the coded representation.
func (e *encWriter) recode() {
	h := e.w.Header()
	h.Del("Content-Length")
	h.Del("Accept-Ranges")
	h["Content-Encoding"] = codingHeader[e.coding]
	addVary(h)
	if et := h.Get("Etag"); strings.HasPrefix(et, `"`) {
		h.Set("Etag", "W/"+et)
	}
}

// stream gives up gathering a whole body (the handler flushed, wrote more
// or less than it declared): what is gathered goes through a streaming
// encoder as any other coded response.
func (e *encWriter) stream() error {
	e.st = encoding
	e.sendStatus()
	e.enc = e.m.o.Pools.Get(e.coding, e.level, e.w)
	return e.drain()
}

// sendWhole codes the whole body, or finds it coded, and sends it with
// its Content-Length.
func (e *encWriter) sendWhole(body []byte) error {
	rc := &e.m.o.Pools.reuse
	sum := rc.hash(e.coding, e.level, body)
	out := rc.get(sum, e.coding, e.level, body)
	if out == nil {
		sw := sliceWriter{e.coded[:0]}
		enc := e.m.o.Pools.Get(e.coding, e.level, &sw)
		_, err := enc.Write(body)
		if err == nil {
			err = enc.Close()
		}
		e.m.o.Pools.Put(e.coding, e.level, enc)
		e.coded = sw.b
		if err != nil {
			return err
		}
		out = e.coded
		rc.put(sum, e.coding, e.level, body, out)
	}
	e.buf = e.buf[:0]
	e.st = sentWhole
	e.w.Header()["Content-Length"] = []string{strconv.Itoa(len(out))}
	e.sendStatus()
	_, err := e.w.Write(out)
	return err
}

var codingHeader = [NumCodings][]string{nil, {"zstd"}, {"br"}, {"gzip"}}

// addVary adds Accept-Encoding to Vary unless it (or "*") is there already.
func addVary(h http.Header) {
	for _, v := range h["Vary"] {
		if wire.HasToken([]string{v}, "accept-encoding") || strings.TrimSpace(v) == "*" {
			return
		}
	}
	if len(h["Vary"]) == 0 {
		h["Vary"] = varyAE
		return
	}
	h.Add("Vary", "Accept-Encoding")
}

var varyAE = []string{"Accept-Encoding"}

func (e *encWriter) Write(p []byte) (int, error) {
	if e.status == 0 && !e.sent {
		e.WriteHeader(http.StatusOK)
	}
	switch e.st {
	case passthrough:
		return e.w.Write(p)
	case encoding:
		if e.enc == nil {
			return len(p), nil // HEAD, or a whole body already sent
		}
		return e.enc.Write(p)
	case whole:
		if len(e.buf)+len(p) > e.want {
			// More than declared: the engine will refuse it, as it
			// would have without coding; coded, it streams.
			if err := e.stream(); err != nil {
				return 0, err
			}
			return e.enc.Write(p)
		}
		if len(e.buf) == 0 && len(p) == e.want {
			// All of it in one write (the FastCGI handler's page): coded
			// or looked up where it lies, without a copy.
			if err := e.sendWhole(p); err != nil {
				return 0, err
			}
			return len(p), nil
		}
		e.buf = append(e.buf, p...)
		if len(e.buf) == e.want {
			if err := e.sendWhole(e.buf); err != nil {
				return 0, err
			}
		}
		return len(p), nil
	case sentWhole:
		return 0, http.ErrContentLength
	}
	// Undecided: hold bytes back until we know the response is long enough.
	e.buf = append(e.buf, p...)
	if int64(len(e.buf)) >= e.m.o.MinSize {
		if err := e.decideWithBody(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// decideWithBody decides once body bytes are known: sniff a missing
// Content-Type as net/http would, then encode if it is compressible.
func (e *encWriter) decideWithBody() error {
	h := e.w.Header()
	if _, set := h["Content-Type"]; !set && len(e.buf) > 0 {
		h.Set("Content-Type", http.DetectContentType(e.buf))
	}
	if !Compressible(h.Get("Content-Type")) {
		e.pass()
	} else {
		e.start()
	}
	return e.drain()
}

// drain writes the held-back bytes to whichever path was chosen.
func (e *encWriter) drain() error {
	if len(e.buf) == 0 {
		return nil
	}
	var err error
	switch {
	case e.st == passthrough:
		_, err = e.w.Write(e.buf)
	case e.enc != nil:
		_, err = e.enc.Write(e.buf)
	}
	e.buf = e.buf[:0]
	return err
}

// FlushError flushes encoded bytes through to the client. An undecided
// response is decided now: a handler that flushes is streaming (server-sent
// events, long polls), so the length will not be known.
func (e *encWriter) FlushError() error {
	if e.st == undecided {
		if e.status == 0 {
			e.status = http.StatusOK
		}
		if err := e.decideWithBody(); err != nil {
			return err
		}
	}
	if e.st == whole {
		if err := e.stream(); err != nil {
			return err
		}
	}
	if e.enc != nil {
		if err := e.enc.Flush(); err != nil {
			return err
		}
	}
	return http.NewResponseController(e.w).Flush()
}

// Flush implements http.Flusher.
func (e *encWriter) Flush() { _ = e.FlushError() }

// finish completes the response after the handler returns.
func (e *encWriter) finish(r *http.Request) {
	if e.head && e.status == 0 && !e.sent && r.Context().Err() == nil {
		// HEAD: decide from the header fields alone. Not when the client
		// left and the handler wrote nothing: the server logs that as 499.
		e.WriteHeader(http.StatusOK)
	}
	// A HEAD response still undecided has no Content-Length and fewer
	// than MinSize body bytes (none, from php-fpm): it goes out as it is,
	// as GET's would if short, as nginx's gzip filter does for every HEAD.
	// Coding it (as before) told a cache that a short GET answer, sent as
	// is, was coded (RFC 9111 section 4.3.5); left as is, a cache keeps
	// the Content-Encoding of a coded one (section 3.2: fields the HEAD
	// response lacks stay).
	switch e.st {
	case undecided:
		if e.status == 0 && len(e.buf) == 0 {
			return // the handler wrote nothing: net/http sends its default
		}
		// Shorter than MinSize: send as is, with its length now known,
		// unless the handler declared trailers, which a response with a
		// Content-Length cannot carry.
		h := e.w.Header()
		if h.Get("Content-Length") == "" && (!e.head || len(e.buf) > 0) && len(h["Trailer"]) == 0 {
			h["Content-Length"] = []string{strconv.Itoa(len(e.buf))}
		}
		e.pass()
		_ = e.drain()
	case whole:
		// Fewer bytes than declared: sent as they are, coded.
		_ = e.stream()
		fallthrough
	case encoding:
		if e.enc != nil {
			_ = e.enc.Close()
			e.m.o.Pools.Put(e.coding, e.level, e.enc)
			e.enc = nil
		}
	}
}

// varyWriter adds Vary: Accept-Encoding to responses that would have been
// encoded for a client accepting a coding.
type varyWriter struct {
	http.ResponseWriter
	minSize int64
	head    bool // a HEAD request: not coded without a Content-Length
	done    bool
}

func (v *varyWriter) WriteHeader(code int) {
	if !v.done && code >= 200 {
		v.done = true
		h := v.Header()
		if code != http.StatusNoContent && code != http.StatusNotModified && code != http.StatusPartialContent &&
			h.Get("Content-Encoding") == "" && Compressible(h.Get("Content-Type")) &&
			!wire.HasToken(h["Cache-Control"], "no-transform") {
			if cl := h.Get("Content-Length"); cl == "" && !v.head || longEnough(cl, v.minSize) {
				addVary(h)
			}
		}
	}
	v.ResponseWriter.WriteHeader(code)
}

func longEnough(cl string, min int64) bool {
	n, err := strconv.ParseInt(cl, 10, 64)
	return err == nil && n >= min
}

func (v *varyWriter) Write(p []byte) (int, error) {
	if !v.done {
		v.WriteHeader(http.StatusOK)
	}
	return v.ResponseWriter.Write(p)
}

func (v *varyWriter) Flush() { _ = v.FlushError() }

func (v *varyWriter) FlushError() error {
	if !v.done {
		v.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(v.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the engine (Hijack, deadlines).
func (v *varyWriter) Unwrap() http.ResponseWriter { return v.ResponseWriter }
