package h2

import (
	"net/http"
	"strings"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/server/internal/wire"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// onHeaders opens a stream (or takes a request's trailers) from a decoded
// header block (RFC 9113 sections 5.1, 8.1-8.3).
func (c *conn) onHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 == 0 {
		return connErr(http2.ErrCodeProtocol) // clients use odd stream ids
	}
	if id <= c.maxStreamID {
		c.smu.Lock()
		st := c.streams[id]
		c.smu.Unlock()
		if st == nil && c.wasReset(id) {
			// Trailers in flight when we reset the stream: ignored
			// (section 5.1; the block was decoded, so HPACK state holds).
			return nil
		}
		if st == nil || st.remoteClosed {
			// Closed, or half-closed (remote): section 5.1.
			return connErr(http2.ErrCodeStreamClosed)
		}
		return c.onTrailers(st, f)
	}
	c.maxStreamID = id
	if c.goAwaySent {
		return nil // section 6.8: streams after GOAWAY are ignored
	}
	size := headerListSize(f.Fields)
	if f.Truncated || size > c.srv.maxHeaderBytes() {
		// Header list over our limit (RFC 9113 section 10.5.1, counted as
		// SETTINGS_MAX_HEADER_LIST_SIZE is): answer 431 without running a
		// handler.
		c.refuse(id, http.StatusRequestHeaderFieldsTooLarge, f.StreamEnded())
		if c.srv.Rejected != nil {
			c.srv.Rejected(&http.Request{
				Method: f.PseudoValue("method"), RequestURI: f.PseudoValue("path"), Host: f.PseudoValue("authority"),
				Proto: "HTTP/2.0", ProtoMajor: 2, RemoteAddr: c.remote, TLS: c.tls, Header: http.Header{},
			}, http.StatusRequestHeaderFieldsTooLarge, 0)
		}
		return nil
	}
	c.smu.Lock()
	n, held := c.active, c.headerHeld
	c.smu.Unlock()
	if n >= int(c.srv.maxStreams()) {
		return streamErr(id, http2.ErrCodeRefusedStream) // section 5.1.2
	}
	if n > 0 && held+int64(size) > maxHeldHeaderBytes {
		// The heads of the streams in flight take what a connection is
		// budgeted: refused until some end (section 8.7: REFUSED_STREAM
		// may be retried). The connection's first stream always runs.
		return streamErr(id, http2.ErrCodeRefusedStream)
	}
	c.wmu.Lock()
	stalled := c.stalled
	if c.sendConn < minOpenWindow || int64(c.peerWindow) < minOpenWindow {
		// The peer's windows are closed: every running handler is about
		// to wait for window, so all count, before they reach the wait
		// (a burst of HEADERS would otherwise be admitted whole).
		stalled = max(stalled, n)
	}
	c.wmu.Unlock()
	if stalled >= maxStalled {
		// Streams the client gives no window hold their handler and its
		// buffers: a connection may have maxStalled of them at once, so
		// their cost is bounded per connection; more are refused until
		// some progress (section 8.7: REFUSED_STREAM may be retried).
		return streamErr(id, http2.ErrCodeRefusedStream)
	}
	if f.HasPriority() && f.Priority.StreamDep == id {
		return streamErr(id, http2.ErrCodeProtocol)
	}

	st := &stream{c: c, id: id, declaredCL: -1}
	st.recvWindow.Store(streamWindow)
	st.remoteClosed = f.StreamEnded()
	req, err := c.newRequest(st, f)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	st.sendWindow = int64(c.peerWindow)
	c.wmu.Unlock()
	st.req = req
	st.w = responseWriter{st: st, header: headerMaps.Get().(http.Header), head: req.Method == http.MethodHead}
	st.headerBytes = size
	c.smu.Lock()
	c.streams[id] = st
	c.active++
	c.headerHeld += int64(size)
	c.smu.Unlock()
	st.running.Store(true)
	if n == 0 && c.inlineOK(st) {
		c.inline = st // run by readLoop (inline.go)
		return nil
	}
	c.srv.pool.run(st)
	return nil
}

// maxHeldHeaderBytes bounds the request heads of one connection's
// streams whose handler runs, in bytes of header list as
// SETTINGS_MAX_HEADER_LIST_SIZE counts them (RFC 9113 section 6.5.2):
// the memory a connection is budgeted (board.ConnBytes, from which the
// connection limit is derived). A head is held while its handler runs
// (parsed into the request, and again as a proxy's request to its
// upstream): 128 streams of 28 KB heads made a connection cost about
// 6 MB (QA H2); now a connection runs 64 KiB of heads at once, two such
// streams or about forty of 1.5 KB (a browser's), and refuses more
// until some end.
const maxHeldHeaderBytes = board.ConnBytes

// maxStalled bounds the streams of a connection waiting for stream window
// at once (see onHeaders).
const maxStalled = 16

// minOpenWindow is the send window, in bytes (one DATA frame of the
// default SETTINGS_MAX_FRAME_SIZE), below which the connection's window,
// or the peer's SETTINGS_INITIAL_WINDOW_SIZE, counts as closed for
// admission: running streams then count toward maxStalled.
const minOpenWindow = 16 << 10

// refuse answers a request with an error status without a handler.
func (c *conn) refuse(id uint32, status int, ended bool) {
	c.wmu.Lock()
	c.writeHeaderBlock(id, true, status, http.Header{"Content-Length": {"0"}}, nil)
	if !ended {
		c.fw.WriteRSTStream(id, http2.ErrCodeNo)
		c.noteReset(id)
	}
	c.wmu.Unlock()
	c.kickWriter()
}

func (c *conn) onTrailers(st *stream, f *http2.MetaHeadersFrame) error {
	if !f.StreamEnded() {
		return streamErr(st.id, http2.ErrCodeProtocol) // trailers end the stream
	}
	if len(f.PseudoFields()) > 0 {
		return streamErr(st.id, http2.ErrCodeProtocol)
	}
	if st.declaredCL >= 0 && st.received != st.declaredCL {
		return streamErr(st.id, http2.ErrCodeProtocol)
	}
	st.remoteClosed = true
	st.body.mu.Lock()
	if st.req != nil && st.req.Trailer != nil {
		for _, hf := range f.RegularFields() {
			k := wire.Canonical(hf.Name)
			if _, declared := st.req.Trailer[k]; declared {
				st.req.Trailer[k] = append(st.req.Trailer[k], hf.Value)
			}
		}
	}
	st.body.mu.Unlock()
	st.body.push(nil, true)
	c.maybeClose(st)
	return nil
}

// newRequest builds the *http.Request of a stream and checks the header
// block's HTTP semantics (RFC 9113 section 8.3 and 8.2.2).
func (c *conn) newRequest(st *stream, f *http2.MetaHeadersFrame) (*http.Request, error) {
	id := st.id
	var method, scheme, authority, path, protocol string
	for _, hf := range f.PseudoFields() {
		switch hf.Name {
		case ":method":
			method = hf.Value
		case ":scheme":
			scheme = hf.Value
		case ":authority":
			authority = hf.Value
		case ":path":
			path = hf.Value
		case ":protocol":
			protocol = hf.Value
		}
	}
	// perr is a function so that the error value is made only when needed.
	perr := func() error { return streamErr(id, http2.ErrCodeProtocol) }
	if method == "" {
		return nil, perr()
	}
	for i := 0; i < len(method); i++ {
		if !isToken(method[i]) {
			return nil, perr()
		}
	}
	extended := protocol != ""
	switch {
	case extended && method != http.MethodConnect:
		return nil, perr()
	case method == http.MethodConnect && !extended:
		// Section 8.5: only :method and :authority.
		if scheme != "" || path != "" || authority == "" {
			return nil, perr()
		}
	default:
		if scheme == "" || path == "" {
			return nil, perr()
		}
		if path[0] != '/' && !(path == "*" && method == http.MethodOptions) {
			return nil, perr()
		}
	}

	st.ctxVal.Context = c.ctx
	st.ctx = &st.ctxVal
	// The request lives in the stream, one allocation for both: the copy
	// WithContext makes does not escape (it is inlined), so it is made on
	// the stack and copied once more into place.
	st.reqVal = *c.tmpl.WithContext(st.ctx)
	r := &st.reqVal
	r.Method = method
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
	r.RemoteAddr = c.remote
	r.TLS = c.tls
	r.RequestURI = path
	regular := f.RegularFields()
	h := make(http.Header, len(regular))
	// The fields' values share one backing array, each a full slice of
	// one (a handler's append copies it): one allocation for the header
	// rather than one per field (a browser sends ten or more), none when
	// the stream's own array holds them.
	var vals []string
	if len(regular) <= len(st.vals) {
		vals = st.vals[:len(regular)]
	} else {
		vals = make([]string, len(regular))
	}
	var cookies []string
	var hostField string
	hosts := 0
	for i, hf := range regular {
		name := hf.Name
		switch name {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			return nil, perr() // section 8.2.2
		case "te":
			if hf.Value != "trailers" {
				return nil, perr()
			}
		case "cookie":
			cookies = append(cookies, hf.Value) // section 8.2.3
			continue
		case "host":
			hostField = hf.Value
			hosts++
		}
		k := wire.Canonical(name)
		if vs, ok := h[k]; ok {
			h[k] = append(vs, hf.Value)
		} else {
			vals[i] = hf.Value
			h[k] = vals[i : i+1 : i+1]
		}
	}
	// Section 8.3.1: the target's authority is :authority, else Host; it
	// is required for http and https, carries no userinfo, and a Host
	// field that names another entity makes the request malformed.
	switch {
	case hosts > 1:
		return nil, perr()
	case authority == "":
		authority = hostField
		if authority == "" && method != http.MethodConnect {
			return nil, perr()
		}
	case hosts == 1 && !sameAuthority(scheme, authority, hostField):
		return nil, perr()
	}
	if !wire.ValidHost(authority) || !pathOK(path) {
		return nil, perr()
	}
	if len(cookies) > 0 {
		h["Cookie"] = []string{strings.Join(cookies, "; ")}
	}
	if extended {
		h[":protocol"] = []string{protocol} // as net/http presents RFC 8441 requests
	}
	delete(h, "Host")
	r.Header = h
	r.Host = authority

	u := &st.url
	if method == http.MethodConnect && !extended {
		u.Host = authority
	} else {
		p, q, _ := strings.Cut(path, "?")
		u.RawQuery = q
		if p == "*" {
			u.Path = "*"
		} else if err := wire.SetPath(u, p); err != nil {
			return nil, perr()
		}
	}
	r.URL = u

	if cl := h["Content-Length"]; len(cl) > 0 {
		n, err := wire.ParseContentLength(cl) // as HTTP/1.1: digits only, no "+0"
		if err != nil {
			return nil, perr()
		}
		st.declaredCL = n
		if st.remoteClosed && n != 0 {
			return nil, perr() // section 8.1.1
		}
	}
	st.body.init(st, st.remoteClosed)
	if e := h["Expect"]; !st.remoteClosed && len(e) == 1 && strings.EqualFold(e[0], "100-continue") {
		st.body.expect100 = true
	}
	if st.remoteClosed {
		r.ContentLength = 0
		r.Body = http.NoBody
	} else {
		r.ContentLength = st.declaredCL
		r.Body = &st.body
		r.Trailer = wire.DeclaredTrailer(h["Trailer"])
	}
	return r, nil
}

// sameAuthority reports whether a and b name the same host and port,
// compared case-insensitively and with the scheme's default port implied
// (RFC 3986 section 6.2.3).
func sameAuthority(scheme, a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	def := ":443"
	if scheme == "http" {
		def = ":80"
	}
	return strings.EqualFold(strings.TrimSuffix(a, def), strings.TrimSuffix(b, def))
}

// pathOK: :path has no whitespace, control bytes or fragment, as a
// request-target (RFC 9113 section 8.3.1, RFC 9112 section 3.2).
func pathOK(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f || c == '#' {
			return false
		}
	}
	return true
}

// setPath fills u.Path and, when the encoding is not the default one,
// u.RawPath, as net/url does.

func isToken(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// headerListSize is the size of a header list as RFC 9113 section 6.5.2
// counts it for SETTINGS_MAX_HEADER_LIST_SIZE: name and value lengths
// plus 32 bytes per field.
func headerListSize(fields []hpack.HeaderField) uint32 {
	var n uint32
	for _, f := range fields {
		n += uint32(len(f.Name)+len(f.Value)) + 32
	}
	return n
}
