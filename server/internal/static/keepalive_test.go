package static_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestOneConnectionManyAnswers: on one keep-alive HTTP/1.1 connection,
// answers for different representations, statuses and files follow each
// other, each with its own fields. The engine copies a response's
// serialised fields from the previous one when they are the same strings
// (package h1), and the static handler sets the same strings for a cached
// file: no field of one answer may leak into the next, and repeating an
// answer gives the same fields.
func TestOneConnectionManyAnswers(t *testing.T) {
	e := newEnv(t)
	c, err := net.Dial("tcp", e.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	do := func(method, path string, fields ...string) *http.Response {
		t.Helper()
		req := method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n"
		for _, f := range fields {
			req += f + "\r\n"
		}
		if _, err := io.WriteString(c, req+"\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%s %s %v: %v", method, path, fields, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return resp
	}
	type want struct {
		status          int
		ce, vary, cl    string
		contentRange    bool
		bodyOfIdentity  bool
		noContentLength bool
	}
	check := func(step string, r *http.Response, w want) string {
		t.Helper()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != w.status || r.Header.Get("Content-Encoding") != w.ce || r.Header.Get("Vary") != w.vary ||
			(r.Header.Get("Content-Range") != "") != w.contentRange || (w.cl != "" && r.Header.Get("Content-Length") != w.cl) ||
			(w.noContentLength && r.Header.Get("Content-Length") != "") {
			t.Errorf("%s: %d, Content-Encoding %q, Vary %q, Content-Length %q, Content-Range %q; want %+v", step, r.StatusCode,
				r.Header.Get("Content-Encoding"), r.Header.Get("Vary"), r.Header.Get("Content-Length"), r.Header.Get("Content-Range"), w)
		}
		if w.bodyOfIdentity && !bytes.Equal(b, appJS) {
			t.Errorf("%s: body of %d bytes, not app.js", step, len(b))
		}
		return r.Header.Get("Etag")
	}
	ident := want{status: 200, vary: "Accept-Encoding", cl: strconv.Itoa(len(appJS)), bodyOfIdentity: true}
	tag := check("identity", do("GET", "/app.js"), ident)
	check("identity again", do("GET", "/app.js"), ident)
	brTag := check("br", do("GET", "/app.js", "Accept-Encoding: br"), want{status: 200, ce: "br", vary: "Accept-Encoding"})
	check("br again", do("GET", "/app.js", "Accept-Encoding: br"), want{status: 200, ce: "br", vary: "Accept-Encoding"})
	check("identity after br", do("GET", "/app.js"), ident)
	check("304", do("GET", "/app.js", "If-None-Match: "+tag), want{status: 304, vary: "Accept-Encoding", noContentLength: true})
	check("304 for br", do("GET", "/app.js", "Accept-Encoding: br", "If-None-Match: "+brTag), want{status: 304, vary: "Accept-Encoding", noContentLength: true})
	check("range", do("GET", "/app.js", "Range: bytes=0-9"), want{status: 206, vary: "Accept-Encoding", cl: "10", contentRange: true})
	check("HEAD", do("HEAD", "/app.js"), want{status: 200, vary: "Accept-Encoding", cl: strconv.Itoa(len(appJS))})
	r := do("GET", "/tiny.txt")
	if b, _ := io.ReadAll(r.Body); r.StatusCode != 200 || string(b) != "tiny\n" || r.Header.Get("Content-Length") != "5" || r.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("tiny.txt after app.js: %d %q, Content-Length %q, Content-Type %q", r.StatusCode, b, r.Header.Get("Content-Length"), r.Header.Get("Content-Type"))
	}
	check("identity at the end", do("GET", "/app.js"), ident)
	if r := do("GET", "/missing"); r.StatusCode != 404 || r.Header.Get("Etag") != "" || r.Header.Get("Vary") != "" {
		t.Errorf("404 after app.js: %d, ETag %q, Vary %q", r.StatusCode, r.Header.Get("Etag"), r.Header.Get("Vary"))
	}
}
