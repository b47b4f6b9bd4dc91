package h1_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/h1"
	"github.com/arkaweb/arka/server/internal/limits"
)

// start runs an h1.Server with h on a loopback port.
func start(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h1.Server{Handler: h, Limits: limits.Limits{ReadHeader: 5 * time.Second, Idle: 10 * time.Second, HeaderBytes: 8 << 10}}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// exchange writes raw bytes and returns everything read until the server
// closes the connection or 2 s pass without data.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(raw))
	var out strings.Builder
	buf := make([]byte, 64<<10)
	for {
		wait := 2 * time.Second
		if out.Len() > 0 {
			wait = 300 * time.Millisecond
		}
		c.SetReadDeadline(time.Now().Add(wait))
		n, err := c.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			return out.String()
		}
	}
}

// responses parses all responses in s.
func responses(t *testing.T, s string, method string) []*http.Response {
	t.Helper()
	br := bufio.NewReader(strings.NewReader(s))
	var out []*http.Response
	for {
		if _, err := br.Peek(1); err != nil {
			return out
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("parsing response %d: %v\n%q", len(out), err, s)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		out = append(out, resp)
	}
}

func body(r *http.Response) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// echo answers with method, path, raw path, query, host and the body's SHA-256.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil {
		http.Error(w, "body: "+err.Error(), 400)
		return
	}
	fmt.Fprintf(w, "%s %s raw=%s q=%s host=%s len=%d sha=%s trailer=%v proto=%s",
		r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Host, n, hex.EncodeToString(h.Sum(nil))[:8], r.Trailer, r.Proto)
})

func TestKeepAliveAndPipelining(t *testing.T) {
	addr := start(t, echo)
	out := exchange(t, addr, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b?c=d HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	rs := responses(t, out, "GET")
	if len(rs) != 3 {
		t.Fatalf("%d responses:\n%s", len(rs), out)
	}
	for i, want := range []string{"GET /a ", "GET /b raw= q=c=d", "GET /c "} {
		if b := body(rs[i]); !strings.HasPrefix(b, want) {
			t.Errorf("response %d: %q", i, b)
		}
	}
	if !rs[2].Close {
		t.Errorf("last response lacks Connection: close")
	}
}

func TestHTTP10(t *testing.T) {
	addr := start(t, echo)
	out := exchange(t, addr, "GET /x HTTP/1.0\r\n\r\n")
	rs := responses(t, out, "GET")
	if len(rs) != 1 || !strings.HasPrefix(body(rs[0]), "GET /x") || !rs[0].Close {
		t.Errorf("HTTP/1.0: %q", out)
	}
	out = exchange(t, addr, "GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /2 HTTP/1.0\r\n\r\n")
	rs = responses(t, out, "GET")
	if len(rs) != 2 || rs[0].Header.Get("Connection") != "keep-alive" {
		t.Errorf("HTTP/1.0 keep-alive: %q", out)
	}
}

// RFC 9112 sections 6 and 7: bodies, chunked coding, smuggling defences.
func TestRequestBodies(t *testing.T) {
	addr := start(t, echo)
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:])[:8] }
	cases := []struct {
		name, raw string
		status    int
		want      string
	}{
		{"content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 200, "len=5 sha=" + sum("hello")},
		{"repeated equal content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 200, "len=5"},
		{"content-length list", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello", 200, "len=5"},
		{"conflicting content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400, ""},
		{"negative content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, ""},
		{"plus content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello", 400, ""},
		{"chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n", 200, "len=11 sha=" + sum("hello world")},
		{"chunked with trailer", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: abc\r\n\r\n", 200, "trailer=map[X-Sum:[abc]]"},
		{"chunked upper hex", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", 200, "len=10"},
		{"chunk size not hex", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400, ""},
		{"chunk data too long", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n", 400, ""},
		{"chunk size overflow", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", 400, ""},
		{"chunk size line with bare LF", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", 400, ""},
		{"chunk data ends with bare LF", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n", 400, ""},
		{"last chunk with bare LF", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\n\r\n", 400, ""},
		{"chunk extension with bare LF", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;\nxx\r\n0\r\n\r\n", 400, ""},
		{"whitespace after chunk size", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n", 400, ""},
		{"chunk extension after whitespace", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3 ;a=b\r\nabc\r\n0\r\n\r\n", 200, "len=3"},
		{"te and cl", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400, ""},
		{"te gzip chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, ""},
		{"te chunked not last", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400, ""},
		{"te in http/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, ""},
	}
	for _, c := range cases {
		out := exchange(t, addr, c.raw)
		rs := responses(t, out, "POST")
		if len(rs) == 0 || rs[0].StatusCode != c.status {
			t.Errorf("%s: %q", c.name, out)
			continue
		}
		if b := body(rs[0]); c.want != "" && !strings.Contains(b, c.want) {
			t.Errorf("%s: body %q lacks %q", c.name, b, c.want)
		}
	}
}

// RFC 9112 sections 2-5: request line and header syntax.
func TestMalformedRequests(t *testing.T) {
	addr := start(t, echo)
	cases := map[string]int{
		"GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n":                             400,
		"GET / HTTP/1.1\r\nHost: x\r\nName : v\r\n\r\n":                                400,
		"GET / HTTP/1.1\r\nHost: x\r\nFolded: a\r\n b\r\n\r\n":                         400,
		"GET / HTTP/1.1\r\nHost: x\r\nNul: a\x00b\r\n\r\n":                             400,
		"GET / HTTP/1.1\r\nHost: x\r\nBare: a\rb\r\n\r\n":                              400,
		"GET / HTTP/1.1\r\n\r\n":                                                       400,
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n":                                 400,
		"GET / HTTP/1.1\r\nHost: a b\r\n\r\n":                                          400,
		"GET  / HTTP/1.1\r\nHost: x\r\n\r\n":                                           400,
		"GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n":                                      400,
		"G<T / HTTP/1.1\r\nHost: x\r\n\r\n":                                            400,
		"GET / HTTP/2.0\r\nHost: x\r\n\r\n":                                            505,
		"GET / HTTP/1\r\nHost: x\r\n\r\n":                                              400,
		"GET / http/1.1\r\nHost: x\r\n\r\n":                                            400,
		"GET /a#frag HTTP/1.1\r\nHost: x\r\n\r\n":                                      400,
		"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n":                                         400,
		"GET http://user@h/ HTTP/1.1\r\nHost: x\r\n\r\n":                               400,
		"GET http:///adm/ HTTP/1.1\r\nHost: x\r\n\r\n":                                 400, // RFC 9110 section 4.2.1: empty host
		"GET http://:80/ HTTP/1.1\r\nHost: x\r\n\r\n":                                  400,
		"GET https://?q HTTP/1.1\r\nHost: x\r\n\r\n":                                   400,
		"GET / HTTP/1.1\r\nHost: :80\r\n\r\n":                                          400,
		"GET * HTTP/1.1\r\nHost: x\r\n\r\n":                                            400,
		"GET / HTTP/1.1\r\nHost: x\r\nExpect: something\r\nContent-Length: 1\r\n\r\nx": 417,
		"GET /" + strings.Repeat("a", 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n":           414,
		"GET / HTTP/1.1\r\nHost: x\r\nBig: " + strings.Repeat("a", 9000) + "\r\n\r\n":  431,
		"GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("A: b\r\n", 2000) + "\r\n":    431,
		"\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n":                                    200,
		"GET / HTTP/1.0\r\n\r\n":                                                       200,
		"GET http://example.org/p?q=1 HTTP/1.1\r\nHost: other\r\n\r\n":                 200,
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n":                                        200,
		"GET / HTTP/1.1\nHost: x\n\n":                                                  200,
	}
	for raw, want := range cases {
		out := exchange(t, addr, raw)
		if !strings.HasPrefix(out, fmt.Sprintf("HTTP/1.1 %d ", want)) {
			t.Errorf("%.50q: got %.40q, want %d", raw, out, want)
		}
	}
	out := exchange(t, addr, "GET http://example.org/p?q=1 HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n")
	if !strings.Contains(out, "GET /p raw= q=q=1 host=example.org") {
		t.Errorf("absolute-form: %q", out)
	}
	out = exchange(t, addr, "GET /a%2Fb/%41 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if !strings.Contains(out, "GET /a/b/A raw=/a%2Fb/%41") {
		t.Errorf("encoded path: %q", out)
	}
}

// TestParseErrorPage: a request the engine cannot parse (here bad
// percent-encoding in the path) gets the same HTML error page as the
// handlers' errors (package errpage), not a plain-text one.
func TestParseErrorPage(t *testing.T) {
	addr := start(t, echo)
	out := exchange(t, addr, "GET /a%zz.php HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(out)), nil)
	if err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	b := body(resp)
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(b, "<h1>400 Bad Request</h1>") ||
		resp.ContentLength != int64(len(b)) || !resp.Close {
		t.Errorf("got %q", out)
	}
}

func TestExpectContinue(t *testing.T) {
	addr := start(t, echo)
	c, _ := net.Dial("tcp", addr)
	defer c.Close()
	c.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"))
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := br.ReadString('\n')
	if line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("interim: %q", line)
	}
	br.ReadString('\n')
	c.Write([]byte("hello"))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(body(resp), "len=5") {
		t.Fatalf("final: %v %v", resp, err)
	}
	// A handler that answers without reading gets no 100 Continue sent.
	addr2 := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }))
	out := exchange(t, addr2, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 403") || strings.Contains(out, "100 Continue") {
		t.Errorf("unread body with Expect: %q", out)
	}
}

func TestResponseFraming(t *testing.T) {
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			io.WriteString(w, "small body")
		case "/stream":
			for i := 0; i < 3; i++ {
				io.WriteString(w, "part ")
				w.(http.Flusher).Flush()
			}
		case "/big":
			io.WriteString(w, strings.Repeat("x", 10000))
		case "/cl":
			w.Header().Set("Content-Length", "3")
			io.WriteString(w, "abc")
		case "/short":
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "abc")
		case "/204":
			w.WriteHeader(204)
			io.WriteString(w, "ignored")
		case "/304":
			w.WriteHeader(304)
		case "/inject":
			w.Header().Set("X-Evil", "a\r\nSet-Cookie: owned=1")
			io.WriteString(w, "ok")
		case "/trailer":
			w.Header().Set("Trailer", "X-Checksum")
			io.WriteString(w, "data")
			w.Header().Set("X-Checksum", "42")
		case "/early":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(103)
			io.WriteString(w, "after hints")
		case "/empty":
		}
	}))
	out := exchange(t, addr, strings.Join([]string{
		"GET /small HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /big HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /cl HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /204 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /304 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /inject HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /trailer HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /empty HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /small HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /short HTTP/1.1\r\nHost: x\r\n\r\n",
	}, ""))
	if strings.Contains(out, "\r\nSet-Cookie:") {
		t.Errorf("header injection got through:\n%s", out)
	}
	// Each response is read with its request's method: HEAD's has no body.
	br := bufio.NewReader(strings.NewReader(out))
	read := func(method string) *http.Response {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return resp
	}
	r := read("GET")
	if r.ContentLength != 10 || body(r) != "small body" {
		t.Errorf("small: CL %d", r.ContentLength)
	}
	r = read("GET")
	if len(r.TransferEncoding) == 0 || body(r) != "part part part " {
		t.Errorf("stream: TE %v", r.TransferEncoding)
	}
	r = read("GET")
	if b := body(r); len(b) != 10000 {
		t.Errorf("big: %d bytes", len(b))
	}
	r = read("GET")
	if r.ContentLength != 3 || body(r) != "abc" {
		t.Errorf("cl: %d", r.ContentLength)
	}
	r = read("GET")
	if r.StatusCode != 204 || body(r) != "" {
		t.Errorf("204: %d", r.StatusCode)
	}
	r = read("GET")
	if r.StatusCode != 304 {
		t.Errorf("304: %d", r.StatusCode)
	}
	r = read("GET")
	if body(r) != "ok" || strings.ContainsAny(r.Header.Get("X-Evil"), "\r\n") {
		t.Errorf("inject: %q", r.Header.Get("X-Evil"))
	}
	r = read("GET")
	if body(r) != "data" || r.Trailer.Get("X-Checksum") != "42" {
		t.Errorf("trailer: %v", r.Trailer)
	}
	r = read("GET")
	if r.StatusCode != 200 || r.ContentLength != 0 {
		t.Errorf("empty: %d %d", r.StatusCode, r.ContentLength)
	}
	r = read("HEAD")
	if r.StatusCode != 200 || r.ContentLength != 10 {
		t.Errorf("HEAD: %d, Content-Length %d", r.StatusCode, r.ContentLength)
	}
	r = read("GET")
	if b, err := io.ReadAll(r.Body); err == nil || string(b) != "abc" {
		t.Errorf("short body: %q %v (want an unexpected EOF: the server closes)", b, err)
	}
	out = exchange(t, addr, "GET /early HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n") {
		t.Errorf("early hints: %q", out)
	}
	// RFC 9110 section 15.2: no 1xx to an HTTP/1.0 client, which would
	// take it for the final answer.
	out = exchange(t, addr, "GET /early HTTP/1.0\r\nHost: x\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n") || strings.Contains(out, "103") || !strings.HasSuffix(out, "after hints") {
		t.Errorf("early hints to HTTP/1.0: %q", out)
	}
}

// A body the handler left unread: a small one is discarded and the
// connection kept; a large one closes the connection.
func TestUnreadBody(t *testing.T) {
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	out := exchange(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbodyGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if rs := responses(t, out, "GET"); len(rs) != 2 {
		t.Errorf("small unread body: %d responses", len(rs))
	}
	c, _ := net.Dial("tcp", addr)
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 1<<30)
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || !resp.Close {
		t.Errorf("large unread body: %v %v", resp, err)
	}
}

func TestSendfileReadFrom(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	data := []byte(strings.Repeat("0123456789", 100000))
	os.WriteFile(p, data, 0o644)
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, _ := os.Open(p)
		defer f.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(data)-10))
		f.Seek(10, 0)
		io.CopyN(w, f, int64(len(data)-10))
	}))
	for i := 0; i < 2; i++ {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != string(data[10:]) {
			t.Fatalf("got %d bytes", len(b))
		}
	}
}

func TestHijack(t *testing.T) {
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		line, _ := brw.ReadString('\n')
		brw.WriteString("echo: " + line)
		brw.Flush()
	}))
	c, _ := net.Dial("tcp", addr)
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nhello\n"))
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("%v %v", resp, err)
	}
	line, _ := br.ReadString('\n')
	if line != "echo: hello\n" {
		t.Errorf("after hijack: %q", line)
	}
}

// The request context ends when the client goes away (so FastCGI and the
// proxy can abort their work), and when the handler returns.
func TestContextCancellation(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var afterReturn <-chan struct{}
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			mu.Lock()
			afterReturn = r.Context().Done()
			mu.Unlock()
			return
		}
		io.Copy(io.Discard, r.Body)
		close(started)
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-time.After(10 * time.Second):
		}
	}))
	c, _ := net.Dial("tcp", addr)
	c.Write([]byte("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"))
	<-started
	c.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("context not cancelled after the client closed")
	}
	resp, err := http.Get("http://" + addr + "/quick")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	ar := afterReturn
	mu.Unlock()
	select {
	case <-ar:
	case <-time.After(5 * time.Second):
		t.Error("context not cancelled after the handler returned")
	}
	// Keep-alive still works after a watched request.
	for i := 0; i < 3; i++ {
		resp, err := http.Get("http://" + addr + "/quick")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

func TestPanicAndShutdown(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	release := make(chan struct{})
	s := &h1.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("boom")
		case "/slow":
			<-release
			io.WriteString(w, "finished")
		}
	})}
	done := make(chan error)
	go func() { done <- s.Serve(ln) }()
	addr := ln.Addr().String()
	if out := exchange(t, addr, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\n"); out != "" {
		t.Errorf("panic: got %q, want the connection closed", out)
	}
	idle, _ := net.Dial("tcp", addr)
	idle.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	bufio.NewReader(idle).ReadString('\n')
	result := make(chan string)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			result <- err.Error()
			return
		}
		result <- body(resp)
	}()
	time.Sleep(100 * time.Millisecond)
	shut := make(chan error)
	go func() { shut <- s.Shutdown(t.Context()) }()
	time.Sleep(100 * time.Millisecond)
	close(release)
	if got := <-result; got != "finished" {
		t.Errorf("in-flight request during shutdown: %q", got)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-done; err != h1.ErrServerClosed {
		t.Errorf("Serve returned %v", err)
	}
	idle.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Errorf("idle connection still open after shutdown")
	}
}

// A client that stops reading is dropped after WriteTimeout.
func TestWriteTimeout(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	failed := make(chan error, 1)
	s := &h1.Server{Limits: limits.Limits{Write: 300 * time.Millisecond}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for i := 0; i < 1000; i++ {
			if _, err := w.Write(chunk); err != nil {
				failed <- err
				return
			}
		}
		failed <- nil
	})}
	go s.Serve(ln)
	defer s.Close()
	c, _ := net.Dial("tcp", ln.Addr().String())
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	select {
	case err := <-failed:
		if err == nil {
			t.Fatal("64 MB written to a client that reads nothing")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler still blocked after 10 s")
	}
}

// TestExpectRFC9110 checks the Expect field against RFC 9110 section
// 10.1.1: a 100-continue expectation in an HTTP/1.0 request is ignored
// (no interim response, no 417); other expectations get 417.
func TestExpectRFC9110(t *testing.T) {
	addr := start(t, echo)
	cases := []struct {
		name, raw string
		status    int
		interim   bool
	}{
		{"10.1.1 HTTP/1.1 100-continue", "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", 200, true},
		{"10.1.1 HTTP/1.0 100-continue is ignored", "POST / HTTP/1.0\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello", 200, false},
		{"10.1.1 HTTP/1.0 100-Continue (case-insensitive) is ignored", "POST / HTTP/1.0\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\nhello", 200, false},
		{"10.1.1 unknown expectation", "POST / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 5\r\n\r\nhello", 417, false},
		{"10.1.1 unknown expectation in HTTP/1.0", "POST / HTTP/1.0\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 5\r\n\r\nhello", 417, false},
	}
	for _, tc := range cases {
		out := exchange(t, addr, tc.raw)
		if tc.interim {
			var ok bool
			if out, ok = strings.CutPrefix(out, "HTTP/1.1 100 Continue\r\n\r\n"); !ok {
				t.Errorf("%s: no 100 Continue: %.60q", tc.name, out)
				continue
			}
		}
		if !strings.HasPrefix(out, fmt.Sprintf("HTTP/1.1 %d ", tc.status)) {
			t.Errorf("%s: got %.60q, want %d", tc.name, out, tc.status)
			continue
		}
		if tc.status == 200 && !strings.Contains(out, "len=5") {
			t.Errorf("%s: body not read: %q", tc.name, out)
		}
	}
}

// TestBodyReadTimeout: a client that stops sending its body makes the
// handler's read fail with a timeout after BodyReadTimeout (nginx's
// client_body_timeout; the handler answers 408, RFC 9110 section 15.5.9),
// and a deadline the handler sets itself wins over it.
func TestBodyReadTimeout(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	s := &h1.Server{Limits: limits.Limits{Body: limits.NewBody(300*time.Millisecond, limits.DefaultBodyMinRate)}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/own" {
			// The handler's own (longer) deadline replaces the timeout.
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
		}
		start := time.Now()
		_, err := io.ReadAll(r.Body)
		if !os.IsTimeout(err) {
			w.WriteHeader(500)
			return
		}
		if r.URL.Path == "/own" && time.Since(start) < time.Second {
			w.WriteHeader(500) // the body timeout replaced the handler's deadline
			return
		}
		w.WriteHeader(http.StatusRequestTimeout)
	})}
	go s.Serve(ln)
	defer s.Close()
	for _, path := range []string{"/", "/own"} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: no response to a stalled body: %v", path, err)
		}
		if res.StatusCode != http.StatusRequestTimeout {
			t.Errorf("%s: status %d, want 408", path, res.StatusCode)
		}
		c.Close()
	}
}

// TestRejectedHook: every answer the engine makes itself reaches
// Server.Rejected with its status, body size and as much of the request
// line as was read, so that the access log and counters have it; requests
// the handler serves do not.
func TestRejectedHook(t *testing.T) {
	type call struct {
		method, uri, proto string
		status             int
		n                  int64
	}
	calls := make(chan call, 8)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h1.Server{Handler: echo, Limits: limits.Limits{HeaderBytes: 8 << 10}, Rejected: func(r *http.Request, status int, n int64) {
		calls <- call{r.Method, r.RequestURI, r.Proto, status, n}
	}}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	addr := ln.Addr().String()
	for raw, want := range map[string]call{
		"GET /a\\..%zz HTTP/1.1\r\nHost: x\r\n\r\n":                                      {"GET", "/a\\..%zz", "HTTP/1.1", 400, 0},
		"GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n":                                        {"GET", "/", "HTTP/1.1 extra", 400, 0},
		"GET /" + strings.Repeat("a", 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n":             {"", "", "", 414, 0},
		"GET /big HTTP/1.1\r\nHost: x\r\nBig: " + strings.Repeat("a", 9000) + "\r\n\r\n": {"GET", "/big", "HTTP/1.1", 431, 0},
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n":                                              {},
	} {
		out := exchange(t, addr, raw)
		resp := responses(t, out, "GET")
		if len(resp) != 1 {
			t.Fatalf("%.30q: %d responses", raw, len(resp))
		}
		if want.status == 0 {
			select {
			case c := <-calls:
				t.Errorf("%.30q served by the handler, yet Rejected(%v)", raw, c)
			default:
			}
			continue
		}
		select {
		case c := <-calls:
			want.n = int64(len(body(resp[0])))
			if c != want || resp[0].StatusCode != want.status || resp[0].Header.Get("Cache-Control") != "no-store" {
				t.Errorf("%.30q: Rejected(%+v), want %+v; response %d %q", raw, c, want, resp[0].StatusCode, resp[0].Header.Get("Cache-Control"))
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%.30q: answered %d, Rejected not called", raw, resp[0].StatusCode)
		}
	}
}

// TestRepeatedFields: the engine reuses the last response's serialised
// fields only for the very same values: a handler that changes a value
// inside the slice it set before, removes a field or adds one gets its
// new fields on the wire.
func TestRepeatedFields(t *testing.T) {
	v := []string{"one"}
	cl, ct := []string{"2"}, []string{"text/plain"}
	step := 0
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Same"] = v
		h["Content-Length"], h["Content-Type"] = cl, ct // constant: the memo can match
		switch step {
		case 1:
			v[0] = "two" // same slice, new string
		case 2:
			delete(h, "X-Same")
			h["X-Other"] = v
		case 3:
			h["X-Extra"] = v
		}
		step++
		io.WriteString(w, "ok")
	}))
	out := exchange(t, addr, strings.Repeat("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5)+"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	rs := responses(t, out, "GET")
	if len(rs) != 6 {
		t.Fatalf("%d responses:\n%s", len(rs), out)
	}
	want := []string{"X-Same=one X-Other= X-Extra=", "X-Same=two X-Other= X-Extra=", "X-Same= X-Other=two X-Extra=",
		"X-Same=two X-Other= X-Extra=two", "X-Same=two X-Other= X-Extra=", "X-Same=two X-Other= X-Extra="}
	for i, r := range rs {
		got := fmt.Sprintf("X-Same=%s X-Other=%s X-Extra=%s", r.Header.Get("X-Same"), r.Header.Get("X-Other"), r.Header.Get("X-Extra"))
		if got != want[i] || body(r) != "ok" {
			t.Errorf("response %d: %s, want %s", i, got, want[i])
		}
	}
}

// TestRepeatedDate: a handler that sets Date itself, with the same
// string each time, gets its Date once on every response, also when the
// engine copies the fields from the last response (fieldMemo); one that
// stops setting it gets the engine's.
func TestRepeatedDate(t *testing.T) {
	date := []string{"Tue, 01 Dec 2026 20:00:00 GMT"}
	step := 0
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if step < 3 {
			w.Header()["Date"] = date
		}
		step++
		io.WriteString(w, "ok")
	}))
	out := exchange(t, addr, strings.Repeat("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 3)+"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	rs := responses(t, out, "GET")
	if len(rs) != 4 {
		t.Fatalf("%d responses:\n%s", len(rs), out)
	}
	if n := strings.Count(out, "\r\nDate: "); n != 4 {
		t.Fatalf("%d Date lines in 4 responses:\n%s", n, out)
	}
	for i, r := range rs {
		got := r.Header.Get("Date")
		if i < 3 && got != date[0] || i == 3 && (got == date[0] || got == "") {
			t.Errorf("response %d: Date %q", i, got)
		}
	}
}

// TestIdleLongerThanHeaderTimeout: a kept-alive connection may stay idle
// for the idle timeout, though its wait is first armed with the shorter
// header timeout, and is closed once the idle timeout has passed; a new
// connection that sends nothing is closed after the header timeout.
func TestIdleLongerThanHeaderTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h1.Server{Handler: echo, Limits: limits.Limits{ReadHeader: 200 * time.Millisecond, Idle: 800 * time.Millisecond}}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	get := func(path string) {
		t.Helper()
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if b := body(resp); !strings.HasPrefix(b, "GET "+path+" ") {
			t.Fatalf("%s: %q", path, b)
		}
	}
	get("/a")
	time.Sleep(500 * time.Millisecond) // past the header timeout, within the idle one
	get("/b")
	start := time.Now()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
	if d := time.Since(start); d < 700*time.Millisecond || d > 2*time.Second {
		t.Errorf("idle connection closed after %v, want about 800ms", d)
	}
	// A new connection gets the header timeout.
	c2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	start = time.Now()
	if _, err := c2.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("silent new connection: %v, want EOF", err)
	}
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Errorf("silent new connection closed after %v, want about 200ms", d)
	}
}

// TestETagSpelling: the entity tag field goes out as RFC 9110 spells it,
// "ETag", though net/http's canonical key (the one every handler and
// lookup uses) is "Etag"; also when the connection's previous fields are
// reused (fieldMemo).
func TestETagSpelling(t *testing.T) {
	etag := []string{`"5e1-c"`}
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Etag"] = etag
		io.WriteString(w, "tagged")
	}))
	out := exchange(t, addr, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if n := strings.Count(out, "\r\nETag: \"5e1-c\"\r\n"); n != 2 || strings.Contains(out, "Etag") {
		t.Errorf("ETag spelled otherwise:\n%s", out)
	}
}

// countingConn counts the writes the engine makes on a TCP connection.
type countingConn struct {
	*net.TCPConn
	writes *atomic.Int32
}

func (c countingConn) Write(p []byte) (int, error) { c.writes.Add(1); return c.TCPConn.Write(p) }
func (c countingConn) WriteBuffers(b *net.Buffers) (int64, error) {
	c.writes.Add(1)
	return b.WriteTo(c.TCPConn)
}

type countingListener struct {
	net.Listener
	writes *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c.(*net.TCPConn), l.writes}, nil
}

// TestLargeWriteOneSyscall: a body write larger than the write buffer,
// after the head (and a small first write) went into the buffer, goes out
// with them in one write (writev), and the client gets every byte in
// order, on two requests of one connection.
func TestLargeWriteOneSyscall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int32
	small := []byte("first bytes ")
	big := make([]byte, 30<<10)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	s := &h1.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(small)+len(big)))
		w.Write(small)
		w.Write(big)
	})}
	go s.Serve(countingListener{ln, &writes})
	defer s.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := 0; i < 2; i++ {
		writes.Store(0)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || string(b) != string(small)+string(big) {
			t.Fatalf("request %d: %d bytes, %v", i, len(b), err)
		}
		if n := writes.Load(); n != 1 {
			t.Errorf("request %d: %d writes, want 1", i, n)
		}
	}
}

// A response must not wait for the next request to arrive whole: with a
// stray CRLF after a request (RFC 9112 section 2.2: to be ignored), or the
// first bytes of a pipelined head, the server answers the request it has
// at once, as the client may send nothing more until it has the answer.
func TestAnswerBeforeNextRequestArrives(t *testing.T) {
	addr := start(t, echo)
	cases := []struct{ name, raw, want string }{
		{"CRLF after request", "GET /a HTTP/1.1\r\nHost: x\r\n\r\n\r\n", "GET /a "},
		{"CRLF after POST body", "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\r\n", "POST /p raw= q= host=x len=3"},
		{"part of the next head", "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HT", "GET /a "},
		{"next head whole, its body not", "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhe", "GET /a "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.Write([]byte(c.raw))
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			r, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer while the connection stays open: %v", err)
			}
			b, _ := io.ReadAll(r.Body)
			if r.StatusCode != 200 || !strings.HasPrefix(string(b), c.want) {
				t.Errorf("got %d %q, want 200 %q...", r.StatusCode, b, c.want)
			}
		})
	}
}

// A handler that answers without reading the request body (401, 405,
// 413 for an upload): the answer goes out at once, not after the server
// has waited for the rest of the body it discards (RFC 9112 section 9.6
// lets it close after answering; nothing asks it to hold the answer).
func TestAnswerBeforeDiscardingBody(t *testing.T) {
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sized" {
			// As the static handler and error pages answer: the length
			// declared, the head written before the body.
			w.Header().Set("Content-Length", "3")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, "no\n")
			return
		}
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	for _, head := range []string{
		"POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n",
		"POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2710\r\n",
		"POST /sized HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n",
		"GET /sized HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n",
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(head + strings.Repeat("a", 10000)))
		start := time.Now()
		conn.SetReadDeadline(start.Add(5 * time.Second))
		r, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: %v", head, err)
		}
		if took := time.Since(start); r.StatusCode != 401 || took > time.Second {
			t.Errorf("%q: %d after %v, want 401 at once", head, r.StatusCode, took)
		}
		conn.Close()
	}
}

// A pipelined request's answer goes out before the next request's handler
// runs: a slow handler (PHP, an upstream, a long poll) behind a quick
// request does not hold the quick one's answer up.
func TestPipelinedAnswerNotHeldBySlowHandler(t *testing.T) {
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(1500 * time.Millisecond)
		}
		io.WriteString(w, r.URL.Path)
	}))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET /quick HTTP/1.1\r\nHost: x\r\n\r\nGET /slow HTTP/1.1\r\nHost: x\r\n\r\n"))
	start := time.Now()
	conn.SetReadDeadline(start.Add(5 * time.Second))
	br := bufio.NewReader(conn)
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	if took := time.Since(start); string(b) != "/quick" || took > time.Second {
		t.Errorf("first answer %q after %v, want /quick at once", b, took)
	}
	r, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ = io.ReadAll(r.Body); string(b) != "/slow" {
		t.Errorf("second answer %q", b)
	}
}

// The engine's own answers to requests it cannot parse carry Date, as
// RFC 9110 section 6.6.1 asks of every 4xx from a server with a clock.
func TestParseErrorHasDate(t *testing.T) {
	addr := start(t, echo)
	out := exchange(t, addr, "GET / HTTP/1.1\r\n\r\n") // no Host
	rs := responses(t, out, "GET")
	if len(rs) != 1 || rs[0].StatusCode != 400 {
		t.Fatalf("%q", out)
	}
	if d, err := http.ParseTime(rs[0].Header.Get("Date")); err != nil || time.Since(d) > 5*time.Second || time.Until(d) > 5*time.Second {
		t.Errorf("Date %q: %v", rs[0].Header.Get("Date"), err)
	}
}

// TestAbortSendsWhatWasWritten: a handler that gives up with
// http.ErrAbortHandler after writing part of its response (the proxy and
// FastCGI handlers, when an upstream breaks off) leaves the client with
// what it wrote, then the close: a head and a body shorter than its
// Content-Length, or chunks without the last one, so the client knows the
// response was cut short (RFC 9112 section 8), where it got nothing at all
// when the head and body were still held in the engine's buffers. Over
// HTTP/1.0 a body of unknown length is delimited by the close, so a cut
// one would read as complete: nothing is sent then.
func TestAbortSendsWhatWasWritten(t *testing.T) {
	body := strings.Repeat("x", 100)
	addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/length" {
			w.Header().Set("Content-Length", "1000")
		}
		io.WriteString(w, body)
		panic(http.ErrAbortHandler)
	}))
	out := exchange(t, addr, "GET /length HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 200 ") || !strings.Contains(out, "Content-Length: 1000\r\n") || !strings.HasSuffix(out, "\r\n\r\n"+body) {
		t.Errorf("Content-Length 1000, 100 written, abort: %q", out)
	}
	out = exchange(t, addr, "GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 200 ") || !strings.Contains(out, "Transfer-Encoding: chunked\r\n") || !strings.HasSuffix(out, "\r\n\r\n64\r\n"+body+"\r\n") {
		t.Errorf("unknown length, 100 written, abort: %q", out)
	}
	if out := exchange(t, addr, "GET /chunked HTTP/1.0\r\n\r\n"); out != "" {
		t.Errorf("HTTP/1.0, unknown length, abort: %q, want nothing (the close would end the body)", out)
	}
	if out := exchange(t, addr, "HEAD /length HTTP/1.1\r\nHost: x\r\n\r\n"); out != "" {
		t.Errorf("HEAD, abort: %q, want nothing (the head would read as complete)", out)
	}
}
