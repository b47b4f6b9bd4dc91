package proxy

// Benchmarks behind the design choice in the package comment. Run:
//
//	go test -run '^$' -bench . -benchmem ./server/proxy/
//
// Handler/*: the handler alone, called in a loop, against a canned
// upstream (a raw socket loop that allocates nothing), so allocs/op is the
// proxy's own cost per request. EndToEnd/*: a Go client over loopback,
// through a Go front server, to a Go upstream, compared with the client
// going to the upstream directly.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/monotime"
)

var page1K = strings.Repeat("x", 1024)

// cannedUpstream answers every request on a connection with the same 1 KiB
// response, reading only the request head.
func cannedUpstream(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1024\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n\r\n" + page1K)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// sinkWriter is a ResponseWriter that keeps nothing.
type sinkWriter struct{ h http.Header }

func (s *sinkWriter) Header() http.Header         { return s.h }
func (s *sinkWriter) Write(p []byte) (int, error) { return len(p), nil }
func (s *sinkWriter) WriteHeader(int)             {}

func benchRequest() *http.Request {
	r := httptest.NewRequest("GET", "http://bench.local/proxy/index.html?x=1", nil)
	r.RemoteAddr = "127.0.0.1:40000"
	r.Header.Set("User-Agent", "bench")
	r.Header.Set("Accept", "*/*")
	r.Header.Set("Accept-Encoding", "gzip, br, zstd")
	return r
}

func BenchmarkHandler(b *testing.B) {
	addr := cannedUpstream(b)
	b.Run("arka", func(b *testing.B) {
		h, err := New("/proxy/", complete(b, &config.Proxy{Upstreams: []string{addr}, StripPrefix: true, ForwardHeaders: ptr(false)}), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		runHandler(b, h)
	})
	b.Run("arka_forward_headers", func(b *testing.B) {
		h, err := New("/proxy/", complete(b, &config.Proxy{Upstreams: []string{addr}, StripPrefix: true}), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		runHandler(b, h)
	})
	b.Run("httputil.ReverseProxy", func(b *testing.B) {
		rp, tr := reverseProxy(addr)
		defer tr.CloseIdleConnections()
		runHandler(b, rp)
	})
}

// runHandler calls h in a loop with a cancellable request context, as the
// engine gives one (its allocations count here too: 2 per request).
func runHandler(b *testing.B, h http.Handler) {
	r := benchRequest()
	w := &sinkWriter{h: http.Header{}}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		rr := r.WithContext(ctx)
		clear(w.h)
		h.ServeHTTP(w, rr)
		cancel()
	}
	// CPU time per request of the whole process (the handler and the
	// canned upstream, system calls included): steadier than ns/op on a
	// shared machine.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// reverseProxy is the standard library's proxy, tuned as one would for
// this job: a kept-alive pool as large as ours, prefix stripped, Host kept.
func reverseProxy(addr string) (*httputil.ReverseProxy, *http.Transport) {
	target := &url.URL{Scheme: "http", Host: addr}
	tr := &http.Transport{
		MaxIdleConns:        config.DefaultProxyKeepalive,
		MaxIdleConnsPerHost: config.DefaultProxyKeepalive,
		IdleConnTimeout:     config.DefaultProxyIdle,
		DisableCompression:  true,
	}
	rp := &httputil.ReverseProxy{
		Transport:  tr,
		BufferPool: &bufPool{},
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, "/proxy")
			pr.Out.URL.RawPath = ""
			pr.Out.Host = pr.In.Host
		},
	}
	return rp, tr
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type bufPool struct{ p sync.Pool }

func (b *bufPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufPool) Put(v []byte) { b.p.Put(&v) }

func BenchmarkEndToEnd(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, page1K)
	}))
	defer up.Close()
	addr := up.Listener.Addr().String()
	h, err := New("/proxy/", complete(b, &config.Proxy{Upstreams: []string{addr}, StripPrefix: true, ForwardHeaders: ptr(false)}), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	rp, tr := reverseProxy(addr)
	defer tr.CloseIdleConnections()

	for _, c := range []struct {
		name string
		h    http.Handler // nil: straight to the upstream
	}{
		{"direct", nil},
		{"arka", h},
		{"httputil.ReverseProxy", rp},
	} {
		b.Run(c.name, func(b *testing.B) {
			base := up.URL + "/index.html"
			if c.h != nil {
				front := httptest.NewServer(c.h)
				defer front.Close()
				base = front.URL + "/proxy/index.html"
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
			defer client.CloseIdleConnections()
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 4096)
				for pb.Next() {
					resp, err := client.Get(base)
					if err != nil {
						b.Error(err)
						return
					}
					for {
						if _, err := resp.Body.Read(buf); err != nil {
							break
						}
					}
					resp.Body.Close()
				}
			})
			// CPU time (user + system, whole process: client, front and
			// upstream) per request: steadier than ns/op on a shared machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// memConn is an upstream connection in memory: every request written to
// it makes one response readable, delivered as a socket would (a read
// gets what fits). No system calls, so a benchmark over it measures the
// handler's own CPU per request.
type memConn struct {
	resp    []byte
	pending []byte
}

func (m *memConn) Read(p []byte) (int, error) {
	if len(m.pending) == 0 {
		return 0, io.ErrNoProgress // the handler read before it wrote
	}
	n := copy(p, m.pending)
	m.pending = m.pending[n:]
	return n, nil
}

func (m *memConn) Write(p []byte) (int, error) {
	if len(p) > 0 && len(m.pending) == 0 {
		m.pending = m.resp
	}
	return len(p), nil
}

func (m *memConn) Close() error                     { return nil }
func (m *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (m *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkHandlerMem: the handler alone over an upstream connection in
// memory (memConn), answering a small page (the 119-byte answer of the
// proxy-small tests) and the 30 KB one, with the upstream's fields of
// tests/bench's upstream (Go's net/http).
func BenchmarkHandlerMem(b *testing.B) {
	for _, size := range []int{119, 30 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			body := strings.Repeat("x", size)
			resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: " + fmt.Sprint(size) + "\r\nContent-Type: text/html; charset=utf-8\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n\r\n" + body)
			h, err := New("/proxy/", complete(b, &config.Proxy{Upstreams: []string{"127.0.0.1:1"}, StripPrefix: true, ForwardHeaders: ptr(false)}), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			u := h.ups[0]
			mc := &memConn{resp: resp}
			c := u.newConn(mc, mc)
			c.idleSince = monotime.Now()
			u.idle = append(u.idle, c)
			runHandler(b, h)
			if u.dials.Load() != 0 {
				b.Fatalf("%d dials: the in-memory connection was not reused", u.dials.Load())
			}
		})
	}
}

// BenchmarkReadResponse: reading and parsing the head of tests/bench's
// small answer, and copying its fields into the engine's header map, with
// the upstream's head memo (the same head as last time) and without.
func BenchmarkReadResponse(b *testing.B) {
	head := "HTTP/1.1 200 OK\r\nContent-Length: 119\r\nContent-Type: text/html; charset=utf-8\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n\r\n"
	for _, memo := range []bool{false, true} {
		b.Run(fmt.Sprintf("memo=%v", memo), func(b *testing.B) {
			src := &repeatReader{b: []byte(head)}
			br := bufio.NewReaderSize(src, readBufSize)
			var last atomic.Pointer[string]
			var m atomic.Pointer[headMemo]
			p := response{last: &last}
			if memo {
				p.memo = &m
			}
			hdr := http.Header{}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.readResponse(br, http.MethodGet); err != nil {
					b.Fatal(err)
				}
				clear(hdr)
				p.copyHeader(hdr)
			}
		})
	}
}

// repeatReader returns b in every read.
type repeatReader struct{ b []byte }

func (r *repeatReader) Read(p []byte) (int, error) { return copy(p, r.b), nil }
