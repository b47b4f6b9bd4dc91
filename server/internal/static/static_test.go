package static_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
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

	"github.com/andybalholm/brotli"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/internal/static"
	"github.com/arkaweb/arka/server/servertest"
	"github.com/klauspost/compress/zstd"
)

// site is a site file serving {{DIR}}/www on both listeners.
const site = `
default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[compression]
min_size = "512B"
[[routes]]
path = "/"
handler = { type = "static", root = "{{DIR}}/www" }
`

var (
	indexHTML = []byte("<!DOCTYPE html><title>t</title>" + strings.Repeat("<p>Arka serves this page.</p>\n", 60))
	appJS     = []byte(strings.Repeat("function f(a,b){return a+b}\n", 400))
	styleCSS  = []byte(strings.Repeat("body { margin: 0; padding: 0 }\n", 80))
	bigBin    = func() []byte {
		b := make([]byte, 1<<20)
		x := uint32(1)
		for i := range b {
			x = x*1664525 + 1013904223
			b[i] = byte(x >> 24)
		}
		return b
	}()
)

func compress(t testing.TB, coding string, b []byte) []byte {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "br":
		w = brotli.NewWriterLevel(&buf, 11)
	case "gzip":
		w, _ = gzip.NewWriterLevel(&buf, 9)
	case "zstd":
		w, _ = zstd.NewWriter(&buf)
	}
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func decode(t testing.TB, coding string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch coding {
	case "", "identity":
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
	default:
		t.Fatalf("unknown coding %q", coding)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", coding, err)
	}
	return out
}

// tree writes the test site under dir/www.
func tree(t testing.TB, dir string) {
	t.Helper()
	www := filepath.Join(dir, "www")
	files := map[string][]byte{
		"index.html":                         indexHTML,
		"app.js":                             appJS,
		"app.js.br":                          compress(t, "br", appJS),
		"app.js.gz":                          compress(t, "gzip", appJS),
		"app.js.zst":                         compress(t, "zstd", appJS),
		"style.css":                          styleCSS,
		"big.bin":                            bigBin,
		"tiny.txt":                           []byte("tiny\n"),
		"image.png":                          bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 400),
		"data.unknownext":                    []byte("?"),
		"sub/index.html":                     []byte("sub index\n"),
		"dir/file.txt":                       []byte("in dir\n"),
		".secret":                            []byte("secret\n"),
		".git/config":                        []byte("[core]\n"),
		"sub/.hidden":                        []byte("hidden\n"),
		".well-known/acme-challenge/token-1": []byte("token\n"),
		"name with space.txt":                []byte("space\n"),
	}
	// One modification time for all, as gzip -k and brotli leave a
	// sibling (written in map order, a sibling would else be older than
	// its file, and ignored).
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	for name, data := range files {
		p := filepath.Join(www, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mtime, mtime)
	}
	os.WriteFile(filepath.Join(dir, "outside.txt"), []byte("outside root\n"), 0o644)
	os.Symlink(filepath.Join(dir, "outside.txt"), filepath.Join(www, "link-out.txt"))
	os.Symlink("/etc", filepath.Join(www, "etc-link"))
	os.Symlink("index.html", filepath.Join(www, "link-in.html"))
}

func newEnv(t *testing.T) *servertest.Env {
	t.Helper()
	dir := t.TempDir()
	tree(t, dir)
	return servertest.Start(t, strings.ReplaceAll(site, "{{DIR}}", dir))
}

func TestGetAndHead(t *testing.T) {
	e := newEnv(t)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, body := c.Get(t, "/index.html")
		if resp.StatusCode != 200 || !bytes.Equal(body, indexHTML) {
			t.Fatalf("GET: %d, %d bytes", resp.StatusCode, len(body))
		}
		for k, want := range map[string]string{
			"Content-Type":   "text/html; charset=utf-8",
			"Content-Length": strconv.Itoa(len(indexHTML)),
			"Accept-Ranges":  "bytes",
			"Vary":           "Accept-Encoding",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		etag := resp.Header.Get("ETag")
		if !strings.HasPrefix(etag, `"`) || resp.Header.Get("Last-Modified") == "" {
			t.Errorf("validators: ETag %q, Last-Modified %q", etag, resp.Header.Get("Last-Modified"))
		}
		// RFC 9110 section 9.3.2: HEAD has GET's header fields and no content.
		hr, hbody := c.Do(t, "HEAD", "/index.html")
		if hr.StatusCode != 200 || len(hbody) != 0 {
			t.Errorf("HEAD: %d with %d body bytes", hr.StatusCode, len(hbody))
		}
		for _, k := range []string{"Content-Type", "Content-Length", "Etag", "Last-Modified", "Accept-Ranges", "Vary"} {
			if hr.Header.Get(k) != resp.Header.Get(k) {
				t.Errorf("HEAD %s = %q, GET had %q", k, hr.Header.Get(k), resp.Header.Get(k))
			}
		}
		// The root serves index.html.
		if r, b := c.Get(t, "/"); r.StatusCode != 200 || !bytes.Equal(b, indexHTML) {
			t.Errorf("GET /: %d", r.StatusCode)
		}
	})
}

func TestContentTypes(t *testing.T) {
	e := newEnv(t)
	c := e.Clients()[0]
	for path, want := range map[string]string{
		"/app.js":                  "text/javascript; charset=utf-8",
		"/style.css":               "text/css; charset=utf-8",
		"/image.png":               "image/png",
		"/tiny.txt":                "text/plain; charset=utf-8",
		"/data.unknownext":         "application/octet-stream",
		"/name%20with%20space.txt": "text/plain; charset=utf-8",
	} {
		resp, _ := c.Get(t, path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != want {
			t.Errorf("%s: %d %q, want %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
	}
}

// RFC 9110 section 12.5.3: Accept-Encoding with q-values; precompressed
// siblings preferred smallest-first among equally acceptable codings.
func TestPrecompressedSelection(t *testing.T) {
	e := newEnv(t)
	sizes := map[string]int{"br": len(compress(t, "br", appJS)), "gzip": len(compress(t, "gzip", appJS)), "zstd": len(compress(t, "zstd", appJS))}
	smallest := "br"
	for c, n := range sizes {
		if n < sizes[smallest] {
			smallest = c
		}
	}
	cases := []struct{ ae, want string }{
		{"gzip, deflate, br, zstd", smallest},
		{"gzip", "gzip"},
		{"GZIP", "gzip"},
		{"x-gzip", "gzip"},
		{"zstd", "zstd"},
		{"br;q=0, gzip", "gzip"},
		{"gzip;q=0.5, zstd;q=0.8", "zstd"},
		{"identity", ""},
		{"", ""},
		{"*", smallest},
		{"*;q=0, gzip", "gzip"},
		{"deflate, compress", ""},
		{"br;q=abc, gzip", "gzip"},
		{"gzip;q=0, identity;q=0", ""}, // nothing acceptable: identity anyway (not 406)
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		etags := map[string]string{}
		for _, tc := range cases {
			var hdr []string
			if tc.ae != "" {
				hdr = append(hdr, "Accept-Encoding: "+tc.ae)
			}
			resp, body := c.Get(t, "/app.js", hdr...)
			got := resp.Header.Get("Content-Encoding")
			if resp.StatusCode != 200 || got != tc.want {
				t.Errorf("Accept-Encoding %q: %d, Content-Encoding %q, want %q", tc.ae, resp.StatusCode, got, tc.want)
				continue
			}
			if !bytes.Equal(decode(t, got, body), appJS) {
				t.Errorf("Accept-Encoding %q: body does not decode to app.js", tc.ae)
			}
			if resp.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("Accept-Encoding %q: Vary %q", tc.ae, resp.Header.Get("Vary"))
			}
			if resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
				t.Errorf("Content-Type of %s representation: %q", got, resp.Header.Get("Content-Type"))
			}
			if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length %s for %d bytes", cl, len(body))
			}
			etags[got] = resp.Header.Get("ETag")
		}
		// RFC 9110 section 8.8.3: each representation has its own tag.
		seen := map[string]string{}
		for coding, tag := range etags {
			if other, dup := seen[tag]; dup {
				t.Errorf("ETag %s shared by %q and %q", tag, coding, other)
			}
			seen[tag] = coding
		}
	})
}

// Files without siblings are compressed once (brotli, else gzip) and kept.
func TestCompressedOnce(t *testing.T) {
	e := newEnv(t)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		r1, b1 := c.Get(t, "/style.css", "Accept-Encoding: br, gzip")
		if r1.Header.Get("Content-Encoding") != "br" || !bytes.Equal(decode(t, "br", b1), styleCSS) {
			t.Fatalf("first: %q", r1.Header.Get("Content-Encoding"))
		}
		r2, b2 := c.Get(t, "/style.css", "Accept-Encoding: br, gzip")
		if !bytes.Equal(b1, b2) || r1.Header.Get("ETag") != r2.Header.Get("ETag") {
			t.Errorf("second response differs from the first")
		}
		rg, bg := c.Get(t, "/style.css", "Accept-Encoding: gzip")
		if rg.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(decode(t, "gzip", bg), styleCSS) {
			t.Errorf("gzip: %q", rg.Header.Get("Content-Encoding"))
		}
		if rg.Header.Get("ETag") == r1.Header.Get("ETag") {
			t.Errorf("gzip and br share ETag %s", rg.Header.Get("ETag"))
		}
		// Small files, and types that do not compress, go as they are.
		if r, _ := c.Get(t, "/tiny.txt", "Accept-Encoding: br, gzip"); r.Header.Get("Content-Encoding") != "" {
			t.Errorf("tiny.txt encoded as %q", r.Header.Get("Content-Encoding"))
		}
		if r, _ := c.Get(t, "/image.png", "Accept-Encoding: br, gzip"); r.Header.Get("Content-Encoding") != "" || r.Header.Get("Vary") != "" {
			t.Errorf("image.png: Content-Encoding %q, Vary %q", r.Header.Get("Content-Encoding"), r.Header.Get("Vary"))
		}
	})
	st := e.Server.CacheStats()
	if st.VariantEntries < 2 || st.VariantBytes == 0 {
		t.Errorf("variant cache: %+v", st)
	}
}

// RFC 9110 section 13.2.2: evaluation order of preconditions.
func TestConditionalRequests(t *testing.T) {
	e := newEnv(t)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		r, _ := c.Get(t, "/index.html")
		etag, lm := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
		lmTime, _ := http.ParseTime(lm)
		past := lmTime.Add(-time.Hour).Format(http.TimeFormat)
		future := lmTime.Add(time.Hour).Format(http.TimeFormat)
		cases := []struct {
			name   string
			method string
			hdr    []string
			want   int
		}{
			{"13.1.2 If-None-Match match", "GET", []string{"If-None-Match: " + etag}, 304},
			{"13.1.2 If-None-Match weak comparison", "GET", []string{"If-None-Match: W/" + etag}, 304},
			{"13.1.2 If-None-Match list", "GET", []string{`If-None-Match: "x", ` + etag}, 304},
			{"13.1.2 If-None-Match star", "GET", []string{"If-None-Match: *"}, 304},
			{"13.1.2 If-None-Match other", "GET", []string{`If-None-Match: "other"`}, 200},
			{"13.1.2 If-None-Match on HEAD", "HEAD", []string{"If-None-Match: " + etag}, 304},
			{"13.1.3 If-Modified-Since equal", "GET", []string{"If-Modified-Since: " + lm}, 304},
			{"13.1.3 If-Modified-Since later", "GET", []string{"If-Modified-Since: " + future}, 304},
			{"13.1.3 If-Modified-Since earlier", "GET", []string{"If-Modified-Since: " + past}, 200},
			{"13.1.3 If-Modified-Since bad date ignored", "GET", []string{"If-Modified-Since: yesterday"}, 200},
			{"13.2.2 If-None-Match before If-Modified-Since", "GET", []string{`If-None-Match: "other"`, "If-Modified-Since: " + future}, 200},
			{"13.1.1 If-Match match", "GET", []string{"If-Match: " + etag}, 200},
			{"13.1.1 If-Match star", "GET", []string{"If-Match: *"}, 200},
			{"13.1.1 If-Match other", "GET", []string{`If-Match: "other"`}, 412},
			{"13.1.1 If-Match weak never matches", "GET", []string{"If-Match: W/" + etag}, 412},
			{"13.1.4 If-Unmodified-Since earlier", "GET", []string{"If-Unmodified-Since: " + past}, 412},
			{"13.1.4 If-Unmodified-Since later", "GET", []string{"If-Unmodified-Since: " + future}, 200},
			{"13.2.2 If-Match before If-Unmodified-Since", "GET", []string{"If-Match: " + etag, "If-Unmodified-Since: " + past}, 200},
		}
		for _, tc := range cases {
			resp, body := c.Do(t, tc.method, "/index.html", tc.hdr...)
			if resp.StatusCode != tc.want {
				t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
			}
			if resp.StatusCode == 304 {
				if len(body) != 0 || resp.Header.Get("ETag") != etag {
					t.Errorf("%s: 304 with %d body bytes, ETag %q", tc.name, len(body), resp.Header.Get("ETag"))
				}
			}
		}
	})
}

// RFC 9110 section 14: Range, If-Range, 206 and 416.
func TestRanges(t *testing.T) {
	e := newEnv(t)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, path := range []string{"/index.html", "/big.bin"} {
			full := indexHTML
			if path == "/big.bin" {
				full = bigBin
			}
			size := len(full)
			r, _ := c.Do(t, "HEAD", path)
			etag, lm := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
			cases := []struct {
				rng        string
				extra      []string
				status     int
				start, end int // expected slice for a single range
			}{
				{"bytes=0-99", nil, 206, 0, 100},
				{"bytes=100-", nil, 206, 100, size},
				{"bytes=-50", nil, 206, size - 50, size},
				{"bytes=10-10", nil, 206, 10, 11},
				{"bytes=0-99999999", nil, 206, 0, size},
				{"BYTES=0-9", nil, 206, 0, 10},
				{"bytes=" + strconv.Itoa(size) + "-", nil, 416, 0, 0},
				{"bytes=-0", nil, 416, 0, 0},
				{"bytes=abc", nil, 200, 0, size},
				{"bytes=5-2", nil, 200, 0, size},
				{"items=0-9", nil, 200, 0, size},
				{"bytes=0-9", []string{"If-Range: " + etag}, 206, 0, 10},
				{"bytes=0-9", []string{`If-Range: "stale"`}, 200, 0, size},
				{"bytes=0-9", []string{"If-Range: W/" + etag}, 200, 0, size},
				{"bytes=0-9", []string{"If-Range: " + lm}, 206, 0, 10},
				{"bytes=0-9", []string{"If-Range: Mon, 01 Jan 2001 00:00:00 GMT"}, 200, 0, size},
				{"bytes=0-9,5-20", nil, 200, 0, size}, // overlapping: ignored
			}
			for _, tc := range cases {
				resp, body := c.Get(t, path, append([]string{"Range: " + tc.rng}, tc.extra...)...)
				name := path + " " + tc.rng + " " + strings.Join(tc.extra, " ")
				if resp.StatusCode != tc.status {
					t.Errorf("%s: status %d, want %d", name, resp.StatusCode, tc.status)
					continue
				}
				switch tc.status {
				case 206, 200:
					if !bytes.Equal(body, full[tc.start:tc.end]) {
						t.Errorf("%s: %d body bytes, want [%d:%d]", name, len(body), tc.start, tc.end)
					}
					if tc.status == 206 {
						want := fmt.Sprintf("bytes %d-%d/%d", tc.start, tc.end-1, size)
						if resp.Header.Get("Content-Range") != want {
							t.Errorf("%s: Content-Range %q, want %q", name, resp.Header.Get("Content-Range"), want)
						}
					}
				case 416:
					if resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
						t.Errorf("%s: 416 Content-Range %q", name, resp.Header.Get("Content-Range"))
					}
				}
			}
			// Several ranges: multipart/byteranges (RFC 9110 section 14.6).
			resp, body := c.Get(t, path, "Range: bytes=0-9, 20-29, -5")
			mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode != 206 || mt != "multipart/byteranges" {
				t.Fatalf("multi-range: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
				t.Errorf("multi-range Content-Length %s, body %d", resp.Header.Get("Content-Length"), len(body))
			}
			mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
			want := [][2]int{{0, 10}, {20, 30}, {size - 5, size}}
			for i := 0; ; i++ {
				part, err := mr.NextPart()
				if err == io.EOF {
					if i != 3 {
						t.Errorf("multi-range: %d parts", i)
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				pb, _ := io.ReadAll(part)
				if i < 3 && !bytes.Equal(pb, full[want[i][0]:want[i][1]]) {
					t.Errorf("part %d: wrong bytes", i)
				}
			}
		}
		// A range of a compressed representation is a range of its bytes.
		br := compress(t, "br", appJS)
		resp, body := c.Get(t, "/app.js", "Accept-Encoding: br", "Range: bytes=0-9")
		if resp.StatusCode != 206 || resp.Header.Get("Content-Encoding") != "br" || !bytes.Equal(body, br[:10]) {
			t.Errorf("range of br representation: %d %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
	})
}

func TestDirectoriesAndDotfiles(t *testing.T) {
	e := newEnv(t)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		cases := []struct {
			path   string
			status int
			loc    string
		}{
			{"/sub", 301, "/sub/"},
			{"/sub?x=1&y=2", 301, "/sub/?x=1&y=2"},
			{"/sub/", 200, ""},
			{"/dir/", 403, ""},
			{"/dir/file.txt", 200, ""},
			{"/index.html/", 404, ""},
			{"/nope.html", 404, ""},
			{"/.secret", 404, ""},
			{"/.git/config", 404, ""},
			{"/sub/.hidden", 404, ""},
			{"/.well-known/acme-challenge/token-1", 200, ""},
			{"/.well-known/../.secret", 404, ""},
		}
		for _, tc := range cases {
			resp, body := c.Get(t, tc.path)
			if resp.StatusCode != tc.status {
				t.Errorf("%s: %d, want %d", tc.path, resp.StatusCode, tc.status)
			}
			if tc.loc != "" && resp.Header.Get("Location") != tc.loc {
				t.Errorf("%s: Location %q, want %q", tc.path, resp.Header.Get("Location"), tc.loc)
			}
			if resp.StatusCode >= 400 && bytes.Contains(body, []byte("secret")) {
				t.Errorf("%s: error body leaks the file", tc.path)
			}
		}
	})
}

// Safe path resolution: nothing outside root is ever served.
func TestTraversal(t *testing.T) {
	e := newEnv(t)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		cases := []struct {
			path string
			want int
		}{
			{"/../outside.txt", 400},
			{"/sub/../../outside.txt", 400},
			{"/%2e%2e/outside.txt", 400},
			{"/%2E%2E/%2e%2e/etc/passwd", 400},
			{"/sub/%2e%2e/%2e%2e/outside.txt", 400},
			{"/..%2foutside.txt", 400},
			{"/sub%2f..%2f..%2foutside.txt", 400},
			{"/..%5coutside.txt", 400},
			{"/sub\\..\\..\\outside.txt", 400},
			{"/index.html%00.txt", 400},
			{"/link-out.txt", 404},
			{"/etc-link/passwd", 404},
			{"/link-in.html", 200},
			{"/sub/../index.html", 200},
			{"//index.html", 200},
			{"/./index.html", 200},
		}
		for _, tc := range cases {
			resp, body := c.Get(t, tc.path)
			if resp.StatusCode != tc.want {
				t.Errorf("%s: %d, want %d", tc.path, resp.StatusCode, tc.want)
			}
			if bytes.Contains(body, []byte("outside root")) || bytes.Contains(body, []byte("root:")) {
				t.Errorf("%s: served a file outside root", tc.path)
			}
		}
	})
}

// TestMethods: other methods than GET and HEAD get 405 (RFC 9110 section
// 15.5.6), OPTIONS gets 204 (section 9.3.7); both list in Allow every
// method the resource answers, OPTIONS included (section 10.2.1).
func TestMethods(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		method string
		status int
	}{
		{"POST", 405}, {"PUT", 405}, {"DELETE", 405}, {"PATCH", 405}, {"TRACE", 405}, {"get", 405},
		{"OPTIONS", 204},
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, tc := range cases {
			resp, _ := c.Do(t, tc.method, "/index.html")
			if resp.StatusCode != tc.status || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
				t.Errorf("%s: %d, Allow %q; want %d, Allow \"GET, HEAD, OPTIONS\"", tc.method, resp.StatusCode, resp.Header.Get("Allow"), tc.status)
			}
		}
	})
}

// A changed file is noticed after the cache's validity (1 s by default).
func TestFileChanges(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir)
	e := servertest.StartWith(t, server.Options{Cache: static.CacheOptions{Valid: 50 * time.Millisecond}}, strings.ReplaceAll(site, "{{DIR}}", dir))
	c := e.Clients()[0]
	r1, _ := c.Get(t, "/tiny.txt")
	p := filepath.Join(dir, "www", "tiny.txt")
	os.WriteFile(p, []byte("changed, and longer\n"), 0o644)
	os.Chtimes(p, time.Now().Add(time.Minute), time.Now().Add(time.Minute))
	deadline := time.Now().Add(5 * time.Second)
	for {
		r2, b2 := c.Get(t, "/tiny.txt")
		if string(b2) == "changed, and longer\n" {
			if r2.Header.Get("ETag") == r1.Header.Get("ETag") {
				t.Errorf("ETag unchanged after the file changed")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still serving the old file: %q", b2)
		}
		time.Sleep(20 * time.Millisecond)
	}
	os.Remove(p)
	for {
		r, _ := c.Get(t, "/tiny.txt")
		if r.StatusCode == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("removed file still served")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The caches never exceed their budgets, however many files are asked for.
func TestCacheBudget(t *testing.T) {
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	os.MkdirAll(www, 0o755)
	body := []byte(strings.Repeat("budget test line\n", 256)) // 4 KiB, compressible
	for i := 0; i < 600; i++ {
		os.WriteFile(filepath.Join(www, fmt.Sprintf("f%d.txt", i)), body, 0o644)
	}
	const fileBudget, variantBudget = 256 << 10, 64 << 10
	e := servertest.StartWith(t, server.Options{Cache: static.CacheOptions{FileBytes: fileBudget, VariantBytes: variantBudget}},
		strings.ReplaceAll(site, "{{DIR}}", dir))
	c := e.Clients()[0]
	for i := 0; i < 600; i++ {
		resp, b := c.Get(t, fmt.Sprintf("/f%d.txt", i), "Accept-Encoding: gzip")
		if resp.StatusCode != 200 || !bytes.Equal(decode(t, resp.Header.Get("Content-Encoding"), b), body) {
			t.Fatalf("f%d: %d", i, resp.StatusCode)
		}
		if i%100 == 99 {
			st := e.Server.CacheStats()
			if st.FileBytes > fileBudget || st.VariantBytes > variantBudget {
				t.Fatalf("after %d files: %+v exceeds budgets", i+1, st)
			}
		}
	}
	st := e.Server.CacheStats()
	t.Logf("after 600 files: %d file entries, %d bytes of %d; %d variants, %d bytes of %d",
		st.FileEntries, st.FileBytes, st.FileBudget, st.VariantEntries, st.VariantBytes, st.VariantBudget)
}
