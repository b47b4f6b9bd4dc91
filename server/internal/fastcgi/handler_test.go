package fastcgi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/tests/fpmtest"
	"github.com/arkaweb/arka/tests/testkit"
)

func TestHello(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			res, body := get(t, p.client, p.url+"/app/hello.php")
			if res.StatusCode != http.StatusOK || body != "hello from php\n" {
				t.Fatalf("got %d %q", res.StatusCode, body)
			}
			if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
				t.Errorf("Content-Type %q", res.Header.Get("Content-Type"))
			}
		})
	}
}

// TestCGIVariables checks every meta-variable the handler sets, as PHP
// sees it in $_SERVER, over each protocol.
func TestCGIVariables(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		c.Env = map[string]string{"APP_ENV": "testing", "ORDER_LOG": ""}
	})
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			u, _ := url.Parse(p.url)
			target := "/app/index.php/a%20b/c?x=1&y=%2F"
			req, _ := http.NewRequest("POST", p.url+target, strings.NewReader("k=v"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Add("X-Custom", "v1")
			req.Header.Add("X-Custom", "v2")
			req.Header.Set("Proxy", "http://evil.example:3128")
			req.Header.Set("X_Forged", "yes")
			req.Header.Set("Authorization", "Bearer tok")
			req.Header.Set("X-Request-Id", "req-42")
			res, body := do(t, p.client, req)
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			var s map[string]any
			if err := json.Unmarshal([]byte(body), &s); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			tlsOn := p.name != "h1"
			proto := "HTTP/1.1"
			if p.name == "h2" {
				proto = "HTTP/2.0"
			}
			want := map[string]string{
				"SCRIPT_FILENAME":    e.root + "/app/index.php",
				"SCRIPT_NAME":        "/app/index.php",
				"PATH_INFO":          "/a b/c",
				"PATH_TRANSLATED":    e.root + "/a b/c",
				"DOCUMENT_ROOT":      e.root,
				"DOCUMENT_URI":       "/app/index.php/a b/c",
				"REQUEST_URI":        target,
				"QUERY_STRING":       "x=1&y=%2F",
				"REQUEST_METHOD":     "POST",
				"CONTENT_TYPE":       "application/x-www-form-urlencoded",
				"CONTENT_LENGTH":     "3",
				"SERVER_NAME":        u.Hostname(),
				"SERVER_PORT":        u.Port(),
				"SERVER_ADDR":        "127.0.0.1",
				"SERVER_PROTOCOL":    proto,
				"SERVER_SOFTWARE":    "arka/test",
				"REMOTE_ADDR":        "127.0.0.1",
				"GATEWAY_INTERFACE":  "CGI/1.1",
				"REDIRECT_STATUS":    "200",
				"HTTP_HOST":          u.Host,
				"HTTP_X_CUSTOM":      "v1, v2",
				"HTTP_AUTHORIZATION": "Bearer tok",
				"HTTP_X_REQUEST_ID":  "req-42",
				"APP_ENV":            "testing",
			}
			if tlsOn {
				want["HTTPS"] = "on"
				want["REQUEST_SCHEME"] = "https"
			} else {
				want["REQUEST_SCHEME"] = "http"
			}
			for k, v := range want {
				if got, _ := s[k].(string); got != v {
					t.Errorf("%s = %q, want %q", k, s[k], v)
				}
			}
			if port, _ := s["REMOTE_PORT"].(string); port == "" || strings.Trim(port, "0123456789") != "" {
				t.Errorf("REMOTE_PORT = %q", s["REMOTE_PORT"])
			}
			for _, k := range []string{"HTTP_PROXY", "HTTP_X_FORGED", "HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"} {
				if v, ok := s[k]; ok {
					t.Errorf("%s should not be set, is %q", k, v)
				}
			}
			if !tlsOn {
				if v, ok := s["HTTPS"]; ok {
					t.Errorf("HTTPS = %q without TLS", v)
				}
			}
		})
	}
}

func TestNoPathInfo(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	for _, p := range protos(t, e.handler(t, nil)) {
		t.Run(p.name, func(t *testing.T) {
			_, body := get(t, p.client, p.url+"/app/index.php")
			var s map[string]any
			if err := json.Unmarshal([]byte(body), &s); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			for _, k := range []string{"PATH_INFO", "PATH_TRANSLATED", "CONTENT_LENGTH", "CONTENT_TYPE"} {
				if v, ok := s[k]; ok && v != "" {
					t.Errorf("%s = %q, want unset", k, v)
				}
			}
			if s["DOCUMENT_URI"] != "/app/index.php" || s["QUERY_STRING"] != "" {
				t.Errorf("DOCUMENT_URI %q QUERY_STRING %q", s["DOCUMENT_URI"], s["QUERY_STRING"])
			}
		})
	}
}

func TestForms(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	type result struct {
		Method        string            `json:"method"`
		Get           map[string]string `json:"get"`
		Post          map[string]string `json:"post"`
		JSON          map[string]any    `json:"json"`
		ContentType   string            `json:"content_type"`
		ContentLength string            `json:"content_length"`
	}
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			res, body := get(t, p.client, p.url+"/app/form.php?a=1&b=two")
			var r result
			if err := json.Unmarshal([]byte(body), &r); err != nil || res.StatusCode != 200 {
				t.Fatalf("GET: %d %v %s", res.StatusCode, err, body)
			}
			if r.Method != "GET" || r.Get["a"] != "1" || r.Get["b"] != "two" {
				t.Errorf("GET: %+v", r)
			}

			form := url.Values{"name": {"Zoë"}, "n": {"42"}}.Encode()
			req, _ := http.NewRequest("POST", p.url+"/app/form.php", strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, body = do(t, p.client, req)
			r = result{}
			if err := json.Unmarshal([]byte(body), &r); err != nil || res.StatusCode != 200 {
				t.Fatalf("POST form: %d %v %s", res.StatusCode, err, body)
			}
			if r.Post["name"] != "Zoë" || r.Post["n"] != "42" || r.ContentLength != strconv.Itoa(len(form)) {
				t.Errorf("POST form: %+v", r)
			}

			js := `{"user":"ada","tags":["x","y"],"n":3}`
			req, _ = http.NewRequest("POST", p.url+"/app/form.php", strings.NewReader(js))
			req.Header.Set("Content-Type", "application/json")
			res, body = do(t, p.client, req)
			r = result{}
			if err := json.Unmarshal([]byte(body), &r); err != nil || res.StatusCode != 200 {
				t.Fatalf("POST json: %d %v %s", res.StatusCode, err, body)
			}
			if r.JSON["user"] != "ada" || r.JSON["n"] != 3.0 || r.ContentType != "application/json" {
				t.Errorf("POST json: %+v", r)
			}

			// A form body of unknown length (chunked over HTTP/1.1, no
			// content-length over HTTP/2).
			req, _ = http.NewRequest("POST", p.url+"/app/form.php", io.MultiReader(strings.NewReader(form)))
			req.ContentLength = -1
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, body = do(t, p.client, req)
			r = result{}
			if err := json.Unmarshal([]byte(body), &r); err != nil || res.StatusCode != 200 {
				t.Fatalf("POST chunked form: %d %v %s", res.StatusCode, err, body)
			}
			if r.Post["name"] != "Zoë" || r.ContentLength != strconv.Itoa(len(form)) {
				t.Errorf("POST chunked form: %+v", r)
			}
		})
	}
}

// randomReader yields n pseudo-random bytes and hashes them on the way.
type randomReader struct {
	n    int64
	h    interface{ Write([]byte) (int, error) }
	seed [32]byte
	ctr  uint64
}

func (r *randomReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	// Cheap deterministic filler: SHA-256 in counter mode.
	for i := 0; i < len(p); i += 32 {
		var blk [40]byte
		copy(blk[:], r.seed[:])
		for j := 0; j < 8; j++ {
			blk[32+j] = byte(r.ctr >> (8 * j))
		}
		r.ctr++
		s := sha256.Sum256(blk[:])
		copy(p[i:], s[:])
	}
	r.n -= int64(len(p))
	r.h.Write(p)
	return len(p), nil
}

// TestUploads sends bodies larger than the in-memory limit: 20 MB chunked
// (spooled, then streamed) and 5 MB with a Content-Length (streamed), and
// checks PHP's hash of what it read.
func TestUploads(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		for _, tc := range []struct {
			name    string
			size    int64
			chunked bool
		}{
			{"chunked-20MB", 20 << 20, true},
			{"length-5MB", 5 << 20, false},
			{"chunked-small", 3000, true},
			{"length-100KB", 100 << 10, false},
		} {
			if testing.Short() && tc.size > 1<<20 {
				continue
			}
			if p.name != "h1" && tc.size > 10<<20 {
				tc.size = 4 << 20 // the 20 MB case once is enough
			}
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				sum := sha256.New()
				src := &randomReader{n: tc.size, h: sum}
				rand.Read(src.seed[:])
				var body io.Reader = src
				req, _ := http.NewRequest("POST", p.url+"/app/hash.php", body)
				req.Header.Set("Content-Type", "application/octet-stream")
				if tc.chunked {
					req.ContentLength = -1
				} else {
					req.ContentLength = tc.size
				}
				res, got := do(t, p.client, req)
				want := fmt.Sprintf("%d %s", tc.size, hex.EncodeToString(sum.Sum(nil)))
				if res.StatusCode != 200 || got != want {
					t.Fatalf("got %d %q, want %q", res.StatusCode, got, want)
				}
			})
		}
	}
}

func TestStatusLocationCookies(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			c := noRedirect(p.client)
			res, body := get(t, c, p.url+"/app/status.php")
			if res.StatusCode != 404 || body != "no such thing\n" || res.Header.Get("X-Script") != "status" {
				t.Errorf("Status: 404: got %d %q %v", res.StatusCode, body, res.Header)
			}
			if res.Header.Get("Status") != "" {
				t.Errorf("Status header leaked: %q", res.Header.Get("Status"))
			}
			res, _ = get(t, c, p.url+"/app/redirect.php")
			if res.StatusCode != 302 || res.Header.Get("Location") != "https://example.org/elsewhere" {
				t.Errorf("client redirect: %d %v", res.StatusCode, res.Header)
			}
			// Location with Status 200: a local redirect, sent as 302.
			res, _ = get(t, c, p.url+"/app/local.php")
			if res.StatusCode != 302 || res.Header.Get("Location") != "/app/hello.php" {
				t.Errorf("local redirect: %d %v", res.StatusCode, res.Header)
			}
			res, body = get(t, c, p.url+"/app/cookies.php")
			if got := res.Header.Values("Set-Cookie"); len(got) != 3 || got[0] != "a=1" || got[2] != "c=3" {
				t.Errorf("Set-Cookie = %q", got)
			}
			if got := res.Header.Values("X-Multi"); len(got) != 2 || got[1] != "two" {
				t.Errorf("X-Multi = %q", got)
			}
			if got := res.Header.Values("Server"); len(got) != 0 {
				t.Errorf("the script's Server was relayed: %q (the server sends its own)", got)
			}
			if body != "cookies\n" {
				t.Errorf("body %q", body)
			}
			res, body = get(t, c, p.url+"/app/nocontent.php")
			if res.StatusCode != 204 || body != "" {
				t.Errorf("204: %d %q", res.StatusCode, body)
			}
		})
	}
}

func TestHead(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			req, _ := http.NewRequest("HEAD", p.url+"/app/head.php", nil)
			res, body := do(t, p.client, req)
			if res.StatusCode != 200 || body != "" || res.Header.Get("X-Head") != "yes" {
				t.Errorf("HEAD: %d %q %v", res.StatusCode, body, res.Header)
			}
			// The connection is still good for the next request.
			res, body = get(t, p.client, p.url+"/app/head.php")
			if res.StatusCode != 200 || body != "body for GET only\n" {
				t.Errorf("GET after HEAD: %d %q", res.StatusCode, body)
			}
		})
	}
}

// TestStderr: what a script writes to STDERR is logged with the route, the
// address and the script, and never reaches the client.
func TestStderr(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		res, body := get(t, p.client, p.url+"/app/stderr.php")
		if res.StatusCode != 200 || body != "clean body\n" {
			t.Errorf("%s: got %d %q", p.name, res.StatusCode, body)
		}
	}
	log := e.log.String()
	if strings.Count(log, "stderr-marker-1234") != 3 {
		t.Errorf("want the marker logged 3 times, log:\n%s", log)
	}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if !strings.Contains(line, "route=/app/") || !strings.Contains(line, "address="+e.fpm.Address) ||
			!strings.Contains(line, "script=/app/stderr.php") {
			t.Errorf("log line lacks route, address or script: %s", line)
		}
	}
}

// TestStreaming: output a script flushes reaches the client while the
// script still runs: the script waits for a file the test creates only
// once it has the flushed bytes, so output held back until the script ends
// reads "timeout". Sizes: a line; two full 8 KiB php-fpm records followed
// by a flush that sends nothing; one large echo php-fpm sends as a single
// record.
func TestStreaming(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	dir := t.TempDir()
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			for _, n := range []int{6, 16368, 20000} {
				f := filepath.Join(dir, fmt.Sprintf("%s-%d", p.name, n))
				res, err := p.client.Get(fmt.Sprintf("%s/app/flush.php?n=%d&f=%s", p.url, n, url.QueryEscape(f)))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(res.Body, make([]byte, n)); err != nil {
					t.Fatalf("n=%d: %v", n, err)
				}
				os.WriteFile(f, nil, 0o644)
				rest, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if string(rest) != "seen" {
					t.Errorf("n=%d: the flushed output was held back until the script ended (%q)", n, rest)
				}
				if res.ContentLength != -1 {
					t.Errorf("n=%d: ContentLength %d for a streamed response", n, res.ContentLength)
				}
			}
		})
	}
}

// TestContentLengthWhenComplete: a response that arrives whole before
// anything is sent (php-fpm sends a page that fits its 8 KiB buffer with
// END_REQUEST) goes out with a Content-Length (RFC 9112 section 6.3: no
// chunked framing needed); one that is still coming is streamed without.
func TestContentLengthWhenComplete(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			for _, tc := range []struct {
				path     string
				complete bool
			}{
				{"/app/mid.php", true},
				{"/app/huge.php", false},
			} {
				res, body := get(t, p.client, p.url+tc.path)
				if res.StatusCode != 200 {
					t.Fatalf("%s: %d", tc.path, res.StatusCode)
				}
				if tc.complete && res.ContentLength != int64(len(body)) {
					t.Errorf("%s: Content-Length %d for a %d-byte body", tc.path, res.ContentLength, len(body))
				}
				if !tc.complete && (res.ContentLength != -1 || len(body) < 1<<20) {
					t.Errorf("%s: Content-Length %d, %d bytes", tc.path, res.ContentLength, len(body))
				}
			}
		})
	}
}

// TestHoldDelay: output php-fpm sends in pieces, while it keeps coming
// within holdDelay, goes to the client in one piece after END_REQUEST,
// with a Content-Length; pieces further apart than holdDelay are passed
// on as they come (streamed, no Content-Length). pieces.php sends 8 KiB
// pieces 60 ms apart.
func TestHoldDelay(t *testing.T) {
	defer func(d time.Duration) { holdDelay = d }(holdDelay)
	for _, tc := range []struct {
		hold   time.Duration
		length int64
	}{
		{5 * time.Second, 24000},
		{time.Millisecond, -1},
	} {
		holdDelay = tc.hold
		e := newEnv(t, fpmtest.Config{})
		h := e.handler(t, nil)
		for _, p := range protos(t, h) {
			res, body := get(t, p.client, p.url+"/app/pieces.php")
			if res.StatusCode != 200 || len(body) != 24000 {
				t.Fatalf("%s: %d, %d bytes", p.name, res.StatusCode, len(body))
			}
			if res.ContentLength != tc.length {
				t.Errorf("%s, held %v: Content-Length %d, want %d", p.name, tc.hold, res.ContentLength, tc.length)
			}
		}
		h.Close()
	}
}

// TestHoldDelayFromFirstByte: output is held at most holdDelay from its
// first held byte, however often more arrives meanwhile. drip.php
// flushes a byte every 0.3 ms for a second; when every new piece pushed
// the hold back, the client saw nothing for 0.17-1.3 s at a time. Here
// holdDelay is 250 ms, so a hold counted from any later byte (the last
// one, say) would never end while the script drips, and the client
// would get nothing until the script's end, a second after the start.
// Counted from the first byte the client waits holdDelay at a time; the
// bound, holdDelay plus 200 ms, leaves room for a loaded machine under
// -race (a wall-clock bound near holdDelay itself did not) while a
// silence of the script's length, or of two holds, does not fit in it.
func TestHoldDelayFromFirstByte(t *testing.T) {
	defer func(d time.Duration) { holdDelay = d }(holdDelay)
	holdDelay = 250 * time.Millisecond
	bound := holdDelay + 200*time.Millisecond
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		// Warm the connection and a worker, so the silence measured
		// from the request's start is the handler's, not a dial's.
		if res, body := get(t, p.client, p.url+"/app/hello.php"); res.StatusCode != 200 {
			t.Fatalf("%s: %d %q", p.name, res.StatusCode, body)
		}
		start := time.Now()
		res, err := p.client.Get(p.url + "/app/drip.php")
		if err != nil {
			t.Fatal(err)
		}
		var (
			buf     [64 << 10]byte
			n       int
			gap, at time.Duration
			last    = start // the silence counts from the request's start
			reads   int
		)
		for {
			m, err := res.Body.Read(buf[:])
			now := time.Now()
			if m > 0 || err == io.EOF {
				if d := now.Sub(last); d > gap {
					gap, at = d, last.Sub(start)
				}
				n += m
				last = now
				if m > 0 {
					reads++
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
		}
		res.Body.Close()
		if n < 100 {
			t.Fatalf("%s: %d bytes", p.name, n)
		}
		t.Logf("%s: %d bytes in %d reads over %v, largest silence %v (from %v)", p.name, n, reads, last.Sub(start), gap, at)
		if gap > bound {
			t.Errorf("%s: the client waited %v (from %v) for flushed output, holdDelay %v", p.name, gap, at, holdDelay)
		}
	}
}

// TestOverLength: a script that writes more than the Content-Length it
// declared (a download with a stray newline after it) gets its declared
// body through, the excess dropped and logged, as nginx does, rather than
// a response cut off before its first byte.
func TestOverLength(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		for _, n := range []int{5, 100000} {
			res, body := get(t, p.client, fmt.Sprintf("%s/app/overlength.php?n=%d", p.url, n))
			if res.StatusCode != 200 || body != strings.Repeat("d", n) {
				t.Errorf("%s n=%d: %d, %d bytes %.20q", p.name, n, res.StatusCode, len(body), body)
			}
		}
	}
	if !strings.Contains(e.log.String(), "more than its Content-Length") {
		t.Errorf("nothing logged:\n%s", e.log.String())
	}
}

func TestBigPage(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		res, body := get(t, p.client, p.url+"/app/big.php")
		if res.StatusCode != 200 || len(body) < 25000 || !strings.HasSuffix(body, "line 499: the quick brown fox jumps over the lazy dog</p>\n") {
			t.Errorf("%s: %d, %d bytes", p.name, res.StatusCode, len(body))
		}
	}
}

// TestResolve covers script resolution against the files on disk.
func TestResolve(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	static := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Static", "1")
		io.WriteString(w, "static "+r.URL.Path)
	})
	plain := e.handler(t, func(_ *config.FastCGI, o *Options) { o.Static = static })
	front := e.handler(t, func(c *config.FastCGI, o *Options) { c.Fallback = "/index.php" })
	pps, fps := protos(t, plain), protos(t, front)
	for i := range pps {
		pp, fp := pps[i], fps[i]
		t.Run(pp.name, func(t *testing.T) {
			cases := []struct {
				p      proto
				path   string
				status int
				body   string // substring
			}{
				{pp, "/app/hello.php", 200, "hello from php"},
				{pp, "/app/HELLO.PHP", 404, ""},           // no such file; never served as text
				{pp, "/uploads/x.jpg/y.php", 404, ""},     // never runs x.jpg
				{pp, "/uploads/photo.jpg/x.php", 404, ""}, // nor anything before .php
				{pp, "/app/missing.php", 404, ""},         // no fallback
				{pp, "/app/missing.php/info", 404, ""},    //
				{pp, "/app/dir/", 200, "dir index /app/dir/index.php"},
				{pp, "/app/dir", 301, ""},                            // to /app/dir/
				{pp, "/app/style.css", 200, "static /app/style.css"}, // Options.Static
				{pp, "/app/nothing-here", 404, ""},
				{pp, "/app/", 200, "REQUEST_URI"}, // index.php under /app/
				{fp, "/uploads/x.jpg/y.php", 200, `"front":true`},
				{fp, "/app/missing.php", 200, `"script":"\/index.php"`},
				{fp, "/blog/2024/hello-world?p=1", 200, `"uri":"\/blog\/2024\/hello-world?p=1"`},
				{fp, "/app/hello.php", 200, "hello from php"},
				{fp, "/app/style.css", 404, ""}, // an existing file, no Static: 404, not PHP
			}
			for _, tc := range cases {
				res, body := get(t, noRedirect(tc.p.client), tc.p.url+tc.path)
				if res.StatusCode != tc.status || !strings.Contains(body, tc.body) {
					t.Errorf("%s: got %d %q, want %d with %q", tc.path, res.StatusCode, body, tc.status, tc.body)
				}
				if tc.status == 301 && res.Header.Get("Location") != tc.path+"/" {
					t.Errorf("%s: Location %q", tc.path, res.Header.Get("Location"))
				}
			}
		})
	}
	if s := plain.Stats(); s.Requests == 0 || s.Errors != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestDotSegments: paths with a segment starting with a dot answer 404,
// scripts included ("/.hidden.php" exists and would run), fallback or
// not, like the static handler; "/.well-known/" is served.
func TestDotSegments(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	fpmtest.WriteFiles(t, e.root, map[string]string{
		".hidden.php":              `<?php echo "hidden ran";`,
		"app/.hidden.php":          `<?php echo "hidden ran";`,
		"app/dir/.x/y.php":         `<?php echo "hidden ran";`,
		"app/.env":                 "SECRET=1\n",
		".git/config":              "[core]\n",
		".well-known/hello.php":    `<?php echo "well-known script";`,
		".well-known/security.txt": "Contact: mailto:a@example.org\n",
	})
	static := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "static "+r.URL.Path)
	})
	plains := protos(t, e.handler(t, func(_ *config.FastCGI, o *Options) { o.Static = static }))
	fronts := protos(t, e.handler(t, func(c *config.FastCGI, o *Options) { c.Fallback = "/index.php"; o.Static = static }))
	for i := range plains {
		plain, front := plains[i], fronts[i]
		t.Run(plain.name, func(t *testing.T) {
			for _, p := range []proto{plain, front} {
				for _, path := range []string{"/.hidden.php", "/app/.hidden.php", "/app/dir/.x/y.php", "/app/dir/.x/y.php/info",
					"/app/.env", "/.git/config", "/.git/", "/app/.missing.php", "/.well-known/.hidden.php"} {
					res, body := get(t, p.client, p.url+path)
					wantErrorPage(t, path, res, body, http.StatusNotFound)
				}
			}
			for _, c := range []struct {
				p          proto
				path, body string
			}{
				{plain, "/.well-known/hello.php", "well-known script"},
				{plain, "/.well-known/security.txt", "static /.well-known/security.txt"},
				{front, "/.well-known/missing", `"front":true`},
				{front, "/app/missing", `"front":true`},
			} {
				res, body := get(t, c.p.client, c.p.url+c.path)
				if res.StatusCode != 200 || !strings.Contains(body, c.body) {
					t.Errorf("%s: %d %q, want 200 with %q", c.path, res.StatusCode, body, c.body)
				}
			}
		})
	}
}

// TestErrorPages: the handler's own error responses are Arka's HTML error
// pages (package errpage), like every other handler's, with Retry-After
// kept on 503.
func TestErrorPages(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 2})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		d := config.Duration(200 * time.Millisecond)
		c.ReadTimeout = d
	})
	limited := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
		h.ServeHTTP(w, r)
	})
	for _, p := range protos(t, limited) {
		t.Run(p.name, func(t *testing.T) {
			res, body := get(t, p.client, p.url+"/app/missing.php")
			wantErrorPage(t, "no such script", res, body, http.StatusNotFound)
			res, body = get(t, p.client, p.url+"/app/style.css") // a file, no Options.Static
			wantErrorPage(t, "file without a static handler", res, body, http.StatusNotFound)
			res, body = get(t, p.client, p.url+"/app/sleep.php?ms=1000")
			wantErrorPage(t, "read_timeout", res, body, http.StatusGatewayTimeout)
			req, _ := http.NewRequest("POST", p.url+"/app/hash.php", io.MultiReader(strings.NewReader(strings.Repeat("x", 4<<10))))
			req.ContentLength = -1 // spooled: the limit is hit before php-fpm is asked
			res, body = do(t, p.client, req)
			wantErrorPage(t, "body over the limit", res, body, http.StatusRequestEntityTooLarge)
			res, body = get(t, noRedirect(p.client), p.url+"/app/dir?x=1")
			if res.StatusCode != 301 || res.Header.Get("Location") != "/app/dir/?x=1" || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("directory without slash: %d %q %q", res.StatusCode, res.Header.Get("Location"), body)
			}
			// RFC 9110 section 15.4.9: a POST is redirected with 308,
			// which keeps the method and body (after a 301 browsers
			// send a GET).
			req, _ = http.NewRequest("POST", p.url+"/app/dir", strings.NewReader("a=1"))
			res, body = do(t, noRedirect(p.client), req)
			if res.StatusCode != http.StatusPermanentRedirect || res.Header.Get("Location") != "/app/dir/" {
				t.Errorf("POST to a directory without slash: %d %q %q", res.StatusCode, res.Header.Get("Location"), body)
			}
		})
	}

	down := testkit.FreeAddr(t) // nothing listens there
	dh, err := New("/app/", complete(t, &config.FastCGI{Address: down, Root: e.root}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dps := protos(t, dh)
	for _, dp := range dps {
		res, body := get(t, dp.client, dp.url+"/app/hello.php")
		wantErrorPage(t, dp.name+": server down", res, body, http.StatusBadGateway)
	}
	dh.Close()
	for _, dp := range dps {
		res, body := get(t, dp.client, dp.url+"/app/hello.php")
		wantErrorPage(t, dp.name+": closed handler", res, body, http.StatusServiceUnavailable)
		if res.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", dp.name)
		}
	}
}

func TestTCPAddress(t *testing.T) {
	e := newEnv(t, fpmtest.Config{TCP: true})
	if strings.HasPrefix(e.fpm.Address, "unix:") {
		t.Fatal("want TCP")
	}
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		res, body := get(t, p.client, p.url+"/app/hello.php")
		if res.StatusCode != 200 || body != "hello from php\n" {
			t.Errorf("%s: %d %q", p.name, res.StatusCode, body)
		}
	}
}

// TestNewErrors: what is wrong in a configuration is found once, by
// config (Load, or Complete for one built in Go); New's own errors are
// about what only the server knows (is Arka's php-fpm running?) and a
// configuration that was never checked.
func TestNewErrors(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		cfg  config.FastCGI
		opts Options
		want string
	}{
		{config.FastCGI{Address: "php", Root: root}, Options{}, "not running here"},
		{config.FastCGI{Address: "", Root: root}, Options{}, "not running here"},
	} {
		_, err := New("/x/", complete(t, &tc.cfg), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/x/") {
			t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New("/x/", &config.FastCGI{Address: "127.0.0.1:9000", Root: root}, Options{}); err == nil {
		t.Error("New took a configuration config did not parse")
	}
	for _, tc := range []struct {
		cfg  config.FastCGI
		want string
	}{
		{config.FastCGI{Address: "unix:rel.sock", Root: root}, "absolute"},
		{config.FastCGI{Address: "localhost", Root: root}, "host:port"},
		{config.FastCGI{Address: "127.0.0.1:9000"}, "root: missing"},
		{config.FastCGI{Address: "127.0.0.1:9000", Root: root, SplitPath: config.StringList{".php\x00"}}, "split_path"},
		{config.FastCGI{Address: "127.0.0.1:9000", Root: root, Env: map[string]string{"A": strings.Repeat("x", 70000)}}, "too long"},
	} {
		if err := config.Complete(&tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config.Complete(%.80v): err %v, want %q", tc.cfg, err, tc.want)
		}
	}
	h, err := New("/x/", complete(t, &config.FastCGI{Address: "php", Root: root}), Options{PHPAddress: "unix:/run/php.sock"})
	if err != nil {
		t.Fatal(err)
	}
	if s := h.Stats(); s.Address != "unix:/run/php.sock" || s.MaxConns != config.DefaultFastCGIMaxConns || s.QueueSize != config.DefaultFastCGIQueueSize {
		t.Errorf("stats %+v", s)
	}
	h.Close()
	h, _ = New("/x/", complete(t, &config.FastCGI{Address: "127.0.0.1:9", Root: root}), Options{DefaultMaxConns: 7, DefaultQueueSize: 70})
	if s := h.Stats(); s.MaxConns != 7 || s.QueueSize != 70 {
		t.Errorf("board defaults not used: %+v", s)
	}
	h.Close()
}

// TestFastCGIServerDown: nothing listens at the address: 502, one log line
// naming route, address and cause.
func TestFastCGIServerDown(t *testing.T) {
	root := t.TempDir()
	fpmtest.WriteFiles(t, root, scripts)
	addr := testkit.FreeAddr(t) // nothing listens there
	log := &testkit.LogBuffer{}
	h, err := New("/app/", complete(t, &config.FastCGI{Address: addr, Root: root}), Options{Logger: newTestLogger(log)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	p := protos(t, h)[0]
	res, _ := get(t, p.client, p.url+"/app/hello.php")
	if res.StatusCode != 502 {
		t.Errorf("status %d", res.StatusCode)
	}
	line := strings.TrimSpace(log.String())
	if strings.Count(line, "\n") != 0 || !strings.Contains(line, "route=/app/") || !strings.Contains(line, "address="+addr) ||
		!strings.Contains(line, "connection refused") {
		t.Errorf("log: %q", line)
	}
	if s := h.Stats(); s.Errors != 1 || s.Open != 0 || s.Busy != 0 {
		t.Errorf("stats %+v", s)
	}
}

var _ = context.Background
var _ = bytes.NewReader

// TestBodyLimit: the server's body limit (http.MaxBytesReader) gives 413,
// whether the body is spooled (unknown length) or streamed (known length,
// the limit hit while the script reads); the pool is fine afterwards.
func TestBodyLimit(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 1})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) { c.MaxConns = config.AutoInt{Set: true, Value: 1} })
	limited := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		h.ServeHTTP(w, r)
	})
	for _, p := range protos(t, limited) {
		t.Run(p.name, func(t *testing.T) {
			for _, chunked := range []bool{true, false} {
				body := bytes.Repeat([]byte("x"), 200<<10)
				req, _ := http.NewRequest("POST", p.url+"/app/hash.php", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/octet-stream")
				if chunked {
					req.ContentLength = -1
				}
				res, err := p.client.Do(req)
				if err != nil {
					// The server may close the connection while the client
					// is still sending; then the client sees no response.
					t.Logf("chunked=%v: %v", chunked, err)
				} else {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusRequestEntityTooLarge {
						t.Errorf("chunked=%v: status %d, want 413", chunked, res.StatusCode)
					}
				}
			}
			small := strings.Repeat("y", 1000)
			req, _ := http.NewRequest("POST", p.url+"/app/hash.php", strings.NewReader(small))
			res, body := do(t, p.client, req)
			sum := sha256.Sum256([]byte(small))
			if res.StatusCode != 200 || body != "1000 "+hex.EncodeToString(sum[:]) {
				t.Errorf("after: %d %q", res.StatusCode, body)
			}
		})
	}
	if s := h.Stats(); s.Errors != 0 || s.Open > 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestReadTimeout: a script silent for longer than read_timeout gets 504
// and one log line; the connection is dropped, and later requests work.
func TestReadTimeout(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 2})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		d := config.Duration(200 * time.Millisecond)
		c.ReadTimeout = d
	})
	p := protos(t, h)[0]
	start := time.Now()
	res, _ := get(t, p.client, p.url+"/app/sleep.php?ms=1000")
	if d := time.Since(start); res.StatusCode != http.StatusGatewayTimeout || d > 900*time.Millisecond {
		t.Errorf("got %d after %v, want 504 after about 200ms", res.StatusCode, d)
	}
	if !strings.Contains(e.log.String(), "read_timeout 200ms") {
		t.Errorf("log: %s", e.log.String())
	}
	res, body := get(t, p.client, p.url+"/app/hello.php")
	if res.StatusCode != 200 || body != "hello from php\n" {
		t.Errorf("after: %d %q", res.StatusCode, body)
	}
	if s := h.Stats(); s.Errors != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestStatCache: a script that appears is served at once (a missing path
// is never remembered); one that goes away is 404 at once too (php-fpm's
// own 404 while Arka still believes the file is there), and after statTTL
// Arka stats it again and answers 404 itself.
func TestStatCache(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	h := e.handler(t, nil)
	c := protos(t, h)[0]
	file := filepath.Join(e.root, "app", "deployed.php")
	if res, _ := get(t, c.client, c.url+"/app/deployed.php"); res.StatusCode != 404 {
		t.Fatalf("before the deploy: %d, want 404", res.StatusCode)
	}
	if err := os.WriteFile(file, []byte(`<?php echo "v1";`), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, body := get(t, c.client, c.url+"/app/deployed.php"); res.StatusCode != 200 || body != "v1" {
		t.Fatalf("after the deploy: %d %q, want 200 v1", res.StatusCode, body)
	}
	if h.kind("/app/deployed.php", "") != kindFile {
		t.Fatal("the script is not remembered")
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if res, _ := get(t, c.client, c.url+"/app/deployed.php"); res.StatusCode != 404 {
		t.Errorf("removed, within statTTL: %d, want 404 (from php-fpm)", res.StatusCode)
	}
	if h.kind("/app/deployed.php", "") != kindFile {
		t.Error("the cache forgot the script within statTTL: it saves no stat")
	}
	time.Sleep(statTTL + 50*time.Millisecond)
	if k := h.kind("/app/deployed.php", ""); k != kindMissing {
		t.Errorf("after statTTL: kind %d, want missing", k)
	}
	if res, _ := get(t, c.client, c.url+"/app/deployed.php"); res.StatusCode != 404 {
		t.Errorf("removed, after statTTL: %d, want 404", res.StatusCode)
	}
}

// TestAddrBlockFollowsHost: the encoded SERVER_NAME block kept from the
// last request (addrBlock) is not reused for a request with another Host.
func TestAddrBlockFollowsHost(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	p := protos(t, e.handler(t, nil))[0]
	for _, host := range []string{"a.example", "a.example", "b.example:8080", "a.example"} {
		req, _ := http.NewRequest("GET", p.url+"/app/index.php", nil)
		req.Host = host
		res, body := do(t, p.client, req)
		var s map[string]any
		if err := json.Unmarshal([]byte(body), &s); res.StatusCode != 200 || err != nil {
			t.Fatalf("%d %v: %s", res.StatusCode, err, body)
		}
		if got, want := s["SERVER_NAME"], strings.Split(host, ":")[0]; got != want {
			t.Errorf("Host %s: SERVER_NAME %q, want %q", host, got, want)
		}
	}
}
