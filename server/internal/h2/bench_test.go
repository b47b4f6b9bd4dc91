package h2

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// stepConn is a client in the manner of h2load -m 1: it sends one GET
// (the fields h2load sends, indexed in HPACK's dynamic table after the
// first request), waits for its response's END_STREAM, then sends the
// next, n in all, then EOF. What the server writes is parsed only for
// frame boundaries and dropped. Deadlines are ignored: the benchmark
// measures the engine's own work per request, without system calls or
// TLS.
type stepConn struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n, sent int
	done    int // responses ended
	pending []byte
	buf     []byte // backs pending
	first   []byte // preface, SETTINGS, connection window, first HEADERS
	next    []byte // a later request's HEADERS block (all indexed)
	id      uint32
	// the frame being parsed in what the server writes
	hdr      [9]byte
	hdrN     int
	left     int
	dataSeen int64 // DATA payload since the last WINDOW_UPDATE
}

func newStepConn(n int) *stepConn {
	c := &stepConn{n: n, id: 1}
	c.cond = sync.NewCond(&c.mu)
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	fields := []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "bench.local"}, {Name: ":path", Value: "/index.html"},
		{Name: "user-agent", Value: "h2load nghttp2/1.52.0"},
	}
	for _, f := range fields {
		enc.WriteField(f)
	}
	first := append([]byte(nil), blk.Bytes()...)
	blk.Reset()
	for _, f := range fields {
		enc.WriteField(f)
	}
	c.next = append([]byte(nil), blk.Bytes()...)

	var b bytes.Buffer
	b.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&b, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
	fr.WriteWindowUpdate(0, 1<<30)
	c.first = b.Bytes()
	c.pending = c.headers(first)
	return c
}

// headers appends a HEADERS frame (END_STREAM, END_HEADERS) of the next
// stream to pending.
func (c *stepConn) headers(block []byte) []byte {
	var h [9]byte
	h[0], h[1], h[2] = byte(len(block)>>16), byte(len(block)>>8), byte(len(block))
	h[3] = byte(http2.FrameHeaders)
	h[4] = byte(http2.FlagHeadersEndStream | http2.FlagHeadersEndHeaders)
	binary.BigEndian.PutUint32(h[5:], c.id)
	c.id += 2
	c.sent++
	c.buf = append(append(c.buf[:0], h[:]...), block...)
	return c.buf
}

func (c *stepConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	for len(c.pending) == 0 {
		if c.done == c.n {
			return 0, io.EOF
		}
		if c.done == c.sent {
			c.pending = c.headers(c.next)
			if c.dataSeen > 1<<29 {
				var b bytes.Buffer
				http2.NewFramer(&b, nil).WriteWindowUpdate(0, uint32(c.dataSeen))
				c.pending = append(c.pending, b.Bytes()...)
				c.dataSeen = 0
			}
			break
		}
		c.cond.Wait()
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *stepConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		if c.hdrN < 9 {
			k := copy(c.hdr[c.hdrN:], p)
			c.hdrN += k
			p = p[k:]
			if c.hdrN < 9 {
				break
			}
			c.left = int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
			if http2.FrameType(c.hdr[3]) == http2.FrameData {
				c.dataSeen += int64(c.left)
			}
		}
		k := min(c.left, len(p))
		c.left -= k
		p = p[k:]
		if c.left == 0 {
			t, fl := http2.FrameType(c.hdr[3]), http2.Flags(c.hdr[4])
			if (t == http2.FrameData || t == http2.FrameHeaders) && fl.Has(http2.FlagDataEndStream) {
				c.done++
				c.cond.Broadcast()
			}
			c.hdrN = 0
		}
	}
	return n, nil
}

func (c *stepConn) Close() error {
	c.mu.Lock()
	c.n = c.done
	c.pending = nil
	c.cond.Broadcast()
	c.mu.Unlock()
	return nil
}
func (c *stepConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443} }
func (c *stepConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *stepConn) SetDeadline(t time.Time) error      { return nil }
func (c *stepConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *stepConn) SetWriteDeadline(t time.Time) error { return nil }

// The small page as the static handler answers it: its fields (value
// strings that live on, as the static handler's cache keeps them), then
// its 1335 bytes.
var (
	benchPage   = []byte(strings.Repeat("x", 1335))
	benchFields = [][2]string{
		{"Etag", `"18f3a2b4c5d-537"`}, {"Last-Modified", "Tue, 01 Dec 2026 20:00:00 GMT"},
		{"Content-Type", "text/html; charset=utf-8"}, {"Accept-Ranges", "bytes"}, {"Content-Length", "1335"},
	}
	benchValues = func() [][]string {
		v := make([][]string, len(benchFields))
		for i, f := range benchFields {
			v[i] = []string{f[1]}
		}
		return v
	}()
	benchHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for i, f := range benchFields {
			h[f[0]] = benchValues[i]
		}
		w.WriteHeader(http.StatusOK)
		w.Write(benchPage)
	})
)

// BenchmarkServeSmall: h2load -m 1's requests for the small page, one
// connection, one stream at a time (the handler runs inline); the
// engine's CPU and allocations per request without TLS or system calls.
func BenchmarkServeSmall(b *testing.B) {
	s := &Server{Handler: benchHandler}
	c := newStepConn(1000)
	s.ServeConn(c, nil) // warm the pools and the field cache
	if c.done != 1000 {
		b.Fatalf("warm-up: %d of 1000 responses", c.done)
	}
	c = newStepConn(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	s.ServeConn(c, nil)
	b.StopTimer()
	if c.done != b.N {
		b.Fatalf("%d of %d responses", c.done, b.N)
	}
}
