package h1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// repeatConn is a client that sends the same request n times, pipelined
// (each Read returns whole copies, as many as fit), then closes; what the
// server writes is counted and dropped. Deadlines are ignored: the
// benchmarks below measure the engine's own work per request, without
// system calls.
type repeatConn struct {
	req     []byte
	n, sent int
	off     int
	written int64
}

func (c *repeatConn) Read(p []byte) (int, error) {
	m := 0
	for m < len(p) && c.sent < c.n {
		k := copy(p[m:], c.req[c.off:])
		m += k
		c.off += k
		if c.off == len(c.req) {
			c.off = 0
			c.sent++
		}
	}
	if m == 0 {
		return 0, io.EOF
	}
	return m, nil
}
func (c *repeatConn) Write(p []byte) (int, error) { c.written += int64(len(p)); return len(p), nil }
func (c *repeatConn) Close() error                { return nil }
func (c *repeatConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }
func (c *repeatConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *repeatConn) SetDeadline(t time.Time) error      { return nil }
func (c *repeatConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *repeatConn) SetWriteDeadline(t time.Time) error { return nil }

// A static-like answer: the fields the static handler and the server set
// for a small page, then its 1335 bytes.
var (
	benchPage   = []byte(strings.Repeat("x", 1335))
	benchFields = [][2]string{
		{"Server", "arka"}, {"Etag", `"18f3a2b4c5d-537"`}, {"Last-Modified", "Tue, 01 Dec 2026 20:00:00 GMT"},
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

func benchRequests(b *testing.B, req string) {
	s := &Server{Handler: benchHandler}
	c := &repeatConn{req: []byte(req), n: 1000}
	s.ServeConn(c, nil) // warm the pools
	c = &repeatConn{req: []byte(req), n: b.N}
	b.ReportAllocs()
	b.ResetTimer()
	s.ServeConn(c, nil)
	b.StopTimer()
	if want := int64(b.N) * int64(len(benchPage)); c.written < want {
		b.Fatalf("%d bytes written for %d requests", c.written, b.N)
	}
}

// BenchmarkRequestWrk: wrk's request for the small page.
func BenchmarkRequestWrk(b *testing.B) {
	benchRequests(b, "GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:8443\r\n\r\n")
}

// BenchmarkRequestBrowser: a browser's request for it.
func BenchmarkRequestBrowser(b *testing.B) {
	benchRequests(b, "GET /index.html HTTP/1.1\r\nHost: bench.local\r\n"+
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n"+
		"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"+
		"Accept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n"+
		"Connection: keep-alive\r\nUpgrade-Insecure-Requests: 1\r\nSec-Fetch-Dest: document\r\n"+
		"Sec-Fetch-Mode: navigate\r\nSec-Fetch-Site: none\r\nPriority: u=0, i\r\n\r\n")
}

// TestHeaderBuffered: the empty line that ends a head is found with CRLF
// and with bare LF line ends, and a head without it is not complete.
func TestHeaderBuffered(t *testing.T) {
	for in, want := range map[string]bool{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n":    true,
		"GET / HTTP/1.1\nHost: x\n\n":          true,
		"GET / HTTP/1.1\r\nHost: x\n\r\n":      true,
		"GET / HTTP/1.1\r\nHost: x\r\n":        false,
		"GET / HTTP/1.1\r\nHost: x\r\n\r":      false,
		"GET / HTTP/1.1\r\nX: a\rb\r\nY: \r\n": false,
	} {
		c := &conn{br: bufio.NewReader(strings.NewReader(in))}
		c.br.Peek(1)
		if got := c.headerBuffered(); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}
