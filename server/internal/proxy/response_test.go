package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/arkaweb/arka/config"
)

// rawUpstream answers each request with the bytes answer gives for its
// path ("/good" always gets a small valid response), written as they are,
// and closes the connection after answers that end with close. It is the
// hostile or broken upstream a proxy must survive. stop ends it; the test
// registers it after the front's cleanup (which checks for goroutines
// left).
func rawUpstream(t *testing.T, answer func(path string) (resp string, close bool)) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var once sync.Once
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	stop = func() {
		once.Do(func() {
			ln.Close()
			mu.Lock()
			for c := range conns {
				c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					path := strings.Fields(line + " x x")[1]
					for {
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if l == "\r\n" {
							break
						}
					}
					resp, close := "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood", false
					if path != "/good" {
						resp, close = answer(path)
					}
					c.SetWriteDeadline(time.Now().Add(5 * time.Second))
					if _, err := io.WriteString(c, resp); err != nil || close {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), stop
}

// TestHostileUpstreamHeads: response heads that a lenient parser would
// misread (smuggling, splitting, header injection) are answered 502, the
// upstream's connection is dropped, and the next request is served.
func TestHostileUpstreamHeads(t *testing.T) {
	bad := map[string]string{
		"obs-fold":           "HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\nok",
		"obs-fold-tab":       "HTTP/1.1 200 OK\r\nX-A: 1\r\n\tfolded\r\nContent-Length: 2\r\n\r\nok",
		"bare-cr":            "HTTP/1.1 200 OK\r\nX-A: a\rSet-Cookie: evil=1\r\nContent-Length: 2\r\n\r\nok",
		"nul":                "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nok",
		"space-in-name":      "HTTP/1.1 200 OK\r\nX A: 1\r\nContent-Length: 2\r\n\r\nok",
		"space-before-colon": "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok",
		"empty-name":         "HTTP/1.1 200 OK\r\n: 1\r\nContent-Length: 2\r\n\r\nok",
		"no-colon":           "HTTP/1.1 200 OK\r\nX-A\r\nContent-Length: 2\r\n\r\nok",
		"cl-and-te":          "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"te-and-cl":          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"cl-differ":          "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!",
		"cl-list-differ":     "HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok!",
		"cl-negative":        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nok",
		"cl-plus":            "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
		"cl-hex":             "HTTP/1.1 200 OK\r\nContent-Length: 0x2\r\n\r\nok",
		"cl-empty":           "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\nok",
		"cl-huge":            "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nok",
		"te-gzip":            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok",
		"te-gzip-chunked":    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"te-twice":           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"te-http10":          "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"status-4-digits":    "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok",
		"status-low":         "HTTP/1.1 099 Low\r\nContent-Length: 2\r\n\r\nok",
		"status-high":        "HTTP/1.1 600 High\r\nContent-Length: 2\r\n\r\nok",
		"status-letters":     "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok",
		"version-2":          "HTTP/2 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"version-lower":      "http/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"not-http":           "ICY 200 OK\r\n\r\nok",
		"reason-ctl":         "HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\n\r\nok",
		"head-over-1MiB":     "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Big: "+strings.Repeat("b", 1000)+"\r\n", 1100) + "Content-Length: 2\r\n\r\nok",
		"line-over-1MiB":     "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 1<<20+10) + "\r\nContent-Length: 2\r\n\r\nok",
		"eof-in-head":        "HTTP/1.1 200 OK\r\nContent-Len",
	}
	up, stop := rawUpstream(t, func(path string) (string, bool) {
		return bad[strings.TrimPrefix(path, "/")], true
	})
	h, logs := newProxy(t, config.Proxy{Upstreams: []string{up}, StripPrefix: true})
	f := startFront(t, "h1", h)
	t.Cleanup(stop)
	for name := range bad {
		resp, body := get(t, f.client, f.url("/proxy/"+name))
		if resp.StatusCode != http.StatusBadGateway || strings.Contains(body, "ok") || resp.Header.Get("X-A") != "" || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("%s: %d %v %.40q, want 502 and nothing of the upstream's", name, resp.StatusCode, resp.Header, body)
		}
		if resp, body := get(t, f.client, f.url("/proxy/good")); resp.StatusCode != 200 || body != "good" {
			t.Errorf("after %s: %d %q", name, resp.StatusCode, body)
		}
	}
	if !strings.Contains(logs.String(), "bad response") {
		t.Errorf("no bad response logged:\n%s", logs)
	}
}

// TestHostileUpstreamBodies: a body that turns out malformed or short is
// answered 502 when nothing of the response reached the client yet (the
// whole answer is in the response buffer), else cut off (without response
// buffering: the client sees an incomplete response, never a complete
// one), and the next request is served.
func TestHostileUpstreamBodies(t *testing.T) {
	bad := map[string]string{
		"chunk-size-letters": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\n",
		"chunk-size-huge":    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nfffffffffffffffffff\r\nxx\r\n0\r\n\r\n",
		"chunk-no-crlf":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX3\r\nabc\r\n0\r\n\r\n",
		"chunk-bare-cr":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n1;a=\rb\r\nx\r\n0\r\n\r\n",
		"chunk-line-long":    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n1;" + strings.Repeat("e", 8000) + "\r\nx\r\n0\r\n\r\n",
		"chunk-eof":          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n5\r\nab",
		"length-eof":         "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok",
		"trailer-over-1MiB":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n" + strings.Repeat("X-T: "+strings.Repeat("t", 1000)+"\r\n", 1100) + "\r\n",
		"trailer-obs-fold":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n folded\r\n\r\n",
	}
	for _, buffering := range []bool{true, false} {
		t.Run(fmt.Sprintf("response_buffering=%v", buffering), func(t *testing.T) {
			up, stop := rawUpstream(t, func(path string) (string, bool) {
				return bad[strings.TrimPrefix(path, "/")], true
			})
			h, logs := newProxy(t, config.Proxy{Upstreams: []string{up}, StripPrefix: true, ResponseBuffering: &buffering})
			f := startFront(t, "h1", h)
			t.Cleanup(stop)
			for name := range bad {
				resp, err := f.client.Get(f.url("/proxy/" + name))
				if buffering && !strings.HasSuffix(name, "-eof") {
					// The fault is in the bytes the proxy has when it
					// finds it. (At an end of stream that comes after a
					// pause the proxy has flushed what came: cut off.)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusBadGateway || err != nil || strings.Contains(string(b), "ok") {
						t.Errorf("%s: %d %v %.40q (%v), want 502", name, resp.StatusCode, resp.Header, b, err)
					}
				} else if err == nil && resp.StatusCode != http.StatusBadGateway {
					// The connection is closed before the response is
					// complete: before its head when the engine had not
					// sent it yet, else in its body.
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil {
						t.Errorf("%s: the client got a complete response: %d %q", name, resp.StatusCode, b)
					}
				}
				if resp, body := get(t, f.client, f.url("/proxy/good")); resp.StatusCode != 200 || body != "good" {
					t.Errorf("after %s: %d %q", name, resp.StatusCode, body)
				}
			}
			if n := strings.Count(logs.String(), "status=502"); buffering && n < len(bad)-2 {
				t.Errorf("%d of %d failures logged 502:\n%s", n, len(bad), logs.String())
			}
		})
	}
}

// TestUpstreamHeadsAccepted: what RFC 9112 allows is relayed as meant:
// lower-case names in canonical form, LF line ends, a repeated identical
// Content-Length once, a close-delimited HTTP/1.0 body, 100 Continue
// dropped, chunk extensions ignored and trailers passed on; and the
// connection is kept where the framing allows.
func TestUpstreamHeadsAccepted(t *testing.T) {
	cases := map[string]struct {
		resp   string
		close  bool
		status int
		body   string
		hdr    map[string]string
	}{
		"lower-names":   {resp: "HTTP/1.1 201 Created\r\ncontent-type: text/x\r\nx-custom-NAME:  v  \r\ncontent-length: 2\r\n\r\nok", status: 201, body: "ok", hdr: map[string]string{"Content-Type": "text/x", "X-Custom-Name": "v"}},
		"lf-only":       {resp: "HTTP/1.1 200 OK\nContent-Type: text/x\nContent-Length: 2\n\nok", status: 200, body: "ok", hdr: map[string]string{"Content-Type": "text/x"}},
		"cl-repeated":   {resp: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok", hdr: map[string]string{"Content-Length": "2"}},
		"cl-list-same":  {resp: "HTTP/1.1 200 OK\r\nContent-Length: 2 , 2\r\n\r\nok", status: 200, body: "ok", hdr: map[string]string{"Content-Length": "2"}},
		"no-reason":     {resp: "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok"},
		"http10-close":  {resp: "HTTP/1.0 200 OK\r\nX-A: 1\r\n\r\nuntil close", close: true, status: 200, body: "until close", hdr: map[string]string{"X-A": "1"}},
		"continue":      {resp: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok"},
		"chunked-ext":   {resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n2;name=\"v\"\r\nok\r\n3 ; x\r\n!!!\r\n0\r\n\r\n", status: 200, body: "ok!!!"},
		"obs-text":      {resp: "HTTP/1.1 200 OK\r\nX-A: caf\xe9\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok", hdr: map[string]string{"X-A": "caf\xe9"}},
		"conn-named":    {resp: "HTTP/1.1 200 OK\r\nConnection: x-hop\r\nX-Hop: 1\r\nX-Keep: 2\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok", hdr: map[string]string{"X-Hop": "", "X-Keep": "2"}},
		"set-cookie-x2": {resp: "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-A: 1\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok"},
	}
	up, stop := rawUpstream(t, func(path string) (string, bool) {
		c := cases[strings.TrimPrefix(path, "/")]
		return c.resp, c.close
	})
	h, logs := newProxy(t, config.Proxy{Upstreams: []string{up}, StripPrefix: true})
	f := startFront(t, "h1", h)
	t.Cleanup(stop)
	for name, c := range cases {
		resp, body := get(t, f.client, f.url("/proxy/"+name))
		if resp.StatusCode != c.status || body != c.body {
			t.Errorf("%s: %d %q, want %d %q\n%s", name, resp.StatusCode, body, c.status, c.body, logs)
		}
		for k, v := range c.hdr {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", name, k, got, v)
			}
		}
		if name == "set-cookie-x2" {
			if got := resp.Header["Set-Cookie"]; len(got) != 2 || got[0] != "a=1" || got[1] != "b=2" {
				t.Errorf("Set-Cookie twice: %q", got)
			}
		}
		if name == "cl-repeated" && len(resp.Header["Content-Length"]) > 1 {
			t.Errorf("Content-Length relayed twice: %q", resp.Header["Content-Length"])
		}
	}
	get(t, f.client, f.url("/proxy/good"))
	// The kept-alive responses above went over one connection; the
	// close-delimited one took a new one after it.
	if st := h.Stats()[0]; st.Dials != 2 {
		t.Errorf("dials %d, want 2 (the first, and one after the HTTP/1.0 close)", st.Dials)
	}
}

// TestKeptConnectionOutlivesHeaderTimeout: a response read whole leaves
// the response-header timeout armed on its connection (one timer update
// per request); a connection idle for longer than that timeout is still
// found alive and reused, and a slow streamed request body on it does not
// run into the old deadline.
func TestKeptConnectionOutlivesHeaderTimeout(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, "ok "+string(b))
	}))
	h, logs := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, ResponseHeaderTimeout: dur(200 * time.Millisecond)})
	f := startFront(t, "h1", h)
	for i := 0; i < 2; i++ {
		if resp, b := get(t, f.client, f.url("/proxy/")); resp.StatusCode != 200 || b != "ok " {
			t.Fatalf("%d %q\n%s", resp.StatusCode, b, logs)
		}
		time.Sleep(400 * time.Millisecond)
	}
	// A body of unknown length, sent slowly: streamed while the head is
	// awaited, on the kept connection.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("slow"))
		time.Sleep(300 * time.Millisecond)
		pw.Write([]byte(" body"))
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", f.url("/proxy/"), pr)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok slow body" {
		t.Errorf("streamed body after an idle wait: %d %q\n%s", resp.StatusCode, b, logs)
	}
	if st := h.Stats()[0]; st.Dials != 1 {
		t.Errorf("dials %d, want 1: the kept connection was not reused\n%s", st.Dials, logs)
	}
}

// TestHeadTextShared: a response head with the same text as the upstream's
// last one reuses its string (so the engine's field memo matches by
// identity); a different one gets its own.
func TestHeadTextShared(t *testing.T) {
	var last atomic.Pointer[string]
	a := response{last: &last, raw: []byte("Content-Type: text/plainDate: x")}
	b := response{last: &last, raw: []byte("Content-Type: text/plainDate: x")}
	s1, s2 := a.text(), b.text()
	if s1 != s2 || unsafe.StringData(s1) != unsafe.StringData(s2) {
		t.Fatal("the same head text was not shared")
	}
	b.raw = []byte("Content-Type: text/plainDate: y")
	s3 := b.text()
	if s3 != string(b.raw) || unsafe.StringData(s3) == unsafe.StringData(s1) {
		t.Fatalf("a changed head gave %q", s3)
	}
	b.raw[0] = 'X' // the connection's buffer is reused: the string must not change
	if s3[0] != 'C' {
		t.Fatal("the text aliases the read buffer")
	}
}

// TestSlowBodyOutlivesHeaderDeadline: the response-header deadline stays
// armed while a body is read (one timer update per request less); a body
// that takes longer than the timeout, with and without a length, still
// comes whole, and the connection is reused afterwards.
func TestSlowBodyOutlivesHeaderDeadline(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/length" {
			w.Header().Set("Content-Length", "10")
		}
		io.WriteString(w, "start")
		w.(http.Flusher).Flush()
		time.Sleep(500 * time.Millisecond)
		io.WriteString(w, "-end")
		w.(http.Flusher).Flush()
		time.Sleep(100 * time.Millisecond)
		io.WriteString(w, "!")
	}))
	h, logs := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, ResponseHeaderTimeout: dur(200 * time.Millisecond)})
	f := startFront(t, "h1", h)
	for _, p := range []string{"/length", "/chunked", "/length"} {
		resp, b := get(t, f.client, f.url("/proxy"+p))
		if resp.StatusCode != 200 || b != "start-end!" {
			t.Fatalf("%s: %d %q\n%s", p, resp.StatusCode, b, logs)
		}
	}
	if st := h.Stats()[0]; st.Dials != 1 || st.Failures != 0 {
		t.Errorf("dials %d, failures %d: want one connection reused, no failure\n%s", st.Dials, st.Failures, logs)
	}
}

// TestBytesAfterResponseNotReused: an upstream that sends more than its
// response (here a second, unasked response in the same write) does not
// get its connection reused, so the next request never takes those bytes
// for its answer, with or without response buffering, small bodies and
// bodies too large to be sent from the read buffer.
func TestBytesAfterResponseNotReused(t *testing.T) {
	big := strings.Repeat("b", 40<<10)
	for _, buffering := range []bool{true, false} {
		t.Run(fmt.Sprintf("response_buffering=%v", buffering), func(t *testing.T) {
			up, _ := rawUpstream(t, func(path string) (string, bool) {
				body := "ok"
				if path == "/big" {
					body = big
				}
				return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%sHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nevil!", len(body), body), false
			})
			h, _ := newProxy(t, config.Proxy{Upstreams: []string{up}, StripPrefix: true, ResponseBuffering: &buffering})
			f := startFront(t, "h1", h)
			for _, p := range []string{"/small", "/small", "/big", "/big", "/small"} {
				want := "ok"
				if p == "/big" {
					want = big
				}
				if resp, body := get(t, f.client, f.url("/proxy"+p)); resp.StatusCode != http.StatusOK || body != want {
					t.Errorf("%s: %d %.20q, want 200 and its own body", p, resp.StatusCode, body)
				}
			}
			if n := h.Stats()[0].Dials; n != 5 {
				t.Errorf("%d upstream connections for 5 requests, want a new one for each", n)
			}
		})
	}
}

// TestLateBytesNotReused: an upstream that sends an unsolicited response
// a moment after a complete one (a confused or desynchronised backend)
// must not have it delivered to the next client: a kept connection with
// bytes nobody asked for is closed however briefly it sat idle, as nginx
// closes such a connection.
func TestLateBytesNotReused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	defer func() { // before the front's leak check
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				br := bufio.NewReader(c)
				for {
					for {
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if l == "\r\n" {
							break
						}
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nmine")
					time.Sleep(20 * time.Millisecond)
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: session=victim\r\n\r\nstray")
				}
			}()
		}
	}()
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{ln.Addr().String()}, StripPrefix: true})
	f := startFront(t, "h1", h)
	for i := range 4 {
		resp, body := get(t, f.client, f.url("/proxy/x"))
		if resp.StatusCode != http.StatusOK || body != "mine" || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("request %d: %d %q %q, want 200 and its own answer", i, resp.StatusCode, body, resp.Header.Get("Set-Cookie"))
		}
		time.Sleep(60 * time.Millisecond) // the stray answer is there, well within 200 ms
	}
}

// TestHeadMemo: a head taken from the upstream's memo (the same bytes as
// the last head) reads as the parser reads it; a head that differs in one
// byte, comes in two reads, ends lines with LF alone or answers HEAD is
// parsed, and a hostile head after a memoised good one is still refused.
func TestHeadMemo(t *testing.T) {
	good := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-type: text/x\r\nConnection: x-hop\r\nX-Hop: 1\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n\r\nok"
	steps := []struct {
		name, method string
		reads        []string // what each read of the upstream returns
		wantErr      bool
		memoHit      bool
	}{
		{"first", "GET", []string{good}, false, false},
		{"same", "GET", []string{good}, false, true},
		{"same-again", "GET", []string{good}, false, true},
		{"date-differs", "GET", []string{strings.Replace(good, "05 GMT", "06 GMT", 1)}, false, false},
		{"back", "GET", []string{good}, false, false},
		{"head", "HEAD", []string{strings.TrimSuffix(good, "ok")}, false, false},
		{"split", "GET", []string{good[:20], good[20:]}, false, false},
		{"lf-only", "GET", []string{strings.ReplaceAll(good, "\r\n", "\n")}, false, false},
		{"after-lf-only", "GET", []string{good}, false, true},
		{"same-length-cl-te", "GET", []string{strings.Replace(good, "Date: Mon, 02 Jan 2006 15:04:05 GMT", "Transfer-Encoding: chunked\r\nDate: x", 1)}, true, false},
		{"same-length-fold", "GET", []string{strings.Replace(good, "X-Hop: 1", " X-Hop:1", 1)}, true, false},
		{"chunked", "GET", []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n"}, false, false},
		{"chunked-again", "GET", []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n"}, false, false},
		{"interim", "GET", []string{"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"}, false, false},
		{"interim-again", "GET", []string{"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"}, false, false},
	}
	var last atomic.Pointer[string]
	var memo atomic.Pointer[headMemo]
	mp := response{last: &last, memo: &memo}
	for _, s := range steps {
		// The same head through the parser alone, for comparison.
		want := response{}
		wantErr := want.readResponse(bufio.NewReader(&chunkReader{reads: append([]string(nil), s.reads...)}), s.method)
		before := memo.Load()
		br := bufio.NewReaderSize(&chunkReader{reads: append([]string(nil), s.reads...)}, readBufSize)
		err := mp.readResponse(br, s.method)
		if (err != nil) != s.wantErr || (wantErr != nil) != s.wantErr {
			t.Fatalf("%s: error %v (parser alone: %v), want error %v", s.name, err, wantErr, s.wantErr)
		}
		if err != nil {
			continue
		}
		hit := mp.txt != "" && before != nil && mp.txt == before.text && memo.Load() == before
		if hit != s.memoHit {
			t.Errorf("%s: memo used %v, want %v", s.name, hit, s.memoHit)
		}
		if mp.StatusCode != want.StatusCode || mp.ContentLength != want.ContentLength || mp.Close != want.Close ||
			mp.framing != want.framing || mp.remain != want.remain || mp.state != want.state || mp.cl != want.cl ||
			fmt.Sprint(mp.Header()) != fmt.Sprint(want.Header()) || fmt.Sprint(mp.announced) != fmt.Sprint(want.announced) {
			t.Errorf("%s: read %+v\nparser alone %+v", s.name, mp, want)
		}
		gotH, wantH := http.Header{}, http.Header{}
		gc, wc := mp.copyHeader(gotH), want.copyHeader(wantH)
		if fmt.Sprint(gotH) != fmt.Sprint(wantH) || fmt.Sprint(gc) != fmt.Sprint(wc) {
			t.Errorf("%s: fields %v %q, parser alone %v %q", s.name, gotH, gc, wantH, wc)
		}
		// The engine's map may be changed as any other: appending to a
		// field's values leaves the memo's (shared) slices as they were.
		for k := range gotH {
			gotH.Add(k, "changed")
		}
		again := http.Header{}
		mp.copyHeader(again)
		if fmt.Sprint(again) != fmt.Sprint(wantH) {
			t.Errorf("%s: after the engine's map changed: %v, want %v", s.name, again, wantH)
		}
		if body, _ := io.ReadAll(&mp); s.method != "HEAD" && mp.StatusCode == 200 && string(body) != "ok" {
			t.Errorf("%s: body %q", s.name, body)
		}
	}
	// The memo is the upstream's, never changed by a response read after it.
	m := memo.Load()
	wire, raw := string(m.wire), string(m.raw)
	mp.readResponse(bufio.NewReader(&chunkReader{reads: []string{strings.Replace(good, "X-Hop: 1", "X-Hop: 2", 1)}}), "GET")
	mp.readResponse(bufio.NewReader(&chunkReader{reads: []string{good}}), "GET")
	if string(m.wire) != wire || string(m.raw) != raw {
		t.Errorf("a stored memo changed: %q %q", m.wire, m.raw)
	}
}

// chunkReader returns one of reads per read, then io.EOF.
type chunkReader struct{ reads []string }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.reads) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.reads[0])
	if r.reads[0] = r.reads[0][n:]; r.reads[0] == "" {
		r.reads = r.reads[1:]
	}
	return n, nil
}
