package server_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// captured is a request as an upstream received it: the head (request
// line and header section) and, after a chunked body, the trailer
// section, as the bytes on the wire.
type captured struct {
	head, body, trailer string
}

// field returns the values of the header (or trailer) field name in
// section s, compared case-insensitively.
func (c captured) field(s, name string) []string {
	var vv []string
	for _, l := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, name) {
			vv = append(vv, strings.TrimSpace(v))
		}
	}
	return vv
}

// captureUpstream is an HTTP/1.1 upstream on 127.0.0.1 that reads each
// request whole as it came (head, a Content-Length or chunked body, the
// trailer section), without any HTTP library's checks, hands it to the
// channel and answers 200 "ok" with Connection: close. It stops with the
// test; the result is its "host:port".
func captureUpstream(t *testing.T) (string, <-chan captured) {
	t.Helper()
	ch := make(chan captured, 16)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				var got captured
				section := func() (string, bool) {
					var b strings.Builder
					for {
						l, err := br.ReadString('\n')
						if err != nil {
							return "", false
						}
						if l == "\r\n" {
							return b.String(), true
						}
						b.WriteString(l)
					}
				}
				var ok bool
				if got.head, ok = section(); !ok {
					return
				}
				var body strings.Builder
				if te := got.field(got.head, "Transfer-Encoding"); len(te) == 1 && te[0] == "chunked" {
					for {
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						n, err := strconv.ParseInt(strings.TrimSpace(l), 16, 64)
						if err != nil {
							return
						}
						if n == 0 {
							break
						}
						if _, err := io.CopyN(&body, br, n); err != nil {
							return
						}
						if l, err := br.ReadString('\n'); err != nil || l != "\r\n" {
							return
						}
					}
					if got.trailer, ok = section(); !ok {
						return
					}
				} else if cl := got.field(got.head, "Content-Length"); len(cl) == 1 {
					n, _ := strconv.ParseInt(cl[0], 10, 64)
					if _, err := io.CopyN(&body, br, n); err != nil {
						return
					}
				}
				got.body = body.String()
				ch <- got
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
			}()
		}
	}()
	return ln.Addr().String(), ch
}

// receive waits for the upstream's next request.
func receive(t *testing.T, ch <-chan captured) captured {
	t.Helper()
	select {
	case got := <-ch:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream received no request")
	}
	return captured{}
}

// dialHTTP1 opens a connection to c's server for HTTP/1.1 (plain for
// "h1", TLS with ALPN http/1.1 for "h1+tls"), with a 10 s deadline.
func dialHTTP1(t *testing.T, e *servertest.Env, c *servertest.Client) net.Conn {
	t.Helper()
	var nc net.Conn
	var err error
	if c.Name == "h1" {
		nc, err = net.Dial("tcp", e.HTTP)
	} else {
		nc, err = tls.Dial("tcp", e.HTTPS, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	}
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

// rawExchange sends req on a new HTTP/1.1 connection to c's server (plain
// for "h1", TLS for "h1+tls") and reads the response.
func rawExchange(t *testing.T, e *servertest.Env, c *servertest.Client, req string) (*http.Response, string) {
	t.Helper()
	nc := dialHTTP1(t, e, c)
	defer nc.Close()
	if _, err := io.WriteString(nc, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// chunkedReader hides its length from net/http, which then sends the
// body chunked, with the request's trailers after it.
type chunkedReader struct{ io.Reader }

// TestProxyRequestTrailers: a client's trailers reach the upstream
// filtered as the upstream's trailers reach the client (RFC 9110 section
// 6.5.1: no framing, routing, authentication or control fields), and
// never one of the fields Arka sets or rewrites in the header section
// (forwarding fields, X-Request-Id, Via, hop-by-hop ones): an upstream
// that merges trailers into the header section would take them for
// Arka's. The Trailer field sent upstream names what is relayed, and an
// ordinary trailer (a checksum) still arrives. Over HTTP/1.1, TLS and
// HTTP/2.
func TestProxyRequestTrailers(t *testing.T) {
	up, got := captureUpstream(t)
	e := servertest.Start(t, `listen = ["{{HTTP}}"]
tls = { listen = ["{{HTTPS}}"] }
request_id = true
routes = [{ path = "/p/", handler = { type = "proxy", upstreams = ["`+up+`"] } }]
`)
	forged := [][2]string{
		{"X-Real-IP", "10.9.9.9"}, {"X-Forwarded-For", "6.6.6.6"}, {"X-Forwarded-Proto", "https"},
		{"X-Forwarded-Host", "evil"}, {"Forwarded", "for=6.6.6.6"}, {"X-Request-Id", "forged"},
		{"Via", "1.1 evil"}, {"Host", "evil"}, {"Authorization", "Basic Zm9v"}, {"Cookie", "sess=1"},
		{"Proxy", "http://evil"}, {"Max-Forwards", "9"}, {"Content-Type", "text/evil"},
		{"Cache-Control", "no-store"}, {"Expect", "100-continue"},
	}
	// Names net/http's client refuses in trailers, and connection-specific
	// ones HTTP/2 has no place for (RFC 9113 section 8.2.2): HTTP/1.1 only.
	framing := [][2]string{
		{"Content-Length", "99"}, {"Transfer-Encoding", "gzip"}, {"Trailer", "X-Checksum"},
		{"Connection", "close"}, {"Keep-Alive", "timeout=5"}, {"Te", "trailers"}, {"Upgrade", "websocket"},
		{"Proxy-Connection", "close"}, {"X_Real_IP", "10.9.9.9"},
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		send := forged
		if c.Name != "h2" {
			send = append(append([][2]string{}, forged...), framing...)
		}
		send = append(send, [2]string{"X-Checksum", "sha256=abc"})
		var status int
		if c.Name == "h2" {
			req, err := http.NewRequest(http.MethodPost, c.Base+"/p/e", chunkedReader{strings.NewReader("hello")})
			if err != nil {
				t.Fatal(err)
			}
			req.Trailer = http.Header{}
			for _, f := range send {
				req.Trailer[http.CanonicalHeaderKey(f[0])] = []string{f[1]}
			}
			resp, err := c.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		} else {
			var names, fields []string
			for _, f := range send {
				names = append(names, f[0])
				fields = append(fields, f[0]+": "+f[1]+"\r\n")
			}
			resp, _ := rawExchange(t, e, c, "POST /p/e HTTP/1.1\r\nHost: h\r\nConnection: close\r\nTrailer: "+
				strings.Join(names, ", ")+"\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"+strings.Join(fields, "")+"\r\n")
			status = resp.StatusCode
		}
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		req := receive(t, got)
		if req.body != "hello" {
			t.Errorf("body %q", req.body)
		}
		if v := req.field(req.trailer, "X-Checksum"); len(v) != 1 || v[0] != "sha256=abc" {
			t.Errorf("X-Checksum trailer %q, want sha256=abc; trailer section:\n%s", v, req.trailer)
		}
		if v := req.field(req.head, "Trailer"); len(v) != 1 || !strings.EqualFold(v[0], "X-Checksum") {
			t.Errorf("Trailer field %q, want X-Checksum", v)
		}
		for _, f := range send[:len(send)-1] {
			if v := req.field(req.trailer, f[0]); v != nil {
				t.Errorf("trailer %s: %q relayed", f[0], v)
			}
		}
		if v := req.field(req.head, "X-Real-IP"); len(v) != 1 || v[0] != "127.0.0.1" {
			t.Errorf("X-Real-IP in the header section %q", v)
		}
	})
}

// TestRequestIDNotHopByHop: with request_id, the X-Request-Id Arka sets
// on a request (a trusted proxy's valid one, or a new one) reaches the
// upstream and the FastCGI script even when the client's Connection field
// names it: RFC 9110 section 7.6.1 removes the fields the sender
// nominated, and this one is Arka's. Without request_id the client's
// field is its own, and its Connection field removes it. HTTP/1.1 and
// TLS; HTTP/2 has no Connection field (RFC 9113 section 8.2.2).
func TestRequestIDNotHopByHop(t *testing.T) {
	up, got := captureUpstream(t)
	root := www(t, t.TempDir(), "www", "static page")
	var php string
	if _, err := fpmtest.Binary(); err == nil {
		fpm := fpmtest.Start(t, fpmtest.Config{MaxChildren: 2})
		fpmtest.WriteFiles(t, root, map[string]string{"id.php": `<?php echo $_SERVER["HTTP_X_REQUEST_ID"] ?? "none";`})
		php = `,
  { path = "/", handler = { type = "fastcgi", address = "` + fpm.Address + `", root = "` + root + `" } }`
	} else {
		t.Logf("no PHP route: %v", err)
	}
	site := func(name, reqID string) string {
		return `server_names = ["` + name + `"]
listen = ["{{HTTP}}"]
tls = { listen = ["{{HTTPS}}"] }
request_id = ` + reqID + `
routes = [{ path = "/p/", handler = { type = "proxy", upstreams = ["` + up + `"] } }` + php + `]
`
	}
	// The client is a trusted proxy on id.test, whose valid id is kept.
	e := servertest.Start(t, "default = true\ntrusted_proxies = [\"127.0.0.1\"]\n"+site("id.test", "true"), site("noid.test", "false"))
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		if c.Name == "h2" {
			return
		}
		for _, sent := range []string{"", "client-id-1"} {
			hdr := []string{"Host: id.test", "Connection: X-Request-Id"}
			if sent != "" {
				hdr = append(hdr, "X-Request-Id: "+sent)
			}
			resp, _ := c.Get(t, "/p/e", hdr...)
			id := resp.Header.Get("X-Request-Id")
			if id == "" || sent != "" && id != sent {
				t.Fatalf("response X-Request-Id %q (sent %q)", id, sent)
			}
			req := receive(t, got)
			if v := req.field(req.head, "X-Request-Id"); len(v) != 1 || v[0] != id {
				t.Errorf("sent %q: upstream got X-Request-Id %q, want %q", sent, v, id)
			}
			if php == "" {
				continue
			}
			resp, body := c.Get(t, "/id.php", hdr...)
			if id := resp.Header.Get("X-Request-Id"); string(body) != id {
				t.Errorf("sent %q: HTTP_X_REQUEST_ID %q, want %q", sent, body, id)
			}
		}
		// Without request_id the field is the client's own.
		c.Get(t, "/p/e", "Host: noid.test", "Connection: X-Request-Id", "X-Request-Id: client-id-2")
		req := receive(t, got)
		if v := req.field(req.head, "X-Request-Id"); v != nil {
			t.Errorf("no request_id: upstream got the client's X-Request-Id %q, which its Connection named", v)
		}
	})
}
