package encoding

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/arkaweb/arka/server/internal/enginetest"
)

func decodeBody(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch coding {
	case "":
		return b
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "gzip":
		g, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = g
	case "zstd":
		z, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		r = z
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", coding, err)
	}
	return out
}

var page = strings.Repeat("<p>made per request, like a PHP page</p>\n", 100)

// each serves routes (by request path) behind the middleware (MinSize
// 512) on Arka's own engines and runs fn once per client: HTTP/1.1,
// HTTP/1.1 with TLS and HTTP/2 (package enginetest, with its goroutine
// check).
func each(t *testing.T, routes map[string]http.HandlerFunc, fn func(t *testing.T, c *enginetest.Client)) {
	t.Helper()
	m := New(Options{MinSize: 512})
	e := enginetest.Serve(t, m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := routes[r.URL.Path]
		if !ok {
			t.Errorf("no route for %s", r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		h(w, r)
	})))
	e.Each(t, fn)
}

// do sends a request with Accept-Encoding ae (none when "") and the extra
// header fields ("Name: value"); the client decodes nothing.
func do(t *testing.T, c *enginetest.Client, method, path, ae string, extra ...string) (*http.Response, []byte) {
	t.Helper()
	if ae != "" {
		extra = append(extra, "Accept-Encoding: "+ae)
	}
	return c.Do(t, method, path, extra...)
}

func TestMiddlewareChoosesCoding(t *testing.T) {
	h := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("ETag", `"v1"`)
		io.WriteString(w, page)
	}
	each(t, map[string]http.HandlerFunc{"/": h}, func(t *testing.T, c *enginetest.Client) {
		for ae, want := range map[string]string{
			"gzip, deflate, br, zstd": "zstd",
			"gzip, deflate, br":       "br",
			"gzip":                    "gzip",
			"":                        "",
			"identity":                "",
		} {
			resp, b := do(t, c, "GET", "/", ae)
			if got := resp.Header.Get("Content-Encoding"); got != want {
				t.Errorf("%q: Content-Encoding %q, want %q", ae, got, want)
				continue
			}
			if string(decodeBody(t, want, b)) != page {
				t.Errorf("%q: body does not decode", ae)
			}
			if resp.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("%q: Vary %q (identity responses vary too)", ae, resp.Header.Get("Vary"))
			}
			if want != "" {
				if cl := resp.Header.Get("Content-Length"); resp.Header.Get("Vary") != "Accept-Encoding" || cl != "" && cl != strconv.Itoa(len(b)) {
					t.Errorf("%q: Vary %q, Content-Length %q", ae, resp.Header.Get("Vary"), resp.Header.Get("Content-Length"))
				}
				if resp.Header.Get("ETag") != `W/"v1"` {
					t.Errorf("%q: ETag %q not weakened", ae, resp.Header.Get("ETag"))
				}
			}
		}
	})
}

func TestMiddlewareLeavesAlone(t *testing.T) {
	cases := map[string]http.HandlerFunc{
		"/short": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "short")
		},
		"/short-with-length": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "short")
		},
		"/image": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/jpeg")
			io.WriteString(w, page)
		},
		"/already-encoded": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
			io.WriteString(w, page)
		},
		"/no-transform": func(w http.ResponseWriter, r *http.Request) { // RFC 9111 section 5.2.2.6
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Cache-Control", "public, no-transform")
			io.WriteString(w, page)
		},
		"/partial": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Range", "bytes 0-9/100")
			w.WriteHeader(206)
			io.WriteString(w, page[:10])
		},
		"/304": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(304) },
		"/204": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) },
	}
	each(t, cases, func(t *testing.T, c *enginetest.Client) {
		for name := range cases {
			if name == "/304" || name == "/204" {
				continue
			}
			resp, b := do(t, c, "GET", name, "gzip, br, zstd")
			if ce := resp.Header.Get("Content-Encoding"); ce != "" && name != "/already-encoded" || name == "/already-encoded" && ce != "gzip" {
				t.Errorf("%s: Content-Encoding %q", name, ce)
			}
			if name == "/short" && (string(b) != "short" || resp.Header.Get("Content-Length") != "5") {
				t.Errorf("short: %q, Content-Length %q", b, resp.Header.Get("Content-Length"))
			}
		}
		resp, _ := do(t, c, "GET", "/304", "gzip")
		if resp.StatusCode != 304 || resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("304: %d %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
		resp, _ = do(t, c, "GET", "/204", "gzip")
		if resp.StatusCode != 204 {
			t.Errorf("204: %d", resp.StatusCode)
		}
	})
}

func TestMiddlewareSniffsAndHead(t *testing.T) {
	each(t, map[string]http.HandlerFunc{
		"/sniffed": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>"+page) },
		"/head": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", "4200")
		},
		"/unsized": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
		},
		"/shortbody": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<p>short</p>")
		},
	}, func(t *testing.T, c *enginetest.Client) {
		resp, b := do(t, c, "GET", "/sniffed", "gzip")
		if resp.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("sniffed: %q %q", resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Type"))
		}
		if string(decodeBody(t, "gzip", b)) != "<html>"+page {
			t.Errorf("sniffed body differs")
		}
		resp, b = do(t, c, "HEAD", "/head", "zstd")
		if resp.Header.Get("Content-Encoding") != "zstd" || len(b) != 0 {
			t.Errorf("HEAD: %q, %d bytes", resp.Header.Get("Content-Encoding"), len(b))
		}
		// No length and no body (php-fpm's HEAD): GET's coding is not
		// known, none is claimed, nor a Vary.
		for _, ae := range []string{"zstd", ""} {
			resp, b = do(t, c, "HEAD", "/unsized", ae)
			if resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Vary") != "" || resp.Header.Get("Content-Length") != "" || len(b) != 0 {
				t.Errorf("HEAD without a length, %q: %v, %d bytes", ae, resp.Header, len(b))
			}
		}
		// A handler that writes GET's body for HEAD gets GET's decision.
		for path, coded := range map[string]bool{"/sniffed": true, "/shortbody": false} {
			get, _ := do(t, c, "GET", path, "zstd")
			head, _ := do(t, c, "HEAD", path, "zstd")
			if g, h := get.Header.Get("Content-Encoding"), head.Header.Get("Content-Encoding"); g != h || (g != "") != coded {
				t.Errorf("%s: Content-Encoding: GET %q, HEAD %q", path, g, h)
			}
			if !coded && get.Header.Get("Content-Length") != head.Header.Get("Content-Length") {
				t.Errorf("%s: Content-Length: GET %v, HEAD %v", path, get.Header, head.Header)
			}
		}
	})
}

// Trailers a handler declared (a proxied chunked response with trailers)
// reach the client whether the body is encoded or, shorter than MinSize,
// sent as is: a length is not set for a short body then, since a response
// with a Content-Length has no trailer section.
func TestMiddlewareKeepsTrailers(t *testing.T) {
	trailing := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Trailer", "X-Checksum")
			if r.URL.Path == "/page-length" {
				// A declared length: coded, the body is not gathered
				// whole (its coded Content-Length would drop trailers).
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			}
			io.WriteString(w, body)
			w.Header().Set("X-Checksum", "abc")
		}
	}
	bodies := map[string]string{"/short": "short", "/page": page, "/page-length": page}
	each(t, map[string]http.HandlerFunc{"/short": trailing("short"), "/page": trailing(page), "/page-length": trailing(page)}, func(t *testing.T, c *enginetest.Client) {
		for path, body := range bodies {
			resp, b := do(t, c, "GET", path, "gzip")
			got := b
			if resp.Header.Get("Content-Encoding") == "gzip" {
				got = decodeBody(t, "gzip", b)
			}
			if string(got) != body || resp.Trailer.Get("X-Checksum") != "abc" {
				t.Errorf("%d-byte body: got %d bytes, trailer %q (Content-Length %q)", len(body), len(got),
					resp.Trailer.Get("X-Checksum"), resp.Header.Get("Content-Length"))
			}
		}
	})
}

// Server-sent events: each flush reaches the client as it happens.
func TestMiddlewareStreamsFlushes(t *testing.T) {
	step := make(chan struct{})
	each(t, map[string]http.HandlerFunc{"/": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := 0; i < 3; i++ {
			io.WriteString(w, "data: event\n\n")
			if err := rc.Flush(); err != nil {
				t.Error(err)
			}
			<-step
		}
	}}, func(t *testing.T, c *enginetest.Client) {
		for _, ae := range []string{"gzip", "br", "zstd"} {
			req, _ := http.NewRequest("GET", c.Base+"/", nil)
			req.Header.Set("Accept-Encoding", ae)
			resp, err := c.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Header.Get("Content-Encoding") != ae {
				t.Fatalf("%s: Content-Encoding %q", ae, resp.Header.Get("Content-Encoding"))
			}
			var dec io.Reader
			switch ae {
			case "gzip":
				dec, _ = gzip.NewReader(resp.Body)
			case "br":
				dec = brotli.NewReader(resp.Body)
			case "zstd":
				z, _ := zstd.NewReader(resp.Body)
				defer z.Close()
				dec = z
			}
			br := bufio.NewReader(dec)
			for i := 0; i < 3; i++ {
				got := make(chan string, 1)
				go func() {
					line, _ := br.ReadString('\n')
					br.ReadString('\n')
					got <- line
				}()
				select {
				case l := <-got:
					if l != "data: event\n" {
						t.Errorf("%s event %d: %q", ae, i, l)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: event %d did not arrive before the handler went on", ae, i)
				}
				step <- struct{}{}
			}
			resp.Body.Close()
		}
	})
}

func TestEncoderPoolReuse(t *testing.T) {
	var p Pools
	for _, c := range []Coding{Zstd, Brotli, Gzip} {
		for i := 0; i < 3; i++ {
			var buf bytes.Buffer
			e := p.Get(c, 1, &buf)
			io.WriteString(e, page)
			e.Close()
			p.Put(c, 1, e)
			if string(decodeBody(t, c.Token(), buf.Bytes())) != page {
				t.Fatalf("%v round %d: wrong output", c, i)
			}
		}
	}
}
