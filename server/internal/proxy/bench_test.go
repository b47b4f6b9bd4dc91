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
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
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
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		rr := r.WithContext(ctx)
		clear(w.h)
		h.ServeHTTP(w, rr)
		cancel()
	}
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
