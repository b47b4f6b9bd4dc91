package static_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/static"
	"github.com/arkaweb/arka/server/servertest"
)

// TestCompressInBackground: a large page (above
// static.BackgroundCompressMin) is not compressed while a request waits:
// the first requests get it as it is (quickly), and once the background
// compressor is done, gzip (brotli at the compress-once level is slow under
// the race detector). Meanwhile the answers stay correct.
func TestCompressInBackground(t *testing.T) {
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	os.MkdirAll(www, 0o755)
	var b strings.Builder
	for i := 0; b.Len() < static.BackgroundCompressMin; i++ {
		fmt.Fprintf(&b, "<p>line %d: the quick brown fox jumps over the lazy dog</p>\n", i)
	}
	page := []byte(b.String())
	os.WriteFile(filepath.Join(www, "big.html"), page, 0o644)
	e := servertest.Start(t, strings.ReplaceAll(site, "{{DIR}}", dir))
	c := e.Clients()[0]
	start := time.Now()
	r, body := c.Get(t, "/big.html", "Accept-Encoding: gzip")
	if r.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, page) {
		t.Fatalf("first request: Content-Encoding %q, %d bytes; want identity", r.Header.Get("Content-Encoding"), len(body))
	}
	t.Logf("first request answered in %v", time.Since(start))
	deadline := time.Now().Add(60 * time.Second) // low priority: slow on a busy machine
	for {
		r, body = c.Get(t, "/big.html", "Accept-Encoding: gzip")
		if r.Header.Get("Content-Encoding") == "gzip" {
			break
		}
		if !bytes.Equal(body, page) {
			t.Fatalf("identity answer while compressing: %d bytes", len(body))
		}
		if time.Now().After(deadline) {
			t.Fatal("never compressed in the background")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := decode(t, "gzip", body); !bytes.Equal(got, page) || len(body) >= len(page)/2 {
		t.Errorf("gzip answer: %d bytes decoding to %d", len(body), len(got))
	}
}
