package static_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/static"
)

// page writes dir/page.html: 40 KB of text that gzip levels 1 and 9 code
// to different bytes.
func page(t *testing.T, dir string) {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < 40_000; i++ {
		fmt.Fprintf(&b, "<p>%d: %x the quick brown fox %d jumps over the lazy dog</p>\n", i, i*i*7919, i%97)
	}
	if err := os.WriteFile(filepath.Join(dir, "page.html"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// constrainedHandler is a static handler on dir with its own cache whose
// board is hot (Options.Constrained) or not.
func constrainedHandler(t *testing.T, dir string, hot bool) http.Handler {
	t.Helper()
	c := static.NewCache(static.CacheOptions{})
	h, err := static.New(complete(t, &config.Static{Root: dir}), static.Options{
		Cache: c, Compress: true, MinSize: 512, Constrained: func() bool { return hot }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); c.Close() })
	return h
}

func get(h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", path, nil)
	for _, f := range hdr {
		k, v, _ := strings.Cut(f, ": ")
		r.Header.Add(k, v)
	}
	h.ServeHTTP(w, r)
	return w
}

// A variant compressed on the fly at another level has other bytes, so
// another strong ETag (RFC 9110 sections 8.8.1, 8.8.3): the gzip made
// while the board is hot (level 1) and the normal one differ in ETag, and
// If-Range with the one's ETag gets the other's whole body (200), never
// a range of it spliced onto the first.
func TestVariantETagPerLevel(t *testing.T) {
	dir := t.TempDir()
	page(t, dir)
	cool, hot := constrainedHandler(t, dir, false), constrainedHandler(t, dir, true)
	a := get(cool, "/page.html", "Accept-Encoding: gzip")
	b := get(hot, "/page.html", "Accept-Encoding: gzip")
	if a.Header().Get("Content-Encoding") != "gzip" || b.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("codings %q %q, want gzip", a.Header().Get("Content-Encoding"), b.Header().Get("Content-Encoding"))
	}
	if a.Body.String() == b.Body.String() {
		t.Fatal("levels 1 and the default give the same bytes: the test proves nothing")
	}
	ea, eb := a.Header().Get("ETag"), b.Header().Get("ETag")
	if ea == eb {
		t.Errorf("same ETag %s for %d and %d different bytes", ea, a.Body.Len(), b.Body.Len())
	}
	for _, c := range []struct {
		h    http.Handler
		etag string
	}{{hot, ea}, {cool, eb}} {
		r := get(c.h, "/page.html", "Accept-Encoding: gzip", "Range: bytes=100-", "If-Range: "+c.etag)
		if r.Code != 200 {
			t.Errorf("If-Range with the other level's ETag %s: %d, want 200", c.etag, r.Code)
		}
	}
	// The same level's ETag still gets its range.
	if r := get(hot, "/page.html", "Accept-Encoding: gzip", "Range: bytes=100-", "If-Range: "+eb); r.Code != 206 {
		t.Errorf("If-Range with its own ETag: %d, want 206", r.Code)
	}
}

// While the board is hot, a variant made before at the normal level is
// served from the cache (its own ETag) rather than made again at level 1.
func TestHotUsesCachedVariant(t *testing.T) {
	dir := t.TempDir()
	page(t, dir)
	hot := false
	c := static.NewCache(static.CacheOptions{})
	h, err := static.New(complete(t, &config.Static{Root: dir}), static.Options{
		Cache: c, Compress: true, MinSize: 512, Constrained: func() bool { return hot }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); c.Close() })
	a := get(h, "/page.html", "Accept-Encoding: gzip")
	hot = true
	b := get(h, "/page.html", "Accept-Encoding: gzip")
	if a.Header().Get("ETag") != b.Header().Get("ETag") || a.Body.String() != b.Body.String() || c.Stats().VariantEntries != 1 {
		t.Errorf("hot: ETag %s after %s, %d variants cached", b.Header().Get("ETag"), a.Header().Get("ETag"), c.Stats().VariantEntries)
	}
}
