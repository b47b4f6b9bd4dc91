package static_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/monotime"
	"github.com/arkaweb/arka/server/internal/static"
)

// discardWriter is a ResponseWriter that keeps one header map and drops
// the body, so the benchmark counts the handler's own work. Like the
// server's recorder it knows when its request started (monotime.Stamped):
// the benchmarks set start once, the dispatch reads the clock per request.
type discardWriter struct {
	h      http.Header
	status int
	start  int64
}

func (w *discardWriter) RequestStart() int64 { return w.start }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func benchHandler(b *testing.B) *static.Handler {
	b.Helper()
	dir := b.TempDir()
	tree(b, dir)
	h, err := static.New(complete(b, &config.Static{Root: filepath.Join(dir, "www")}),
		static.Options{Cache: static.NewCache(static.CacheOptions{}), Compress: true, MinSize: 512})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return h
}

func benchServe(b *testing.B, h http.Handler, path string, hdr http.Header) {
	r := &http.Request{Method: "GET", URL: &url.URL{Path: path}, Header: hdr, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	w := &discardWriter{h: http.Header{}, start: monotime.Now()}
	h.ServeHTTP(w, r) // warm the caches
	if w.status != 200 {
		b.Fatalf("%s: %d", path, w.status)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// The static hot path: a small file from the cache, identity.
func BenchmarkStaticSmall(b *testing.B) {
	benchServe(b, benchHandler(b), "/index.html", http.Header{})
}

// A precompressed sibling chosen from a browser's Accept-Encoding.
func BenchmarkStaticPrecompressed(b *testing.B) {
	benchServe(b, benchHandler(b), "/app.js", http.Header{"Accept-Encoding": {"gzip, deflate, br, zstd"}})
}

// A variant compressed once and cached (no siblings on disk).
func BenchmarkStaticCachedVariant(b *testing.B) {
	benchServe(b, benchHandler(b), "/style.css", http.Header{"Accept-Encoding": {"gzip, deflate, br, zstd"}})
}

// A conditional request answered 304.
func BenchmarkStatic304(b *testing.B) {
	h := benchHandler(b)
	w := &discardWriter{h: http.Header{}, start: monotime.Now()}
	h.ServeHTTP(w, &http.Request{Method: "GET", URL: &url.URL{Path: "/index.html"}, Header: http.Header{}})
	r := &http.Request{Method: "GET", URL: &url.URL{Path: "/index.html"}, Header: http.Header{"If-None-Match": w.h["Etag"]}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
	if w.status != 304 {
		b.Fatalf("status %d", w.status)
	}
}
