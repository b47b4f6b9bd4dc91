package static_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/internal/encoding"
)

// BenchmarkOnTheFlyLevels measures what a request waiting for a variant
// compressed on the fly pays: 200 KB of real HTML (the Go specification
// from GOROOT) at the levels a static route could use. The figures are in
// the package doc (section "Compression levels").
func BenchmarkOnTheFlyLevels(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip("no go command")
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "doc", "go_spec.html"))
	if err != nil || len(src) < 200_000 {
		b.Skip("no go_spec.html in GOROOT")
	}
	src = src[:200_000]
	for _, c := range []struct {
		cd     encoding.Coding
		levels []int
	}{
		{encoding.Brotli, []int{4, 5, 6, 7, 9, 11}},
		{encoding.Gzip, []int{1, 6, 9}},
		{encoding.Zstd, []int{1, 2, 3, 4}},
	} {
		for _, l := range c.levels {
			b.Run(fmt.Sprintf("%s%d", c.cd.Token(), l), func(b *testing.B) {
				var n int
				b.SetBytes(int64(len(src)))
				for i := 0; i < b.N; i++ {
					out, err := encoding.Compress(c.cd, l, src)
					if err != nil {
						b.Fatal(err)
					}
					n = len(out)
				}
				b.ReportMetric(float64(n), "out-bytes")
			})
		}
	}
}

// The levels a route compresses at while a request waits are cheap ones
// (package doc, "Compression levels"): the variant's ETag names its level
// (variantETag), and for brotli and gzip it is at most 6, where 200 KB of
// HTML costs about 10 ms here; brotli 11 cost 0.6 s, and a client asking
// for many distinct files could keep the board busy with it.
func TestOnTheFlyLevelsCheap(t *testing.T) {
	dir := t.TempDir()
	page(t, dir)
	h := constrainedHandler(t, dir, false)
	for _, c := range []struct{ ae, token string }{{"br", "br"}, {"gzip", "gzip"}} {
		r := get(h, "/page.html", "Accept-Encoding: "+c.ae)
		etag := r.Header().Get("ETag")
		_, lv, ok := strings.Cut(strings.Trim(etag, `"`), "-"+c.token)
		level, err := strconv.Atoi(lv)
		if r.Header().Get("Content-Encoding") != c.token || !ok || err != nil {
			t.Fatalf("%s: Content-Encoding %q, ETag %s", c.ae, r.Header().Get("Content-Encoding"), etag)
		}
		if level > 6 {
			t.Errorf("%s made at level %d on the request path, want at most 6", c.ae, level)
		}
	}
}
