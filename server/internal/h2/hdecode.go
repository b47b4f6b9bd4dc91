package h2

import (
	"encoding/binary"
	"errors"
	"io"
	"strings"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// blockDecoder decodes header blocks (a HEADERS frame and its
// CONTINUATION frames) into one reused MetaHeadersFrame and field slice,
// with the checks x/net's Framer makes when it decodes them itself
// (Framer.ReadMetaHeaders): RFC 9113 section 8.2.1 field names and values,
// pseudo-header fields first (8.3), none unknown, repeated, or of a
// response in a request, and the header list size bound. Decoding them
// here saves the MetaHeadersFrame, the growth of its Fields slice and the
// emit closures x/net allocates for every block: 8 of the 20 allocations
// of a small static response over HTTP/2 (make bench-go).
//
// Used by the reader goroutine only. The frame and its Fields are valid
// until the next block is read: handlers get copies (newRequest,
// onTrailers).
type blockDecoder struct {
	dec     *hpack.Decoder
	meta    http2.MetaHeadersFrame
	hf      http2.HeadersFrame  // the HEADERS frame of meta (readFrame)
	payload []byte              // its payload, reused up to maxReusedPayload
	fields  []hpack.HeaderField // backing store of meta.Fields, reused

	headersLeft, trailersLeft uint32 // header list size budget (RFC 9113 6.5.2)
	sawRegular                bool
	invalid                   error
}

var (
	errFieldValue    = errors.New("h2: invalid header field value")
	errFieldName     = errors.New("h2: invalid header field name")
	errPseudoLate    = errors.New("h2: pseudo-header field after a regular one")
	errPseudoUnknown = errors.New("h2: unknown pseudo-header field")
	errPseudoRepeat  = errors.New("h2: repeated pseudo-header field")
	errPseudoMixed   = errors.New("h2: request and response pseudo-header fields mixed")
)

// maxReusedFields bounds the field slice kept between blocks.
const maxReusedFields = 64

func (d *blockDecoder) init(maxListSize uint32) {
	d.dec = hpack.NewDecoder(4096, d.emit)
	d.dec.SetMaxStringLength(int(maxListSize))
}

func (d *blockDecoder) emit(hf hpack.HeaderField) {
	// RFC 9113 section 8.2.1: no CR, LF or NUL in a value, and no
	// whitespace (SP, HTAB) at its start or end.
	if v := hf.Value; !httpguts.ValidHeaderFieldValue(v) ||
		v != "" && (v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		d.invalid = errFieldValue
	}
	if strings.HasPrefix(hf.Name, ":") {
		if d.sawRegular {
			d.invalid = errPseudoLate
		}
	} else {
		d.sawRegular = true
		if !validFieldName(hf.Name) {
			d.invalid = errFieldName
		}
	}
	if d.invalid != nil {
		d.dec.SetEmitEnabled(false)
		return
	}
	left, size := &d.headersLeft, hf.Size()
	if hf.Name == "trailer" {
		// Counted as the fields it announces would be, as x/net does.
		left = &d.trailersLeft
		n := uint32(strings.Count(hf.Value, ",") + 1)
		size = uint32(len(hf.Value)) - n + 1 + n*hpack.HeaderField{}.Size()
	}
	if size > *left {
		d.dec.SetEmitEnabled(false)
		d.meta.Truncated = true
		d.headersLeft, d.trailersLeft = 0, 0
		return
	}
	*left -= size
	d.meta.Fields = append(d.meta.Fields, hf)
}

// validFieldName reports whether a field name from the wire is a token in
// lower case (RFC 9113 section 8.2.1).
func validFieldName(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		r := v[i]
		if !httpguts.IsTokenRune(rune(r)) || 'A' <= r && r <= 'Z' {
			return false
		}
	}
	return true
}

// maxReusedPayload bounds the HEADERS payload buffer kept between frames.
const maxReusedPayload = 4 << 10

// readFrame reads the next frame. A HEADERS frame, which opens every
// request, is read into the decoder's reused frame and payload buffer, as
// x/net would parse it (RFC 9113 section 6.2) but without allocating a
// frame for each; its header block is decoded (readHeaderBlock). Other
// frames are x/net's.
func (c *conn) readFrame() (http2.Frame, error) {
	fh, err := c.fr.ReadFrameHeader() // also checks HEADERS/CONTINUATION order
	if err != nil {
		return nil, err
	}
	if fh.Type != http2.FrameHeaders {
		return c.fr.ReadFrameForHeader(fh)
	}
	d := &c.hd
	if uint32(cap(d.payload)) < fh.Length {
		d.payload = make([]byte, fh.Length)
	}
	p := d.payload[:fh.Length]
	if cap(d.payload) > maxReusedPayload {
		d.payload = nil
	}
	if _, err := io.ReadFull(&c.guard, p); err != nil {
		return nil, err
	}
	if fh.StreamID == 0 {
		return nil, connErr(http2.ErrCodeProtocol)
	}
	d.hf = http2.HeadersFrame{FrameHeader: fh}
	pad := 0
	if fh.Flags.Has(http2.FlagHeadersPadded) {
		if len(p) < 1 {
			return nil, connErr(http2.ErrCodeFrameSize)
		}
		pad, p = int(p[0]), p[1:]
	}
	if fh.Flags.Has(http2.FlagHeadersPriority) {
		if len(p) < 5 {
			return nil, connErr(http2.ErrCodeFrameSize)
		}
		v := binary.BigEndian.Uint32(p)
		d.hf.Priority.StreamDep = v & 0x7fffffff
		d.hf.Priority.Exclusive = v != d.hf.Priority.StreamDep
		d.hf.Priority.Weight = p[4]
		p = p[5:]
	}
	if pad > len(p) {
		return nil, connErr(http2.ErrCodeProtocol) // section 6.2
	}
	return c.readHeaderBlock(&d.hf, p[:len(p)-pad])
}

// readHeaderBlock decodes the block that hf starts, reading its
// CONTINUATION frames (the Framer has checked their order). Errors are
// what x/net's Framer returns for the same input: a ConnectionError for a
// block too large to be worth decoding, bytes after an invalid field or a
// bad HPACK encoding, a StreamError for invalid fields.
func (c *conn) readHeaderBlock(hf *http2.HeadersFrame, frag []byte) (*http2.MetaHeadersFrame, error) {
	d := &c.hd
	d.meta = http2.MetaHeadersFrame{HeadersFrame: hf, Fields: d.fields[:0]}
	d.headersLeft, d.trailersLeft = c.fr.MaxHeaderListSize, c.fr.MaxHeaderListSize
	d.sawRegular, d.invalid = false, nil
	d.dec.SetEmitEnabled(true)
	defer func() {
		if cap(d.meta.Fields) <= maxReusedFields {
			d.fields = d.meta.Fields[:0]
		}
	}()
	ended := hf.HeadersEnded()
	for {
		// Beyond twice what is left of the budget the block is not
		// decoded; after an invalid field it is not tracked any more.
		if int64(len(frag)) > 2*(int64(d.headersLeft)+int64(d.trailersLeft)) || d.invalid != nil {
			return nil, connErr(http2.ErrCodeProtocol)
		}
		if _, err := d.dec.Write(frag); err != nil {
			return nil, connErr(http2.ErrCodeCompression)
		}
		if ended {
			break
		}
		f, err := c.fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		cf, ok := f.(*http2.ContinuationFrame)
		if !ok {
			return nil, connErr(http2.ErrCodeProtocol)
		}
		frag, ended = cf.HeaderBlockFragment(), cf.HeadersEnded()
	}
	if err := d.dec.Close(); err != nil {
		return nil, connErr(http2.ErrCodeCompression)
	}
	if d.invalid != nil {
		return nil, http2.StreamError{StreamID: hf.StreamID, Code: http2.ErrCodeProtocol, Cause: d.invalid}
	}
	if err := checkPseudos(d.meta.PseudoFields()); err != nil {
		return nil, http2.StreamError{StreamID: hf.StreamID, Code: http2.ErrCodeProtocol, Cause: err}
	}
	return &d.meta, nil
}

// checkPseudos rejects unknown and repeated pseudo-header fields and a mix
// of request and response ones (RFC 9113 section 8.3).
func checkPseudos(pf []hpack.HeaderField) error {
	var request, response bool
	for i, hf := range pf {
		switch hf.Name {
		case ":method", ":path", ":scheme", ":authority", ":protocol":
			request = true
		case ":status":
			response = true
		default:
			return errPseudoUnknown
		}
		for _, prev := range pf[:i] {
			if prev.Name == hf.Name {
				return errPseudoRepeat
			}
		}
	}
	if request && response {
		return errPseudoMixed
	}
	return nil
}
