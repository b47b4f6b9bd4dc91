package bench

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
)

// A minimal HTTP/2 client (RFC 9113) for the hot-path benchmarks: one
// stream at a time per connection (as h2load -m 1), a request header block
// encoded once (RFC 7541, static table indexes and literals without
// indexing), flow-control windows opened wide, and no allocation per
// request. It reads only what it needs from the response: the status (the
// first header field must be an indexed :status 200, as Go's encoder
// writes it) and the DATA length.

const (
	h2Data         = 0x0
	h2Headers      = 0x1
	h2RSTStream    = 0x3
	h2Settings     = 0x4
	h2Ping         = 0x6
	h2GoAway       = 0x7
	h2WindowUpdate = 0x8

	h2FlagEndStream  = 0x1
	h2FlagAck        = 0x1
	h2FlagEndHeaders = 0x4
	h2FlagPadded     = 0x8
	h2FlagPriority   = 0x20

	h2Window = 1 << 30
)

type h2conn struct {
	c        *tls.Conn
	br       *bufio.Reader
	block    []byte // HPACK-encoded request header block
	stream   uint32
	consumed int
	hdr      [9]byte
	wu       [4]byte
	payload  []byte
	out      []byte
}

func dialH2(addr, path, acceptEncoding string) (*h2conn, error) {
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		return nil, err
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		c.Close()
		return nil, fmt.Errorf("ALPN %q, want h2", p)
	}
	h := &h2conn{c: c, br: bufio.NewReaderSize(c, 64<<10), stream: 1, payload: make([]byte, 1<<16), out: make([]byte, 0, 256)}
	// RFC 7541 appendix A static table: 2 = :method GET, 7 = :scheme
	// https; literals without indexing with indexed names 4 (:path),
	// 1 (:authority), 16 (accept-encoding).
	h.block = append(h.block, 0x82, 0x87)
	h.block = appendLiteral(h.block, 4, path)
	h.block = appendLiteral(h.block, 1, "bench.local")
	if acceptEncoding != "" {
		h.block = appendLiteral(h.block, 16, acceptEncoding)
	}
	// Connection preface, SETTINGS (INITIAL_WINDOW_SIZE), and a window
	// update for the connection.
	out := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	out = appendFrame(out, h2Settings, 0, 0, binary.BigEndian.AppendUint32([]byte{0, 4}, h2Window))
	out = appendFrame(out, h2WindowUpdate, 0, 0, binary.BigEndian.AppendUint32(nil, h2Window-65535))
	if _, err := c.Write(out); err != nil {
		c.Close()
		return nil, err
	}
	return h, nil
}

// appendLiteral encodes a "literal header field without indexing, indexed
// name" (RFC 7541 section 6.2.2) with a plain (not Huffman) value.
func appendLiteral(b []byte, nameIndex int, value string) []byte {
	b = appendInt(b, 0x00, 4, nameIndex)
	b = appendInt(b, 0x00, 7, len(value))
	return append(b, value...)
}

// appendInt is RFC 7541 section 5.1's integer with an n-bit prefix.
func appendInt(b []byte, first byte, n uint, v int) []byte {
	max := 1<<n - 1
	if v < max {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(max))
	v -= max
	for v >= 128 {
		b = append(b, byte(v%128+128))
		v /= 128
	}
	return append(b, byte(v))
}

func appendFrame(b []byte, typ, flags byte, stream uint32, payload []byte) []byte {
	n := len(payload)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, stream)
	return append(b, payload...)
}

func (h *h2conn) Close() error { return h.c.Close() }

// do sends one GET and reads its response: status and body length.
func (h *h2conn) do() (status, n int, err error) {
	id := h.stream
	h.stream += 2
	h.out = appendFrame(h.out[:0], h2Headers, h2FlagEndStream|h2FlagEndHeaders, id, h.block)
	if _, err := h.c.Write(h.out); err != nil {
		return 0, 0, err
	}
	for {
		if _, err := io.ReadFull(h.br, h.hdr[:]); err != nil {
			return 0, 0, err
		}
		length := int(h.hdr[0])<<16 | int(h.hdr[1])<<8 | int(h.hdr[2])
		typ, flags := h.hdr[3], h.hdr[4]
		sid := binary.BigEndian.Uint32(h.hdr[5:]) & 0x7fffffff
		if length > len(h.payload) {
			return 0, 0, fmt.Errorf("frame of %d bytes, larger than the default SETTINGS_MAX_FRAME_SIZE", length)
		}
		p := h.payload[:length]
		if _, err := io.ReadFull(h.br, p); err != nil {
			return 0, 0, err
		}
		switch typ {
		case h2Settings:
			if flags&h2FlagAck == 0 {
				h.out = appendFrame(h.out[:0], h2Settings, h2FlagAck, 0, nil)
				if _, err := h.c.Write(h.out); err != nil {
					return 0, 0, err
				}
			}
		case h2Ping:
			if flags&h2FlagAck == 0 {
				h.out = appendFrame(h.out[:0], h2Ping, h2FlagAck, 0, p)
				if _, err := h.c.Write(h.out); err != nil {
					return 0, 0, err
				}
			}
		case h2GoAway:
			return 0, 0, fmt.Errorf("GOAWAY")
		case h2RSTStream:
			if sid == id {
				return 0, 0, fmt.Errorf("RST_STREAM, code %d", binary.BigEndian.Uint32(p))
			}
		case h2Headers:
			if sid != id {
				continue
			}
			if flags&h2FlagPadded != 0 {
				p = p[1 : len(p)-int(p[0])]
			}
			if flags&h2FlagPriority != 0 {
				p = p[5:]
			}
			if len(p) > 0 && p[0] == 0x88 { // indexed :status 200
				status = 200
			} else if status == 0 && len(p) > 0 {
				status = -int(p[0]) // not decoded: shown as a negative byte
			}
			if flags&h2FlagEndStream != 0 {
				return status, n, nil
			}
		case h2Data:
			if sid != id {
				continue
			}
			d := length
			if flags&h2FlagPadded != 0 && length > 0 {
				d = length - 1 - int(p[0])
			}
			n += d
			h.consumed += length
			if h.consumed > h2Window/2 {
				h.out = appendFrame(h.out[:0], h2WindowUpdate, 0, 0, binary.BigEndian.AppendUint32(h.wu[:0], uint32(h.consumed)))
				if _, err := h.c.Write(h.out); err != nil {
					return 0, 0, err
				}
				h.consumed = 0
			}
			if flags&h2FlagEndStream != 0 {
				return status, n, nil
			}
		}
	}
}

// getH2 runs b.N requests over HTTP/2 (one connection per parallel
// goroutine, one stream at a time) and checks every answer.
func getH2(b *testing.B, addr, path, acceptEncoding string, wantLen int) {
	b.Helper()
	c, err := dialH2(addr, path, acceptEncoding)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := c.do(); err != nil { // warm-up, outside timing
		b.Fatal(err)
	}
	c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c, err := dialH2(addr, path, acceptEncoding)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		for pb.Next() {
			status, n, err := c.do()
			if err != nil {
				b.Error(err)
				return
			}
			if status != 200 || (wantLen >= 0 && n != wantLen) {
				b.Errorf("status %d, %d body bytes; want 200, %d", status, n, wantLen)
				return
			}
		}
	})
}
