package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/arkaweb/arka/server/internal/limits"
	"github.com/arkaweb/arka/server/internal/wire"
)

// The upstream's response, read by the proxy itself (RFC 9112) rather than
// by http.ReadResponse, which allocates a header map, a string per field
// value, the Response and its body reader for every response (8 of the 13
// allocations of a proxied request). Here the head's field lines are
// copied into a buffer the connection keeps; handing them to the engine
// takes one string (all names and values are substrings of it) and one
// []string block.
//
// The parser is strict where leniency would let an upstream smuggle or
// split (RFC 9112 sections 2.2, 4, 5 and 6.3); whatever it refuses is a
// bad response, answered 502:
//   - status line: "HTTP/1." digit, SP, three digits 100-599, then
//     optionally SP and a reason of visible characters, SP and HTAB;
//   - field lines: a token name directly followed by ':', a value of
//     visible characters, SP, HTAB and obs-text; no obs-fold (a line
//     starting with SP or HTAB), no NUL or other control, no CR that does
//     not end the line (a line may end with LF alone, section 2.2);
//   - framing: Transfer-Encoding only as "chunked" in an HTTP/1.1
//     response, never together with Content-Length (nginx refuses the
//     same); Content-Length a decimal number, repeated only with the same
//     value (RFC 9112 section 6.3 item 5); the head, 1xx heads and
//     trailers within maxResponseHeaderBytes together; chunk-size lines
//     within maxChunkLine (4 KiB).
//
// Responses to HEAD and 1xx, 204 and 304 responses have no body, whatever
// their framing fields say (RFC 9112 section 6.3 items 1 and 2). Without
// Content-Length or chunked, the body runs to the connection's close.

// span is a byte range of response.raw.
type span struct{ start, end int32 }

type respField struct{ name, value span }

// Body framing of a response (RFC 9112 section 6.3).
const (
	respNone    = iota // no body
	respLength         // Content-Length
	respChunked        // Transfer-Encoding: chunked
	respClose          // until the upstream closes the connection
)

// response is one upstream response: its head as parsed by readResponse and
// the state of its body. A conn keeps one and reuses its storage.
type response struct {
	StatusCode    int
	ContentLength int64 // -1: unknown (chunked or close-delimited)
	Close         bool  // the connection cannot carry another request
	Trailer       http.Header
	announced     []string // names listed in the Trailer field

	raw     []byte // the field lines, names in canonical form
	fields  []respField
	cl      span // Content-Length's value, when framed by length
	framing int
	remain  int64 // bytes left of the body or of the current chunk
	state   int   // chunked: chunkSize, chunkData, chunkEnd, done
	br      *bufio.Reader
	hdrLeft int64 // bytes left of maxResponseHeaderBytes, for trailers
	// last is the upstream's most recent head text (raw as a string),
	// shared by its connections; nil for none (tests).
	last *atomic.Pointer[string]
	// memo is the upstream's most recent head as parsed (headMemo),
	// shared by its connections; nil for none (tests).
	memo *atomic.Pointer[headMemo]
	txt  string // raw as a string when a headMemo gave it (text)
	// relayed are the fields copyHeader gives the engine, and connection
	// Connection's values, when a headMemo gave them (nil otherwise).
	relayed    []fieldValues
	connection []string
}

// fieldValues is one field name and its values, as copyHeader sets them.
type fieldValues struct {
	name   string
	values []string // never appended to in place: len == cap
}

var (
	errBadStatusLine  = errors.New("malformed status line")
	errBadField       = errors.New("malformed header field line")
	errObsFold        = errors.New("header field line folded (obs-fold)")
	errBadLength      = errors.New("malformed or conflicting Content-Length")
	errBadTE          = errors.New("unsupported Transfer-Encoding (only chunked)")
	errLengthAndTE    = errors.New("both Content-Length and Transfer-Encoding")
	errBadChunk       = errors.New("malformed chunked encoding")
	errTrailerTooLong = errors.New("upstream sent too big trailers: head and trailers more than 32 KiB")
)

// reset forgets the previous response, keeping modest storage for the next.
func (p *response) reset(br *bufio.Reader) {
	if cap(p.raw) > 64<<10 {
		p.raw = nil
	}
	if cap(p.fields) > 1024 {
		p.fields = nil
	}
	*p = response{raw: p.raw[:0], fields: p.fields[:0], br: br, ContentLength: -1, hdrLeft: maxResponseHeaderBytes, last: p.last, memo: p.memo}
}

// headMemo is a response head as the upstream sent it (wire) and as
// readResponse parsed it. An upstream answers a resource with the same
// head, byte for byte, for a second at a time (Date changes each second):
// a head equal to the memo's is taken from it (response.readResponse)
// instead of being read line by line and parsed again, which cost about
// a fifth of the proxy's own CPU per small response. Parsing depends only
// on the bytes and on whether the request was HEAD, and HEAD responses
// and 1xx heads are neither memoised nor looked up, so the result is the
// same. A memo is never changed once stored; its slices are copied out.
type headMemo struct {
	wire          []byte // status line to the empty line, line ends included
	status        int
	contentLength int64
	close         bool
	framing       int
	state         int
	remain        int64
	raw           []byte
	fields        []respField
	cl            span
	text          string
	relayed       []fieldValues // what copyHeader sets, shared read-only
	connection    []string
}

// maxMemoHead bounds the head a headMemo keeps, in bytes.
const maxMemoHead = 2048

var crlfcrlf = []byte("\r\n\r\n")

// bufferedHead returns the response head at the start of br's buffer,
// through the CRLF CRLF that ends it, reading once if the buffer is empty;
// nil when it is not all there, is longer than maxMemoHead, or a read
// failed (the parser then reads and reports as before).
func bufferedHead(br *bufio.Reader) []byte {
	if br.Buffered() == 0 {
		if _, err := br.Peek(1); err != nil {
			return nil
		}
	}
	b, _ := br.Peek(min(br.Buffered(), maxMemoHead))
	i := bytes.Index(b, crlfcrlf)
	if i < 0 {
		return nil
	}
	return b[:i+4]
}

// fromMemo makes p the head m holds, copying its slices into p's storage.
func (p *response) fromMemo(m *headMemo) {
	p.StatusCode, p.ContentLength, p.Close = m.status, m.contentLength, m.close
	p.framing, p.state, p.remain, p.cl = m.framing, m.state, m.remain, m.cl
	p.raw = append(p.raw[:0], m.raw...)
	p.fields = append(p.fields[:0], m.fields...)
	p.txt, p.relayed, p.connection = m.text, m.relayed, m.connection
}

// toMemo returns p's head, just parsed from wire, as a headMemo.
func (p *response) toMemo(wire []byte) *headMemo {
	m := &headMemo{
		wire:          bytes.Clone(wire),
		status:        p.StatusCode,
		contentLength: p.ContentLength,
		close:         p.Close,
		framing:       p.framing,
		state:         p.state,
		remain:        p.remain,
		raw:           bytes.Clone(p.raw),
		fields:        append([]respField(nil), p.fields...),
		cl:            p.cl,
		text:          p.text(),
	}
	// The fields as copyHeader sets them, once: a head from the memo sets
	// the same value slices in the engine's map (the engine and the
	// server's middleware replace or append to a field's values, never
	// write into them, as with the fields the server shares between
	// responses, such as Server), without a new []string, the names'
	// checks or the search for repeated names.
	h := http.Header{}
	p.txt = m.text
	m.connection = p.copyHeader(h)
	for k, vv := range h {
		m.relayed = append(m.relayed, fieldValues{k, vv[:len(vv):len(vv)]})
	}
	return m
}

// readLine appends one line to p.raw without its LF (and the CR before
// it), and returns where it starts. A line may be longer than br's buffer,
// up to max bytes.
func (p *response) readLine(max int64) (int, error) {
	start := len(p.raw)
	for {
		frag, err := p.br.ReadSlice('\n')
		p.raw = append(p.raw, frag...)
		if int64(len(p.raw)-start) > max {
			return start, errHeaderTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(p.raw) > start {
				err = io.ErrUnexpectedEOF
			}
			return start, err
		}
		break
	}
	n := len(p.raw) - 1 // the LF
	if n > start && p.raw[n-1] == '\r' {
		n--
	}
	p.raw = p.raw[:n]
	return start, nil
}

// readResponse reads one response head from br (after a request with the
// given method) into p. Bytes read are limited by the caller (conn.lr). A
// head that came whole in one read and equals the upstream's last one is
// taken from its memo (headMemo).
func (p *response) readResponse(br *bufio.Reader, method string) error {
	if p.memo == nil || method == http.MethodHead {
		return p.parseResponse(br, method)
	}
	wire := bufferedHead(br)
	if wire == nil {
		return p.parseResponse(br, method)
	}
	if m := p.memo.Load(); m != nil && bytes.Equal(m.wire, wire) {
		p.reset(br)
		p.fromMemo(m)
		br.Discard(len(wire))
		return nil
	}
	before := br.Buffered()
	if err := p.parseResponse(br, method); err != nil {
		return err
	}
	// Memoised when the parser took exactly these bytes (a head with
	// bare LF line ends may end earlier) and is a final one of a kind a
	// memo describes whole (no announced trailers).
	if before-br.Buffered() == len(wire) && p.StatusCode >= 200 && p.announced == nil {
		m := p.toMemo(wire)
		p.txt, p.relayed, p.connection = m.text, m.relayed, m.connection
		p.memo.Store(m)
	}
	return nil
}

// parseResponse reads and parses one response head (readResponse).
func (p *response) parseResponse(br *bufio.Reader, method string) error {
	p.reset(br)
	start, err := p.readLine(maxResponseHeaderBytes)
	if err != nil {
		return err
	}
	minor, status, ok := parseStatusLine(p.raw[start:])
	if !ok {
		return errBadStatusLine
	}
	p.StatusCode = status
	p.raw = p.raw[:0]
	var clSeen, te, keepAlive bool
	var teSpan span
	size := 0 // the header list size (limits.FieldSize)
	for {
		start, err := p.readLine(maxResponseHeaderBytes)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		line := p.raw[start:]
		if len(line) == 0 {
			break
		}
		f, err := parseField(p.raw, start)
		if err != nil {
			return err
		}
		if size += limits.FieldSize(int(f.name.end-f.name.start), int(f.value.end-f.value.start)); size > maxResponseHeaderBytes {
			return errHeaderTooLarge
		}
		name := p.raw[f.name.start:f.name.end]
		switch string(name) {
		case "Content-Length":
			v := p.raw[f.value.start:f.value.end]
			for len(v) > 0 {
				// A list of one value repeated is that value (RFC 9112
				// section 6.3 item 5); anything else is an error.
				var e []byte
				e, v = nextElement(v)
				n, ok := parseLength(e)
				if !ok || clSeen && n != p.ContentLength {
					return errBadLength
				}
				if !clSeen {
					for len(e) > 1 && e[0] == '0' {
						e = e[1:] // relayed as a number: "0004" is 4
					}
					// e lies in p.raw: its offset is how much less room
					// follows it.
					s := int32(cap(p.raw) - cap(e))
					p.cl = span{s, s + int32(len(e))}
				}
				clSeen, p.ContentLength = true, n
			}
			if !clSeen {
				return errBadLength // an empty value
			}
			continue // written again from p.cl, once
		case "Transfer-Encoding":
			if te {
				return errBadTE // one coding, one field
			}
			te, teSpan = true, f.value
			continue
		case "Connection":
			for v := p.raw[f.value.start:f.value.end]; len(v) > 0; {
				var e []byte
				e, v = nextElement(v)
				switch {
				case wire.EqualFoldASCII(e, "close"):
					p.Close = true
				case wire.EqualFoldASCII(e, "keep-alive"):
					keepAlive = true
				}
			}
		case "Trailer":
			// Names announced for after a chunked body (RFC 9110
			// section 6.6.2); framing and hop-by-hop names never go.
			for v := p.raw[f.value.start:f.value.end]; len(v) > 0; {
				var e []byte
				e, v = nextElement(v)
				if len(e) == 0 {
					continue
				}
				k := http.CanonicalHeaderKey(string(e))
				if !trailerAllowed(k) {
					continue
				}
				p.announced = append(p.announced, k)
			}
			continue
		}
		p.fields = append(p.fields, f)
	}
	if minor == 0 && !keepAlive {
		p.Close = true // HTTP/1.0: one response per connection unless kept alive
	}
	if te {
		if clSeen {
			return errLengthAndTE
		}
		if minor == 0 || !wire.EqualFoldASCII(p.raw[teSpan.start:teSpan.end], "chunked") {
			return errBadTE
		}
	}
	switch {
	case method == http.MethodHead || status < 200 || status == http.StatusNoContent || status == http.StatusNotModified:
		p.framing = respNone
		if status == http.StatusNoContent {
			p.cl = span{} // RFC 9110 section 8.6: none in a 204
		}
	case te:
		p.framing, p.state, p.ContentLength = respChunked, chunkSize, -1
	case clSeen:
		p.framing, p.remain = respLength, p.ContentLength
		if p.remain == 0 {
			p.framing = respNone
		}
	default:
		p.framing, p.Close = respClose, true
	}
	if p.framing != respChunked {
		p.announced = nil
	}
	return nil
}

// hasBody reports whether a body follows the head.
func (p *response) hasBody() bool { return p.framing != respNone }

// copyHeader adds the head's fields to hdr (which the engine owns) with
// one string and one []string for all of them, leaving out those
// skipResponseField names, and Content-Length once as parsed. It returns
// Connection's values, for the caller to parse. A head from a headMemo
// sets the memo's slices, allocating nothing.
func (p *response) copyHeader(hdr http.Header) (connection []string) {
	if p.relayed != nil || p.connection != nil {
		for _, f := range p.relayed {
			hdr[f.name] = f.values
		}
		return p.connection
	}
	skip := skipResponseField
	if len(p.fields) == 0 && p.cl.end == 0 {
		return nil
	}
	s := p.text()
	vals := make([]string, len(p.fields)+1)
	var many map[string]bool // names set, for heads with many fields
	if len(p.fields) > 32 {
		many = make(map[string]bool, len(p.fields))
	}
	n := 0
	for i, f := range p.fields {
		k, v := s[f.name.start:f.name.end], s[f.value.start:f.value.end]
		if k == "Connection" {
			connection = append(connection, v)
		}
		if skip(k) {
			continue
		}
		again := false
		if many != nil {
			again = many[k]
			many[k] = true
		} else {
			for _, g := range p.fields[:i] {
				if s[g.name.start:g.name.end] == k {
					again = true
					break
				}
			}
		}
		if again {
			hdr[k] = append(hdr[k], v)
			continue
		}
		vals[n] = v
		hdr[k] = vals[n : n+1 : n+1]
		n++
	}
	if p.cl.end > 0 {
		vals[n] = s[p.cl.start:p.cl.end]
		hdr["Content-Length"] = vals[n : n+1 : n+1]
	}
	return connection
}

// text is raw as a string: the upstream's previous one when it is the
// same text (an upstream answers a resource with the same fields, Date
// included, for a second), else a new one. The same strings make the
// HTTP/1.1 engine's response head a copy of the one it wrote last (h1's
// fieldMemo compares values by identity) instead of sorting, checking and
// cleaning each field again, and save the allocation.
func (p *response) text() string {
	if p.txt != "" {
		return p.txt
	}
	if p.last == nil {
		return string(p.raw)
	}
	if q := p.last.Load(); q != nil && *q == string(p.raw) {
		return *q
	}
	s := string(p.raw)
	p.last.Store(&s)
	return s
}

// Header returns the head's fields as a new map, Content-Length included
// (for 1xx and 101 responses, which are rare: it allocates).
func (p *response) Header() http.Header {
	h := make(http.Header, len(p.fields)+1)
	s := string(p.raw)
	for _, f := range p.fields {
		k := s[f.name.start:f.name.end]
		h[k] = append(h[k], s[f.value.start:f.value.end])
	}
	if p.cl.end > 0 {
		h["Content-Length"] = []string{s[p.cl.start:p.cl.end]}
	}
	return h
}

// bufferedBody returns the rest of a body of known length when all of it
// is in br's buffer, consuming it: the bytes stay valid until br reads
// again.
func (p *response) bufferedBody() ([]byte, bool) {
	if p.framing != respLength || p.remain > int64(p.br.Buffered()) {
		return nil, false
	}
	b, _ := p.br.Peek(int(p.remain))
	p.br.Discard(len(b))
	p.remain = 0
	return b, true
}

// Chunked body states.
const (
	chunkSize = iota // a chunk-size line is next
	chunkData        // remain bytes of chunk data are next
	chunkEnd         // the CRLF after chunk data is next
	chunkDone        // the last chunk and trailers were read
)

// Read reads the body, decoding chunked framing; io.EOF at its end. An
// upstream that closes early gives io.ErrUnexpectedEOF.
func (p *response) Read(b []byte) (int, error) {
	switch p.framing {
	case respNone:
		return 0, io.EOF
	case respLength:
		if p.remain <= 0 {
			return 0, io.EOF
		}
		if int64(len(b)) > p.remain {
			b = b[:p.remain]
		}
		n, err := p.br.Read(b)
		p.remain -= int64(n)
		if p.remain == 0 {
			return n, io.EOF
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	case respClose:
		return p.br.Read(b)
	}
	// Chunked: go on past chunk boundaries while the framing is already
	// buffered, so that after a read the buffer is empty exactly when the
	// next byte must wait for the upstream (relay flushes then).
	n := 0
	for {
		switch p.state {
		case chunkDone:
			return n, io.EOF
		case chunkData:
			if n == len(b) || n > 0 && p.br.Buffered() == 0 {
				return n, nil
			}
			m := b[n:]
			if int64(len(m)) > p.remain {
				m = m[:p.remain]
			}
			k, err := p.br.Read(m)
			n += k
			p.remain -= int64(k)
			if p.remain == 0 {
				p.state = chunkEnd
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			if err != nil {
				return n, err
			}
		case chunkEnd:
			if n > 0 && !p.lineBuffered() {
				return n, nil
			}
			line, err := p.chunkLine()
			if err != nil {
				return n, err
			}
			if len(line) != 0 {
				return n, errBadChunk
			}
			p.state = chunkSize
		case chunkSize:
			if n > 0 && !p.lineBuffered() {
				return n, nil
			}
			if n > 0 {
				// The last chunk's trailers may not be here: leave it for
				// the next read.
				if l, _ := p.br.Peek(1); len(l) == 1 && l[0] == '0' {
					return n, nil
				}
			}
			line, err := p.chunkLine()
			if err != nil {
				return n, err
			}
			size, ok := wire.ParseChunkSize(line)
			if !ok {
				return n, errBadChunk
			}
			if size == 0 {
				if err := p.readTrailers(); err != nil {
					return n, err
				}
				p.state = chunkDone
				return n, io.EOF
			}
			p.state, p.remain = chunkData, size
		}
	}
}

// lineBuffered reports whether a whole line is in br's buffer.
func (p *response) lineBuffered() bool {
	buf, _ := p.br.Peek(p.br.Buffered())
	return bytes.IndexByte(buf, '\n') >= 0
}

// maxChunkLine bounds a chunk-size line with its extensions, in bytes.
const maxChunkLine = 4096

// chunkLine reads a line of chunked framing within br's buffer, without
// its CRLF (or LF), at most maxChunkLine bytes. A CR elsewhere in it makes
// it malformed.
func (p *response) chunkLine() ([]byte, error) {
	line, err := p.br.ReadSlice('\n')
	if err == nil && len(line) > maxChunkLine {
		err = bufio.ErrBufferFull
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		} else if err == bufio.ErrBufferFull {
			err = errBadChunk
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readTrailers reads the trailer section after the last chunk (RFC 9112
// section 7.1.2) into p.Trailer, within what is left of the head limit.
func (p *response) readTrailers() error {
	left := p.hdrLeft
	p.raw, p.txt, p.relayed, p.connection = p.raw[:0], "", nil, nil
	for {
		start, err := p.readLine(left)
		if err == errHeaderTooLarge {
			return errTrailerTooLong
		}
		if err != nil {
			return err
		}
		if left -= int64(len(p.raw)-start) + 2; left < 0 {
			return errTrailerTooLong
		}
		if len(p.raw) == start {
			return nil
		}
		f, err := parseField(p.raw, start)
		if err != nil {
			return err
		}
		k := string(p.raw[f.name.start:f.name.end])
		if !contains(p.announced, k) {
			continue // not announced, or not allowed (trailerAllowed)
		}
		if p.Trailer == nil {
			p.Trailer = http.Header{}
		}
		p.Trailer[k] = append(p.Trailer[k], string(p.raw[f.value.start:f.value.end]))
	}
}

// trailerAllowed reports whether an upstream's trailer field is relayed
// (when its Trailer field announced it, RFC 9110 section 6.6.2): not one
// RFC 9110 section 6.5.1 forbids in trailers, that frames the message
// (Content-*, Transfer-Encoding, Trailer), routes it (Host), authenticates
// (Set-Cookie, WWW-Authenticate, Authentication-Info, Proxy-*), or
// controls the response (Cache-Control, Expires, Age, Date, Vary,
// Location, Retry-After, ETag, Last-Modified, Server); and not a hop-by-hop
// one. A client that acts on such a field in the header section would
// never see it there: a proxy that relays it lets an upstream smuggle
// cookies or cache rules past whoever checks the header section.
func trailerAllowed(k string) bool {
	switch k {
	case "Transfer-Encoding", "Trailer", "Host", "Set-Cookie", "Cookie",
		"Authorization", "Www-Authenticate", "Authentication-Info",
		"Cache-Control", "Expires", "Age", "Date", "Vary", "Location", "Retry-After",
		"Etag", "Last-Modified", "Server", "Pragma", "Max-Forwards", "Range", "Expect":
		return false
	}
	if len(k) > 8 && k[:8] == "Content-" || len(k) > 6 && k[:6] == "Proxy-" {
		return false
	}
	return !responseHopByHop(k)
}

// parseStatusLine parses "HTTP/1.x SP 3DIGIT [SP reason]" (RFC 9112
// section 4).
func parseStatusLine(l []byte) (minor, status int, ok bool) {
	if len(l) < 12 || string(l[:7]) != "HTTP/1." || l[7] < '0' || l[7] > '9' || l[8] != ' ' {
		return 0, 0, false
	}
	for _, c := range l[9:12] {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		status = status*10 + int(c-'0')
	}
	if status < 100 || status > 599 {
		return 0, 0, false
	}
	if len(l) > 12 {
		if l[12] != ' ' {
			return 0, 0, false
		}
		for _, c := range l[13:] {
			if c != '\t' && (c < ' ' || c == 0x7f) {
				return 0, 0, false
			}
		}
	}
	return int(l[7] - '0'), status, true
}

// parseField checks the field line raw[start:] and puts its name in
// canonical form in place (as net/http's maps hold names).
func parseField(raw []byte, start int) (respField, error) {
	line := raw[start:]
	if line[0] == ' ' || line[0] == '\t' {
		return respField{}, errObsFold
	}
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return respField{}, errBadField
	}
	upper := true
	for i := 0; i < colon; i++ {
		c := line[i]
		if !isTchar(c) {
			return respField{}, errBadField
		}
		switch {
		case upper && 'a' <= c && c <= 'z':
			line[i] = c - ('a' - 'A')
		case !upper && 'A' <= c && c <= 'Z':
			line[i] = c + ('a' - 'A')
		}
		upper = c == '-'
	}
	vs, ve := colon+1, len(line)
	for vs < ve && (line[vs] == ' ' || line[vs] == '\t') {
		vs++
	}
	for ve > vs && (line[ve-1] == ' ' || line[ve-1] == '\t') {
		ve--
	}
	for _, c := range line[vs:ve] {
		if c != '\t' && (c < ' ' || c == 0x7f) {
			return respField{}, errBadField // NUL, a bare CR, other controls
		}
	}
	s := int32(start)
	return respField{name: span{s, s + int32(colon)}, value: span{s + int32(vs), s + int32(ve)}}, nil
}

// parseLength parses a Content-Length value: decimal digits only, at most
// 18 of them.
func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// nextElement splits the first element off a comma-separated field value
// (RFC 9110 section 5.6.1), optional whitespace trimmed: e lies in v (its
// offset in the head is kept for Content-Length), rest follows the comma.
func nextElement(v []byte) (e, rest []byte) {
	if i := bytes.IndexByte(v, ','); i >= 0 {
		return trimOWS(v[:i]), v[i+1:]
	}
	return trimOWS(v), nil
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// skipResponseField names the response fields not relayed: hop-by-hop
// ones (RFC 9110 section 7.6.1) and Server (the engine sends its own).
func skipResponseField(k string) bool {
	return k == "Server" || responseHopByHop(k)
}

// skipInterimField names the fields of an upstream 1xx response not
// relayed: framing (a 1xx has no content, RFC 9110 section 15.2), hop-by-hop
// ones (RFC 9110 section 7.6.1), Proxy-* and those the engine sets itself
// (Server, Date).
func skipInterimField(k string) bool {
	switch k {
	case "Content-Length", "Date":
		return true
	}
	return skipResponseField(k) || len(k) > 6 && k[:6] == "Proxy-"
}
