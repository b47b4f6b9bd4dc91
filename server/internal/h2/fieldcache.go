package h2

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/net/http2/hpack"
)

// Response header fields whose value strings live on between responses
// (a static file's ETag, Last-Modified, Content-Type, Content-Length and
// Cache-Control, the Date of the current second, constants) are encoded
// once and copied into every header block after: as "literal header
// field without indexing" (RFC 7541 section 6.2.2), with the name from
// the static table where it is there and the value Huffman-coded where
// that is shorter. Such a representation does not depend on the
// connection's dynamic table, so one copy serves every connection, as
// nginx sends its response fields. Encoding each field through the
// dynamic table (hpack.Encoder: two map lookups, and Huffman coding on a
// miss), with the checks of its name and value, took 11% of the CPU of a
// small static page over HTTP/2.
//
// The cache is a direct-mapped table indexed by the address of the value
// string's bytes, so a lookup hashes nothing; a hit still compares name
// and value (string equality), so an entry can only ever be used for the
// very field it encodes. A field is cached the second time its value's
// address is seen in a slot, so a value made per response (a proxied
// answer's Content-Length, a cookie) costs no allocation. It is bounded:
// fieldSlots entries of at most maxCachedValue bytes each.
const (
	fieldSlots     = 1024
	maxCachedValue = 256
)

type cachedField struct {
	name, value string // the field as the handler set it (canonical name)
	enc         []byte
}

var (
	fieldCache [fieldSlots]atomic.Pointer[cachedField]
	fieldSeen  [fieldSlots]atomic.Uintptr // value address last missed in the slot
)

func fieldSlot(v string) (int, uintptr) {
	p := uintptr(unsafe.Pointer(unsafe.StringData(v)))
	return int((p>>4^p>>14)+uintptr(len(v))) & (fieldSlots - 1), p
}

// cachedEncoding returns the encoding of the field name: v, or nil.
func cachedEncoding(name, v string) []byte {
	if len(v) == 0 || len(v) > maxCachedValue {
		return nil
	}
	i, _ := fieldSlot(v)
	if e := fieldCache[i].Load(); e != nil && e.value == v && e.name == name {
		return e.enc
	}
	return nil
}

// cacheField offers a field that passed the engine's checks (lname is
// the lower-case name, clean the value as sent) for caching, and returns
// its encoding if it is cached from now on.
func cacheField(name, lname, v, clean string) []byte {
	if len(v) == 0 || len(v) > maxCachedValue {
		return nil
	}
	i, p := fieldSlot(v)
	if fieldSeen[i].Swap(p) != p {
		return nil // first sighting of this address here: not yet
	}
	e := &cachedField{name: name, value: v, enc: appendLiteralField(nil, lname, clean)}
	fieldCache[i].Store(e)
	return e.enc
}

// appendLiteralField appends a literal header field without indexing
// (RFC 7541 section 6.2.2).
func appendLiteralField(b []byte, name, value string) []byte {
	if idx, ok := staticNames[name]; ok {
		b = appendHpackInt(b, 0x00, 4, uint64(idx))
	} else {
		b = append(b, 0x00)
		b = appendHpackString(b, name)
	}
	return appendHpackString(b, value)
}

// appendHpackString appends a string literal (RFC 7541 section 5.2),
// Huffman-coded when that is shorter.
func appendHpackString(b []byte, s string) []byte {
	if n := hpack.HuffmanEncodeLength(s); n < uint64(len(s)) {
		b = appendHpackInt(b, 0x80, 7, n)
		return hpack.AppendHuffmanString(b, s)
	}
	b = appendHpackInt(b, 0x00, 7, uint64(len(s)))
	return append(b, s...)
}

// appendHpackInt appends an integer with an n-bit prefix after the bits
// in first (RFC 7541 section 5.1).
func appendHpackInt(b []byte, first byte, n uint, v uint64) []byte {
	max := uint64(1)<<n - 1
	if v < max {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(max))
	v -= max
	for v >= 128 {
		b = append(b, byte(v&0x7f|0x80))
		v >>= 7
	}
	return append(b, byte(v))
}

// staticNames are the header field names of RFC 7541's static table
// (Appendix A) and their first index.
var staticNames = map[string]int{
	":authority": 1, ":method": 2, ":path": 4, ":scheme": 6, ":status": 8,
	"accept-charset": 15, "accept-encoding": 16, "accept-language": 17,
	"accept-ranges": 18, "accept": 19, "access-control-allow-origin": 20,
	"age": 21, "allow": 22, "authorization": 23, "cache-control": 24,
	"content-disposition": 25, "content-encoding": 26, "content-language": 27,
	"content-length": 28, "content-location": 29, "content-range": 30,
	"content-type": 31, "cookie": 32, "date": 33, "etag": 34, "expect": 35,
	"expires": 36, "from": 37, "host": 38, "if-match": 39,
	"if-modified-since": 40, "if-none-match": 41, "if-range": 42,
	"if-unmodified-since": 43, "last-modified": 44, "link": 45, "location": 46,
	"max-forwards": 47, "proxy-authenticate": 48, "proxy-authorization": 49,
	"range": 50, "referer": 51, "refresh": 52, "retry-after": 53, "server": 54,
	"set-cookie": 55, "strict-transport-security": 56, "transfer-encoding": 57,
	"user-agent": 58, "vary": 59, "via": 60, "www-authenticate": 61,
}
