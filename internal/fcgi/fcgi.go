// Package fcgi encodes and decodes FastCGI 1.0 records: the wire format
// between a web server and an application server such as php-fpm.
//
// It knows records, not requests: a record header (8 bytes), the
// BEGIN_REQUEST, ABORT_REQUEST and END_REQUEST bodies, name-value pairs
// with 1- and 4-byte lengths, and stream records (PARAMS, STDIN, STDOUT,
// STDERR) split at 65535 bytes and padded to a multiple of 8. Section
// numbers refer to the FastCGI Specification 1.0 (Open Market, 1996).
//
// Every function appends to or reads from caller-owned buffers, so a
// client can encode a whole request into one reused buffer and send it
// with one write.
package fcgi

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Version1 is the only protocol version (section 8, FCGI_VERSION_1).
const Version1 = 1

// Record types (section 8).
const (
	TypeBeginRequest    = 1
	TypeAbortRequest    = 2
	TypeEndRequest      = 3
	TypeParams          = 4
	TypeStdin           = 5
	TypeStdout          = 6
	TypeStderr          = 7
	TypeData            = 8
	TypeGetValues       = 9
	TypeGetValuesResult = 10
	TypeUnknownType     = 11
)

// RoleResponder is the role of a request that is answered with a response
// (section 6.2); the only role Arka uses.
const RoleResponder = 1

// FlagKeepConn in BEGIN_REQUEST asks the application to keep the
// connection open after the request (section 5.1).
const FlagKeepConn = 1

// Protocol status values of END_REQUEST (section 5.5).
const (
	StatusRequestComplete = 0
	StatusCantMpxConn     = 1
	StatusOverloaded      = 2
	StatusUnknownRole     = 3
)

const (
	// HeaderLen is the size of a record header in bytes.
	HeaderLen = 8
	// MaxContent is the largest content of one record: contentLength is
	// 16 bits.
	MaxContent = 65535
	// maxAligned is the largest content length that is a multiple of 8, so
	// a full record needs no padding.
	maxAligned = MaxContent &^ 7
)

// Errors returned by the decoders.
var (
	ErrVersion   = errors.New("fcgi: record version is not 1")
	ErrShortBody = errors.New("fcgi: record body too short")
	ErrPair      = errors.New("fcgi: malformed name-value pair")
	ErrPairSize  = errors.New("fcgi: name-value pair larger than one record")
)

// Header is a record header (section 3.3).
type Header struct {
	Version       uint8
	Type          uint8
	RequestID     uint16
	ContentLength uint16
	PaddingLength uint8
}

// ParseHeader decodes an 8-byte record header. It returns ErrVersion for a
// version other than 1; b must hold at least HeaderLen bytes.
func ParseHeader(b []byte) (Header, error) {
	_ = b[7]
	h := Header{
		Version:       b[0],
		Type:          b[1],
		RequestID:     binary.BigEndian.Uint16(b[2:4]),
		ContentLength: binary.BigEndian.Uint16(b[4:6]),
		PaddingLength: b[6],
	}
	if h.Version != Version1 {
		return h, ErrVersion
	}
	return h, nil
}

// TypeName names a record type for messages ("STDOUT", "type 42").
func TypeName(t uint8) string {
	names := [...]string{"", "BEGIN_REQUEST", "ABORT_REQUEST", "END_REQUEST", "PARAMS", "STDIN",
		"STDOUT", "STDERR", "DATA", "GET_VALUES", "GET_VALUES_RESULT", "UNKNOWN_TYPE"}
	if int(t) < len(names) && t != 0 {
		return names[t]
	}
	return fmt.Sprintf("type %d", t)
}

// pad returns the padding that makes n a multiple of 8 (section 3.3
// recommends aligned records; php-fpm pads the same way).
func pad(n int) int { return -n & 7 }

// AppendHeader appends a record header.
func AppendHeader(dst []byte, typ uint8, id uint16, contentLen, padLen int) []byte {
	return append(dst, Version1, typ, byte(id>>8), byte(id), byte(contentLen>>8), byte(contentLen), byte(padLen), 0)
}

func putHeader(b []byte, typ uint8, id uint16, contentLen, padLen int) {
	_ = b[7]
	b[0], b[1] = Version1, typ
	b[2], b[3] = byte(id>>8), byte(id)
	b[4], b[5] = byte(contentLen>>8), byte(contentLen)
	b[6], b[7] = byte(padLen), 0
}

// AppendBeginRequest appends a BEGIN_REQUEST record (section 5.1).
func AppendBeginRequest(dst []byte, id uint16, role uint16, flags uint8) []byte {
	dst = AppendHeader(dst, TypeBeginRequest, id, 8, 0)
	return append(dst, byte(role>>8), byte(role), flags, 0, 0, 0, 0, 0)
}

// AppendAbortRequest appends an ABORT_REQUEST record (section 5.4).
func AppendAbortRequest(dst []byte, id uint16) []byte {
	return AppendHeader(dst, TypeAbortRequest, id, 0, 0)
}

// AppendEndRequest appends an END_REQUEST record (section 5.5). Clients do
// not send it; tests and fuzzing use it to build application output.
func AppendEndRequest(dst []byte, id uint16, appStatus uint32, protocolStatus uint8) []byte {
	dst = AppendHeader(dst, TypeEndRequest, id, 8, 0)
	return append(dst, byte(appStatus>>24), byte(appStatus>>16), byte(appStatus>>8), byte(appStatus),
		protocolStatus, 0, 0, 0)
}

// EndRequest is the body of an END_REQUEST record.
type EndRequest struct {
	AppStatus      uint32 // the application's exit status
	ProtocolStatus uint8  // StatusRequestComplete, ...
}

// ParseEndRequest decodes an END_REQUEST body (8 bytes; longer bodies are
// accepted and the rest ignored).
func ParseEndRequest(b []byte) (EndRequest, error) {
	if len(b) < 8 {
		return EndRequest{}, ErrShortBody
	}
	return EndRequest{AppStatus: binary.BigEndian.Uint32(b[0:4]), ProtocolStatus: b[4]}, nil
}

// AppendStream appends content as stream records of type typ, each at most
// 65535 bytes and padded to a multiple of 8. Empty content appends nothing:
// the empty record that closes a stream is AppendHeader(dst, typ, id, 0, 0).
func AppendStream(dst []byte, typ uint8, id uint16, content []byte) []byte {
	for len(content) > 0 {
		n := min(len(content), maxAligned)
		p := pad(n)
		dst = AppendHeader(dst, typ, id, n, p)
		dst = append(dst, content[:n]...)
		dst = append(dst, zeros[:p]...)
		content = content[n:]
	}
	return dst
}

var zeros [8]byte

// PairLen is the encoded size of a name-value pair (section 3.4): each
// length takes 1 byte below 128 and 4 bytes otherwise.
func PairLen(nameLen, valueLen int) int {
	return lenLen(nameLen) + lenLen(valueLen) + nameLen + valueLen
}

func lenLen(n int) int {
	if n < 128 {
		return 1
	}
	return 4
}

// AppendLength appends one name-value pair length (section 3.4).
func AppendLength(dst []byte, n int) []byte {
	if n < 128 {
		return append(dst, byte(n))
	}
	return append(dst, byte(n>>24)|0x80, byte(n>>16), byte(n>>8), byte(n))
}

// ParsePair decodes the name-value pair at the start of b and returns it
// with the number of bytes it took. name and value alias b.
func ParsePair(b []byte) (name, value []byte, n int, err error) {
	nl, i, ok := parseLen(b, 0)
	if !ok {
		return nil, nil, 0, ErrPair
	}
	vl, i, ok := parseLen(b, i)
	if !ok || nl > len(b)-i || vl > len(b)-i-nl {
		return nil, nil, 0, ErrPair
	}
	return b[i : i+nl], b[i+nl : i+nl+vl], i + nl + vl, nil
}

func parseLen(b []byte, i int) (int, int, bool) {
	if i >= len(b) {
		return 0, i, false
	}
	if b[i] < 0x80 {
		return int(b[i]), i + 1, true
	}
	if len(b)-i < 4 {
		return 0, i, false
	}
	return int(binary.BigEndian.Uint32(b[i:]) & 0x7fffffff), i + 4, true
}

// ParamsWriter appends name-value pairs to a buffer as PARAMS records
// (section 5.2). A pair never spans two records, because php-fpm decodes
// each record on its own; a pair larger than one record is ErrPairSize.
// Start each request with Begin.
type ParamsWriter struct {
	Buf   []byte
	id    uint16
	start int // offset of the open record's header, or -1
}

// Begin starts appending PARAMS records for request id to buf.
func (w *ParamsWriter) Begin(buf []byte, id uint16) {
	w.Buf, w.id, w.start = buf, id, -1
}

// Reserve makes room for a pair of the given lengths and returns the
// buffer to append it to (call AppendLength twice, then the bytes). It
// closes the open record when the pair does not fit in it.
func (w *ParamsWriter) Reserve(nameLen, valueLen int) error {
	n := PairLen(nameLen, valueLen)
	if n > maxAligned {
		return ErrPairSize
	}
	if w.start >= 0 && len(w.Buf)-w.start-HeaderLen+n > maxAligned {
		w.closeRecord()
	}
	if w.start < 0 {
		w.start = len(w.Buf)
		w.Buf = append(w.Buf, zeros[:HeaderLen]...)
	}
	return nil
}

// Add appends one pair.
func (w *ParamsWriter) Add(name, value string) error {
	if err := w.Reserve(len(name), len(value)); err != nil {
		return err
	}
	w.Buf = AppendLength(w.Buf, len(name))
	w.Buf = AppendLength(w.Buf, len(value))
	w.Buf = append(w.Buf, name...)
	w.Buf = append(w.Buf, value...)
	return nil
}

// AddBytes is Add with the value in a byte slice. It repeats Add's body
// on purpose: one generic function over string | []byte made the value
// escape, an allocation per parameter (BenchmarkParams in fastcgi: 0 -> 1
// allocs/op).
func (w *ParamsWriter) AddBytes(name string, value []byte) error {
	if err := w.Reserve(len(name), len(value)); err != nil {
		return err
	}
	w.Buf = AppendLength(w.Buf, len(name))
	w.Buf = AppendLength(w.Buf, len(value))
	w.Buf = append(w.Buf, name...)
	w.Buf = append(w.Buf, value...)
	return nil
}

// AddEncoded appends pairs that are already encoded (with AppendLength),
// such as the parameters that are the same for every request. Malformed
// input is dropped from the first bad pair on.
func (w *ParamsWriter) AddEncoded(pairs []byte) {
	if w.start >= 0 && len(w.Buf)-w.start-HeaderLen+len(pairs) <= maxAligned {
		w.Buf = append(w.Buf, pairs...) // fast path: all fit in the open record
		return
	}
	for len(pairs) > 0 {
		_, _, n, err := ParsePair(pairs)
		if err != nil || n > maxAligned {
			return
		}
		if w.start >= 0 && len(w.Buf)-w.start-HeaderLen+n > maxAligned {
			w.closeRecord()
		}
		if w.start < 0 {
			w.start = len(w.Buf)
			w.Buf = append(w.Buf, zeros[:HeaderLen]...)
		}
		w.Buf = append(w.Buf, pairs[:n]...)
		pairs = pairs[n:]
	}
}

func (w *ParamsWriter) closeRecord() {
	n := len(w.Buf) - w.start - HeaderLen
	p := pad(n)
	putHeader(w.Buf[w.start:], TypeParams, w.id, n, p)
	w.Buf = append(w.Buf, zeros[:p]...)
	w.start = -1
}

// End closes the open record and appends the empty PARAMS record that ends
// the stream. It returns the buffer.
func (w *ParamsWriter) End() []byte {
	if w.start >= 0 {
		w.closeRecord()
	}
	w.Buf = AppendHeader(w.Buf, TypeParams, w.id, 0, 0)
	return w.Buf
}

// StdinRecord fills buf[:HeaderLen] with the header of a STDIN record whose
// n content bytes are at buf[HeaderLen:HeaderLen+n], zeroes the padding
// after them, and returns the whole record. buf must have room for
// HeaderLen+n+7 bytes and n must be at most 65535. This lets a client read
// a request body straight into its write buffer.
func StdinRecord(buf []byte, id uint16, n int) []byte {
	p := pad(n)
	putHeader(buf, TypeStdin, id, n, p)
	clear(buf[HeaderLen+n : HeaderLen+n+p])
	return buf[:HeaderLen+n+p]
}

// Reader reads records from a buffered stream. After Next returns a
// header, the record's content is consumed with Peek and Discard or
// ReadContent; the next call to Next skips whatever is left of it and its
// padding, so content never has to be held whole: records up to 64 KiB
// pass through a smaller buffer.
type Reader struct {
	br     *bufio.Reader
	remain int // content bytes left in the current record
	pad    int // padding bytes after them
	hdr    [HeaderLen]byte
}

// NewReader returns a Reader on br.
func NewReader(br *bufio.Reader) *Reader { return &Reader{br: br} }

// Reset makes r read from br and forget any current record.
func (r *Reader) Reset(br *bufio.Reader) { *r = Reader{br: br} }

// Next skips the rest of the current record and reads the next header.
// It returns io.EOF only when the stream ends cleanly between records,
// and io.ErrUnexpectedEOF when it ends inside one.
func (r *Reader) Next() (Header, error) {
	if err := r.skip(); err != nil {
		return Header{}, err
	}
	n, err := io.ReadFull(r.br, r.hdr[:])
	if err != nil {
		if err == io.ErrUnexpectedEOF || (err == io.EOF && n > 0) {
			return Header{}, io.ErrUnexpectedEOF
		}
		return Header{}, err
	}
	h, err := ParseHeader(r.hdr[:])
	if err != nil {
		return h, err
	}
	r.remain, r.pad = int(h.ContentLength), int(h.PaddingLength)
	return h, nil
}

// Skip discards what is left of the current record and its padding, so
// that the stream stands at the next record header.
func (r *Reader) Skip() error { return r.skip() }

func (r *Reader) skip() error {
	n := r.remain + r.pad
	if n == 0 {
		return nil
	}
	r.remain, r.pad = 0, 0
	if _, err := r.br.Discard(n); err != nil {
		return eofInRecord(err)
	}
	return nil
}

func eofInRecord(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Remaining is the number of content bytes of the current record not yet
// consumed.
func (r *Reader) Remaining() int { return r.remain }

// Buffered is the number of bytes of later records that can be read
// without blocking: zero means the next Next, after this record, would
// wait for the peer.
func (r *Reader) Buffered() int { return max(0, r.br.Buffered()-r.remain-r.pad) }

// Peek returns the next content bytes of the current record: all of them
// that are buffered, reading from the stream only when none are. The slice
// is valid until the next call on r; consume it with Discard. It returns
// io.EOF at the end of the record's content.
func (r *Reader) Peek() ([]byte, error) {
	if r.remain == 0 {
		return nil, io.EOF
	}
	n := min(r.remain, r.br.Buffered())
	if n == 0 {
		if _, err := r.br.Peek(1); err != nil {
			return nil, eofInRecord(err)
		}
		n = min(r.remain, r.br.Buffered())
	}
	return r.br.Peek(n)
}

// Discard consumes n content bytes returned by Peek.
func (r *Reader) Discard(n int) {
	n = min(n, r.remain)
	d, _ := r.br.Discard(n)
	r.remain -= d
}

// ReadContent reads the rest of the current record's content into p, which
// must be large enough, and returns the filled part.
func (r *Reader) ReadContent(p []byte) ([]byte, error) {
	if len(p) < r.remain {
		return nil, ErrShortBody
	}
	n, err := io.ReadFull(r.br, p[:r.remain])
	r.remain -= n
	if err != nil {
		return nil, eofInRecord(err)
	}
	return p[:n], nil
}
