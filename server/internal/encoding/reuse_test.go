package encoding

import (
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/enginetest"
)

// reuseStored counts the coded bodies the cache holds.
func reuseStored(p *Pools) int {
	n := 0
	for i := range p.reuse.slots {
		if p.reuse.slots[i].Load() != nil {
			n++
		}
	}
	return n
}

// TestReuseCodedBodies: a body with a declared length is coded whole and
// sent with the coded Content-Length; the same bytes asked for again are
// stored on their second coding and served from the cache after, only for
// requests without credentials and responses not private; a handler that
// flushes streams as before.
func TestReuseCodedBodies(t *testing.T) {
	var n atomic.Int64 // makes /unique's bytes differ per request
	withLength := func(cc string, body func() string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b := body()
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			if cc != "" {
				w.Header().Set("Cache-Control", cc)
			}
			if r.URL.Path == "/one" {
				io.WriteString(w, b) // in one write, as the FastCGI handler's page
				return
			}
			io.WriteString(w, b[:len(b)/3]) // in pieces
			io.WriteString(w, b[len(b)/3:])
		}
	}
	same := func() string { return page }
	routes := map[string]http.HandlerFunc{
		"/page":    withLength("", same),
		"/private": withLength(`private="Set-Cookie", max-age=60`, same),
		"/nostore": withLength("no-store", same),
		"/unique":  withLength("", func() string { return page + strconv.FormatInt(n.Add(1), 10) }),
		"/one":     withLength("", func() string { return page + "one" }),
		"/flushes": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			io.WriteString(w, page[:100])
			w.(http.Flusher).Flush()
			io.WriteString(w, page[100:])
		},
	}
	pools := &Pools{}
	m := New(Options{MinSize: 512, Pools: pools})
	e := enginetest.Serve(t, m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		routes[r.URL.Path](w, r)
	})))
	e.Each(t, func(t *testing.T, c *enginetest.Client) {
		pools.reuse = reuseCache{}
		get := func(path string, extra ...string) []byte {
			t.Helper()
			resp, b := do(t, c, "GET", path, "gzip, deflate, br, zstd", extra...)
			if resp.Header.Get("Content-Encoding") != "zstd" {
				t.Fatalf("%s: Content-Encoding %q", path, resp.Header.Get("Content-Encoding"))
			}
			want := page
			switch path {
			case "/unique":
				want = page + strconv.FormatInt(n.Load(), 10)
			case "/one":
				want = page + "one"
			}
			if got := string(decodeBody(t, "zstd", b)); got != want {
				t.Fatalf("%s: body does not decode to what the handler wrote", path)
			}
			return b
		}
		for _, p := range []string{"/private", "/nostore", "/unique", "/private", "/nostore", "/unique", "/flushes", "/flushes"} {
			get(p)
		}
		for range 2 {
			get("/page", "Cookie: session=1")
			get("/page", "Authorization: Basic dTpw")
		}
		if k := reuseStored(pools); k != 0 {
			t.Fatalf("%d bodies stored for private, unique, streamed or credentialed answers", k)
		}
		first := get("/page")
		if k := reuseStored(pools); k != 0 {
			t.Fatalf("stored on first sight: %d", k)
		}
		second := get("/page")
		if k := reuseStored(pools); k != 1 {
			t.Fatalf("after the second coding %d bodies stored, want 1", k)
		}
		third := get("/page")
		if string(first) != string(second) || string(second) != string(third) {
			t.Errorf("coded bodies differ between requests")
		}
		for i, one := 0, get("/one"); i < 2; i++ {
			if string(get("/one")) != string(one) {
				t.Errorf("a body written in one piece: coded bodies differ between requests")
			}
		}
		body := []byte(page + "one")
		sum := pools.reuse.hash(Zstd, config.DefaultZstdLevel, body)
		if pools.reuse.get(sum, Zstd, config.DefaultZstdLevel, body) == nil {
			t.Errorf("a body written in one piece is not stored")
		}
		// The coded length is known: sent as a Content-Length.
		resp, b := do(t, c, "GET", "/page", "zstd")
		if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(b)) {
			t.Errorf("Content-Length %q for %d coded bytes", cl, len(b))
		}
		if resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("Vary %q", resp.Header.Get("Vary"))
		}
		// A different coding is a different entry.
		resp, b = do(t, c, "GET", "/page", "br")
		if resp.Header.Get("Content-Encoding") != "br" || string(decodeBody(t, "br", b)) != page {
			t.Errorf("br after zstd: %q", resp.Header.Get("Content-Encoding"))
		}
	})
}
