package fastcgi

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/internal/fcgi"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark
// measures the handler, not a recorder.
type discardWriter struct {
	h       http.Header
	status  int
	n       int
	flushes int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
func (w *discardWriter) Flush()                      { w.flushes++ }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHandler runs scripts through the handler against a real
// php-fpm (4 workers, max_conns 4), 8 requests in flight: the hot path of
// the FastCGI client, pool and queue. cpu-ns/op is this process's CPU time
// per request (php-fpm's is not included); allocs/op are the handler's.
//
//	go test -run XXX -bench Handler -benchmem ./server/fastcgi/
func BenchmarkHandler(b *testing.B) {
	for _, bc := range []struct{ name, path string }{
		{"tiny", "/app/hello.php"},
		{"page25k", "/app/big.php"},
		{"query", "/app/hello.php/some/path?with=query&and=more"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnv(b, fpmtest.Config{MaxChildren: 4})
			h := e.handler(b, func(c *config.FastCGI, _ *Options) {
				c.MaxConns = config.AutoInt{Set: true, Value: 4}
			})
			u, _ := url.Parse("http://bench.local" + bc.path)
			local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
			ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, local)
			b.ReportAllocs()
			b.SetParallelism(4) // 4 x GOMAXPROCS goroutines
			var flushes atomic.Int64
			cpu0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := (&http.Request{
					Method: "GET", URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
					Host: "bench.local", RequestURI: u.RequestURI(), RemoteAddr: "127.0.0.1:54321",
					Header: http.Header{
						"Accept":          {"text/html,application/xhtml+xml"},
						"Accept-Encoding": {"gzip, deflate, br, zstd"},
						"User-Agent":      {"bench/1.0"},
					},
					Body: http.NoBody,
				}).WithContext(ctx)
				w := &discardWriter{h: http.Header{}}
				defer func() { flushes.Add(int64(w.flushes)) }()
				for pb.Next() {
					clear(w.h)
					w.status, w.n = 0, 0
					h.ServeHTTP(w, r)
					if w.status != 200 || w.n == 0 {
						b.Errorf("status %d, %d bytes", w.status, w.n)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(flushes.Load())/float64(b.N), "flushes/op")
		})
	}
}

// BenchmarkResolve maps a script's path to its file: with the stat cache
// (see statTTL) and, for comparison, the stat it saves.
func BenchmarkResolve(b *testing.B) {
	e := newEnv(b, fpmtest.Config{})
	h := e.handler(b, nil)
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		var t target
		for b.Loop() {
			if h.resolve("/app/hello.php", -1, &t) != resScript {
				b.Fatal("not a script")
			}
		}
	})
	b.Run("stat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if fileKind(h.root, "/app/hello.php", "") != kindFile {
				b.Fatal("not a file")
			}
		}
	})
}

// BenchmarkParams encodes the PARAMS of a GET request with a browser's
// header fields.
func BenchmarkParams(b *testing.B) {
	e := newEnv(b, fpmtest.Config{})
	h := e.handler(b, nil)
	u, _ := url.Parse("http://bench.local/app/hello.php")
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	r := (&http.Request{
		Method: "GET", URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Host: "bench.local", RequestURI: u.RequestURI(), RemoteAddr: "127.0.0.1:54321",
		Header: http.Header{
			"Accept":          {"text/html,application/xhtml+xml"},
			"Accept-Encoding": {"gzip, deflate, br, zstd"},
			"User-Agent":      {"bench/1.0"},
		},
	}).WithContext(context.WithValue(context.Background(), http.LocalAddrContextKey, local))
	t := target{scriptName: "/app/hello.php"}
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		var pw fcgi.ParamsWriter
		pw.Begin(buf[:0], 1)
		if err := h.appendParams(&pw, r, &t, -1); err != nil {
			b.Fatal(err)
		}
		buf = pw.End()
	}
}
