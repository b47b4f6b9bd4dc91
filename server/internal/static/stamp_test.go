package static_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/monotime"
	"github.com/arkaweb/arka/server/internal/static"
)

// The cache judges an entry's age by the request's start as the dispatch
// read it, not by a clock read of its own: with the stamp held still, a
// file replaced on disk keeps being served from the cache; once the stamp
// is Valid later, the new version is.
func TestCacheUsesRequestStart(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(name, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := static.NewCache(static.CacheOptions{Valid: time.Hour})
	h, err := static.New(complete(t, &config.Static{Root: dir}), static.Options{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); c.Close() })
	w := &discardWriter{h: http.Header{}, start: monotime.Now()} // stamped as by the dispatch
	r := &http.Request{Method: "GET", URL: &url.URL{Path: "/a.txt"}, Header: http.Header{}}
	length := func() string {
		clear(w.h)
		h.ServeHTTP(w, r)
		if w.status != 200 {
			t.Fatalf("status %d", w.status)
		}
		return w.h.Get("Content-Length")
	}
	if got := length(); got != "3" {
		t.Fatalf("Content-Length %q, want 3", got)
	}
	if err := os.WriteFile(name, []byte("second"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := length(); got != "3" {
		t.Errorf("within Valid of the stamp: Content-Length %q, want the cached 3", got)
	}
	w.start += int64(time.Hour)
	if got := length(); got != "6" {
		t.Errorf("a Valid after the stamp: Content-Length %q, want 6", got)
	}
}
