package static_test

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/enginetest"
	"github.com/arkaweb/arka/server/internal/static"
)

// complete normalizes a handler configuration built in the test, as
// config.Load does for one read from a site file.
func complete[T config.Handler](t testing.TB, h T) T {
	t.Helper()
	if err := config.Complete(h); err != nil {
		t.Fatal(err)
	}
	return h
}

// unitHandler is a static handler on dir whose cache looks at files again
// after a millisecond, for tests that change files.
func unitHandler(t *testing.T, dir string, cfg config.Static) (*static.Handler, *static.Cache) {
	t.Helper()
	cfg.Root = dir
	c := static.NewCache(static.CacheOptions{Valid: time.Millisecond})
	h, err := static.New(complete(t, &cfg), static.Options{Cache: c, Compress: true, MinSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); c.Close() })
	return h, c
}

// engines runs fn once per way of reaching Arka (HTTP/1.1, HTTP/1.1 with
// TLS, HTTP/2) as a subtest; fn builds its handler and puts it on Arka's
// engines with on, which returns that subtest's client (package
// enginetest: the engines shut down and no goroutine of Arka's is left
// when the subtest ends).
func engines(t *testing.T, fn func(t *testing.T, on func(http.Handler) *enginetest.Client)) {
	for _, name := range []string{"h1", "h1+tls", "h2"} {
		t.Run(name, func(t *testing.T) {
			fn(t, func(h http.Handler) *enginetest.Client {
				for _, c := range enginetest.Serve(t, h).Clients() {
					if c.Name == name {
						return c
					}
				}
				panic("enginetest has no client " + name)
			})
		})
	}
}

// response is what a client got: status, header and body read.
type response struct {
	Code   int
	header http.Header
	Body   *bytes.Buffer
}

func (r *response) Header() http.Header { return r.header }

// serve sends one GET for path (sent as written, percent-encoding and
// all) with the header fields ("Name: value"; a field given twice is sent
// on two lines).
func serve(t *testing.T, c *enginetest.Client, path string, hdr ...string) *response {
	t.Helper()
	resp, body := c.Get(t, path, hdr...)
	return &response{Code: resp.StatusCode, header: resp.Header, Body: bytes.NewBuffer(body)}
}

func write(t *testing.T, p string, b []byte, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// A precompressed sibling is used only when it is at least as new as its
// file; a variant compressed once is made again when the file changes, and
// the old one leaves the cache.
func TestSiblingFreshness(t *testing.T) {
	engines(t, func(t *testing.T, on func(http.Handler) *enginetest.Client) {
		dir := t.TempDir()
		v1 := []byte(strings.Repeat("let version = 1;\n", 100))
		v2 := []byte(strings.Repeat("let version = 2;\n", 100))
		js, sib := filepath.Join(dir, "app.js"), filepath.Join(dir, "app.js.gz")
		t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
		write(t, js, v1, t0)
		write(t, sib, compress(t, "gzip", v1), t0) // gzip -k: the file's own mtime
		h, cache := unitHandler(t, dir, config.Static{})
		c := on(h)
		body := func(w *response) []byte {
			return decode(t, w.Header().Get("Content-Encoding"), w.Body.Bytes())
		}

		w := serve(t, c, "/app.js", "Accept-Encoding: gzip")
		sibTag := w.Header().Get("Etag")
		if !bytes.Equal(body(w), v1) || cache.Stats().VariantEntries != 0 {
			t.Fatalf("sibling as new as its file: not served (%d variants made)", cache.Stats().VariantEntries)
		}

		// The file is edited; the sibling is left as it was.
		write(t, js, v2, t0.Add(time.Minute))
		time.Sleep(5 * time.Millisecond)
		w = serve(t, c, "/app.js", "Accept-Encoding: gzip")
		if !bytes.Equal(body(w), v2) || w.Header().Get("Etag") == sibTag {
			t.Fatalf("stale sibling served: %.20q, ETag %s", body(w), w.Header().Get("Etag"))
		}
		if cache.Stats().VariantEntries != 1 {
			t.Errorf("%d variants, want the one compressed from the edited file", cache.Stats().VariantEntries)
		}

		// Edited again: the variant of the previous version is dropped.
		v3 := []byte(strings.Repeat("let version = 3;\n", 100))
		write(t, js, v3, t0.Add(2*time.Minute))
		time.Sleep(5 * time.Millisecond)
		if w = serve(t, c, "/app.js", "Accept-Encoding: gzip"); !bytes.Equal(body(w), v3) {
			t.Fatalf("after a second edit: %.20q", body(w))
		}
		if n := cache.Stats().VariantEntries; n != 1 {
			t.Errorf("%d variants cached, want 1 (the old version's dropped)", n)
		}

		// A sibling made again after the edit is used again.
		write(t, sib, compress(t, "gzip", v3), t0.Add(3*time.Minute))
		time.Sleep(5 * time.Millisecond)
		if w = serve(t, c, "/app.js", "Accept-Encoding: gzip"); !bytes.Equal(body(w), v3) || !bytes.Equal(w.Body.Bytes(), compress(t, "gzip", v3)) {
			t.Errorf("fresh sibling not served")
		}
	})
}

// Several ranges of an encoded representation are answered 200 with all of
// it (RFC 9110 sections 8.4 and 14.2); of identity, 206 multipart without
// Content-Encoding; one range of the encoded one, 206 of its bytes.
func TestMultiRangeEncoded(t *testing.T) {
	engines(t, func(t *testing.T, on func(http.Handler) *enginetest.Client) {
		dir := t.TempDir()
		js := []byte(strings.Repeat("function f(a,b){return a+b}\n", 100))
		t0 := time.Now().Add(-time.Hour)
		write(t, filepath.Join(dir, "app.js"), js, t0)
		write(t, filepath.Join(dir, "app.js.gz"), compress(t, "gzip", js), t0)
		write(t, filepath.Join(dir, "plain.js"), js, t0) // compressed once, on demand
		h, _ := unitHandler(t, dir, config.Static{})
		c := on(h)
		for _, p := range []string{"/app.js", "/plain.js"} {
			w := serve(t, c, p, "Accept-Encoding: gzip", "Range: bytes=0-9,20-29")
			if w.Code != 200 || w.Header().Get("Content-Encoding") != "gzip" || !bytes.Equal(decode(t, "gzip", w.Body.Bytes()), js) {
				t.Errorf("%s, two ranges, gzip: %d %q", p, w.Code, w.Header().Get("Content-Encoding"))
			}
			w = serve(t, c, p, "Range: bytes=0-9,20-29")
			if w.Code != 206 || w.Header().Get("Content-Encoding") != "" || !strings.HasPrefix(w.Header().Get("Content-Type"), "multipart/byteranges") {
				t.Errorf("%s, two ranges, identity: %d %q %q", p, w.Code, w.Header().Get("Content-Encoding"), w.Header().Get("Content-Type"))
			}
			w = serve(t, c, p, "Accept-Encoding: gzip", "Range: bytes=0-9")
			if w.Code != 206 || w.Header().Get("Content-Encoding") != "gzip" || w.Body.Len() != 10 {
				t.Errorf("%s, one range, gzip: %d %q", p, w.Code, w.Header().Get("Content-Encoding"))
			}
		}
	})
}

// The route's caching fields go on 200, 206 and 304 only; its other fields
// stay; errors get Cache-Control: no-store.
func TestCachingFieldsOnlyOnSuccess(t *testing.T) {
	engines(t, func(t *testing.T, on func(http.Handler) *enginetest.Client) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "a.txt"), []byte("hello, world\n"), time.Now().Add(-time.Hour))
		h, _ := unitHandler(t, dir, config.Static{CacheControl: "public, max-age=60",
			Headers: map[string]string{"expires": "Thu, 01 Jan 2037 00:00:00 GMT", "X-Frame-Options": "DENY"}})
		cl := on(h)
		etag := serve(t, cl, "/a.txt").Header().Get("Etag")
		for _, c := range []struct {
			hdr   string
			code  int
			cache string
		}{
			{"", 200, "public, max-age=60"},
			{"Range: bytes=0-1", 206, "public, max-age=60"},
			{"If-None-Match: " + etag, 304, "public, max-age=60"},
			{"If-Match: \"x\"", 412, "no-store"},
			{"If-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT", 412, "no-store"},
			{"Range: bytes=100-", 416, "no-store"},
		} {
			var hdr []string
			if c.hdr != "" {
				hdr = append(hdr, c.hdr)
			}
			w := serve(t, cl, "/a.txt", hdr...)
			expires := w.Header().Get("Expires") != ""
			if w.Code != c.code || w.Header().Get("Cache-Control") != c.cache || expires != (c.code < 400) || w.Header().Get("X-Frame-Options") != "DENY" {
				t.Errorf("%q: %d, Cache-Control %q, Expires %v, X-Frame-Options %q", c.hdr, w.Code, w.Header().Get("Cache-Control"), expires, w.Header().Get("X-Frame-Options"))
			}
		}
		if w := serve(t, cl, "/missing"); w.Code != 404 || w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("404: Cache-Control %q", w.Header().Get("Cache-Control"))
		}
	})
}

// An encoded slash is never a directory separator: 404 (or the fallback).
func TestEncodedSlashNamesNoFile(t *testing.T) {
	engines(t, func(t *testing.T, on func(http.Handler) *enginetest.Client) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "dir"), 0o755)
		write(t, filepath.Join(dir, "dir", "file.txt"), []byte("in dir\n"), time.Now())
		write(t, filepath.Join(dir, "index.html"), []byte("app\n"), time.Now())
		h, _ := unitHandler(t, dir, config.Static{})
		c := on(h)
		if w := serve(t, c, "/dir/file.txt"); w.Code != 200 {
			t.Fatalf("/dir/file.txt: %d", w.Code)
		}
		for _, p := range []string{"/dir%2Ffile.txt", "/dir%2ffile.txt", "/dir/file.txt%2F"} {
			if w := serve(t, c, p); w.Code != 404 {
				t.Errorf("%s: %d, want 404", p, w.Code)
			}
		}
		spa, _ := unitHandler(t, dir, config.Static{Fallback: "/index.html"})
		cspa := on(spa)
		if w := serve(t, cspa, "/dir%2Ffile.txt"); w.Code != 200 || w.Body.String() != "app\n" {
			t.Errorf("with a fallback: %d %q", w.Code, w.Body.String())
		}
	})
}

// Range on two lines is no valid Range: the whole file, 200.
func TestRangeOnTwoLines(t *testing.T) {
	engines(t, func(t *testing.T, on func(http.Handler) *enginetest.Client) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "a.txt"), []byte("0123456789"), time.Now().Add(-time.Hour))
		h, _ := unitHandler(t, dir, config.Static{})
		c := on(h)
		w := serve(t, c, "/a.txt", "Range: bytes=0-1", "Range: bytes=5-6")
		if w.Code != 200 || w.Body.String() != "0123456789" {
			t.Errorf("two Range lines: %d %q", w.Code, w.Body.String())
		}
		if w := serve(t, c, "/a.txt", "Range: bytes=2-99999999999999999999999"); w.Code != 206 || w.Body.String() != "23456789" {
			t.Errorf("last-pos past the end, in 23 digits: %d %q", w.Code, w.Body.String())
		}
	})
}

// Several ranges of a file sent from disk, out of order: each part holds
// its bytes (one open file, a seek per part).
func TestMultiRangeFromDisk(t *testing.T) {
	engines(t, func(t *testing.T, on func(http.Handler) *enginetest.Client) {
		dir := t.TempDir()
		big := make([]byte, 600<<10) // over the in-memory limit
		for i := range big {
			big[i] = byte(i * 7 >> 3)
		}
		write(t, filepath.Join(dir, "big.bin"), big, time.Now().Add(-time.Hour))
		h, _ := unitHandler(t, dir, config.Static{})
		c := on(h)
		want := [][2]int{{500000, 500009}, {10, 19}, {300000, 300000}}
		w := serve(t, c, "/big.bin", "Range: bytes=500000-500009,10-19,300000-300000")
		_, params, err := mime.ParseMediaType(w.Header().Get("Content-Type"))
		if w.Code != 206 || err != nil {
			t.Fatalf("%d %q", w.Code, w.Header().Get("Content-Type"))
		}
		if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(w.Body.Len()) {
			t.Errorf("Content-Length %s, body %d bytes", cl, w.Body.Len())
		}
		mr := multipart.NewReader(w.Body, params["boundary"])
		for i := 0; ; i++ {
			p, err := mr.NextPart()
			if err == io.EOF {
				if i != len(want) {
					t.Errorf("%d parts, want %d", i, len(want))
				}
				break
			}
			if err != nil || i >= len(want) {
				t.Fatalf("part %d: %v", i, err)
			}
			b, _ := io.ReadAll(p)
			if !bytes.Equal(b, big[want[i][0]:want[i][1]+1]) {
				t.Errorf("part %d (%s): wrong bytes", i, p.Header.Get("Content-Range"))
			}
		}
	})
}

// TestRewrittenSameSizeAndMtime: a file rewritten in place with the same
// size and modification time (cp -p, rsync -t --inplace, a restore from
// backup) is served new once the cache looks at it again (DefaultValid):
// its change time (ctime) differs. Both the body held in memory and a
// variant compressed on the fly from it are dropped.
func TestRewrittenSameSizeAndMtime(t *testing.T) {
	dir := t.TempDir()
	page := func(v string) string { return strings.Repeat("<p>version "+v+" of the page</p>\n", 100) }
	files := map[string][2]string{
		"a.txt":     {"OLD-CONTENT\n", "NEW-CONTENT\n"},
		"page.html": {page("old"), page("new")},
	}
	mtime := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, v := range files {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(v[0]), 0o644)
		os.Chtimes(p, mtime, mtime)
	}
	cfg := config.Static{Root: dir}
	c := static.NewCache(static.CacheOptions{})
	h, err := static.New(complete(t, &cfg), static.Options{Cache: c, Compress: true, MinSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); c.Close() })
	cl := enginetest.Serve(t, h).Clients()[0]
	body := func(name string) string {
		resp, b := cl.Get(t, "/"+name, "Accept-Encoding: gzip")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", name, resp.StatusCode)
		}
		return string(decode(t, resp.Header.Get("Content-Encoding"), b))
	}
	for name, v := range files {
		if got := body(name); got != v[0] {
			t.Fatalf("%s: %.30q", name, got)
		}
	}
	for name, v := range files {
		p := filepath.Join(dir, name)
		f, err := os.OpenFile(p, os.O_WRONLY, 0) // same inode
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte(v[1]), 0)
		f.Close()
		os.Chtimes(p, mtime, mtime)
	}
	deadline := time.Now().Add(static.DefaultValid + 500*time.Millisecond)
	for {
		stale := 0
		for name, v := range files {
			if got := body(name); got != v[1] {
				stale++
				if time.Now().After(deadline) {
					t.Errorf("%s still served as %.30q after %v", name, got, static.DefaultValid+500*time.Millisecond)
				}
			}
		}
		if stale == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A file rewritten with the same size within the same second, and the
// same millisecond, of its previous version gets a new ETag: the ETag
// carries the modification time in nanoseconds (as Linux keeps it), so a
// client revalidating the old version with If-None-Match gets the new
// body, not a stale 304.
func TestSameSizeRewriteNewETag(t *testing.T) {
	engines(t, func(t *testing.T, on func(http.Handler) *enginetest.Client) {
		dir := t.TempDir()
		p := filepath.Join(dir, "v.txt")
		t0 := time.Now().Add(-time.Hour).Truncate(time.Second).Add(500 * time.Millisecond)
		write(t, p, []byte("version one\n"), t0)
		h, _ := unitHandler(t, dir, config.Static{})
		c := on(h)
		w := serve(t, c, "/v.txt")
		old := w.Header().Get("Etag")
		if w.Code != 200 || w.Body.String() != "version one\n" || old == "" {
			t.Fatalf("first version: %d %q %q", w.Code, w.Body, old)
		}
		write(t, p, []byte("version two\n"), t0.Add(time.Microsecond))
		time.Sleep(5 * time.Millisecond) // the cache looks again after 1 ms
		w = serve(t, c, "/v.txt", "If-None-Match: "+old)
		if w.Code != 200 || w.Body.String() != "version two\n" || w.Header().Get("Etag") == old {
			t.Errorf("same-size rewrite 1 µs later: %d %q, ETag %s (was %s)", w.Code, w.Body, w.Header().Get("Etag"), old)
		}
	})
}
