package encoding

// The middleware's own benchmark (run by make bench-go with the in-process
// server benchmarks of tests/bench): the content it compresses is the
// benchmark suite's PHP page (tests/bench/harness), so the figures compare
// with BenchmarkProxy's and BenchmarkFastCGI's compressed answers.

import (
	"net/http"
	"testing"

	"github.com/arkaweb/arka/tests/bench/harness"
)

// BenchmarkDynamicZstd: the content-coding middleware Arka puts in front
// of responses made per request (proxy, FastCGI), encoding the 25 KB PHP
// page with zstd at the default level, handler to writer, no network.
func BenchmarkDynamicZstd(b *testing.B) {
	body := harness.NewContent().PHPPage
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/html; charset=UTF-8"}
		w.WriteHeader(200)
		w.Write(body)
	})
	for _, ae := range []string{"zstd", "br", "gzip"} {
		b.Run(ae, func(b *testing.B) {
			var lv [NumCodings]int
			h := New(Options{MinSize: 512, Levels: lv, Pools: &Pools{}}).Wrap(page)
			r, _ := http.NewRequest("GET", "/app/page.php", nil)
			r.Header.Set("Accept-Encoding", harness.BrowserAcceptEncoding)
			if ae != "zstd" {
				r.Header.Set("Accept-Encoding", ae)
			}
			w := &discardWriter{h: http.Header{}}
			h.ServeHTTP(w, r)
			if got := w.h.Get("Content-Encoding"); got != ae {
				b.Fatalf("Content-Encoding %q, want %q", got, ae)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				clear(w.h)
				w.n = 0
				h.ServeHTTP(w, r)
			}
			b.ReportMetric(float64(w.n), "out-bytes")
		})
	}
}

type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
