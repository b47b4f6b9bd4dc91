package server_test

import (
	"bufio"
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

// cutBody is what the broken upstreams send of their body before they
// stop: the first part, in the write that carries the head.
var cutBody = strings.Repeat("<p>0123456789abcdef</p>\n", 3000) // 72000 bytes

// brokenUpstream answers each request by path: "/cl-*" declares a
// Content-Length longer than what it sends, "/chunked-*" sends chunks
// without the last one; "*-close" then closes the connection after a
// pause, "*-reset" resets it (RST); "/small-*" sends only 10 bytes of
// the body. "/nohead" closes before sending anything, "/resethead" resets
// the connection then, "/halfhead" closes in the middle of the head.
func brokenUpstream(t *testing.T) string {
	return rawUpstream(t, func(c net.Conn, requestLine string) {
		path := strings.Fields(requestLine)[1]
		body := cutBody
		if strings.HasPrefix(path, "/small-") {
			body = cutBody[:10]
		}
		head := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
		switch {
		case path == "/nohead":
			return
		case path == "/resethead":
			c.(*net.TCPConn).SetLinger(0)
			return
		case path == "/halfhead":
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Ty")
			return
		case strings.Contains(path, "cl-"):
			io.WriteString(c, head+"Content-Length: "+strconv.Itoa(2*len(body))+"\r\n\r\n"+body)
		case strings.Contains(path, "chunked-"):
			io.WriteString(c, head+"Transfer-Encoding: chunked\r\n\r\n"+strconv.FormatInt(int64(len(body)), 16)+"\r\n"+body+"\r\n")
		}
		time.Sleep(200 * time.Millisecond)
		if strings.HasSuffix(path, "-reset") {
			c.(*net.TCPConn).SetLinger(0)
		}
	})
}

// rawUpstream is a hand-written HTTP/1.1 upstream on 127.0.0.1 for
// answers no well-behaved server gives: it reads each connection's
// request head (up to 10 s), hands the connection and the request line to
// answer, and closes the connection when answer returns. It stops with
// the test; the result is its "host:port".
func rawUpstream(t *testing.T, answer func(c net.Conn, requestLine string)) string {
	t.Helper()
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
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				for {
					l, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if l == "\r\n" {
						break
					}
				}
				answer(c, line)
			}()
		}
	}()
	return ln.Addr().String()
}

// checkCut asserts that a response whose body broke off after its head
// was sent reads as cut short, never as a complete one: over HTTP/1.1 the
// connection closes before the declared length or the last chunk, over
// HTTP/2 the stream is reset with INTERNAL_ERROR (RFC 9112 section 8,
// RFC 9113 section 8.1). What did arrive is a prefix of what was sent.
func checkCut(t *testing.T, c *servertest.Client, path, acceptEncoding, sent string) {
	t.Helper()
	req, _ := http.NewRequest("GET", c.Base+path, nil)
	req.Header.Set("Accept-Encoding", acceptEncoding)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Errorf("%s (Accept-Encoding %s): no head: %v", path, acceptEncoding, err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("%s (Accept-Encoding %s): status %d, want the upstream's 200 cut short", path, acceptEncoding, resp.StatusCode)
		return
	}
	if err == nil {
		t.Errorf("%s (Accept-Encoding %s): a cut response read as complete: %d bytes, Content-Length %d, %v",
			path, acceptEncoding, len(body), resp.ContentLength, resp.Header)
		return
	}
	if c.Name == "h2" && !strings.Contains(err.Error(), "INTERNAL_ERROR") {
		t.Errorf("%s (Accept-Encoding %s): HTTP/2 stream ended with %v, want RST_STREAM INTERNAL_ERROR", path, acceptEncoding, err)
	}
	if resp.Header.Get("Content-Encoding") == "" && !strings.HasPrefix(sent, string(body)) {
		t.Errorf("%s (Accept-Encoding %s): the %d bytes received are not what the upstream sent", path, acceptEncoding, len(body))
	}
}

// An upstream that stops in the middle of the body, after a pause (so the
// head has reached the client), by closing or resetting its connection,
// with a Content-Length or chunked body: the client sees the response
// cut short, with and without content coding, the error log says so, and
// an upstream that fails before its head is complete is answered 502.
func TestProxyUpstreamCutMidBody(t *testing.T) {
	up := brokenUpstream(t)
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "proxy", upstreams = ["`+up+`"] }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, framing := range []string{"cl", "chunked", "small-cl", "small-chunked"} {
			sent := cutBody
			if strings.HasPrefix(framing, "small-") {
				sent = cutBody[:10]
			}
			for _, end := range []string{"close", "reset"} {
				for _, ae := range []string{"identity", "gzip"} {
					checkCut(t, c, "/"+framing+"-"+end, ae, sent)
				}
			}
		}
		for _, path := range []string{"/nohead", "/resethead", "/halfhead"} {
			resp, body := c.Get(t, path)
			if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(body), "Content-Ty") {
				t.Errorf("%s: %d %q, want 502", path, resp.StatusCode, body)
			}
		}
	})
	if log := e.Log(); !strings.Contains(log, "upstream failed") || !strings.Contains(log, "cut short") {
		t.Errorf("error log does not say the upstream cut the body short:\n%s", log)
	}
}

// php-fpm's worker dying in the middle of a long answer, after a pause:
// the client sees the response cut short and the error log says why;
// dying before any output is a 502.
func TestPHPWorkerDiesMidBody(t *testing.T) {
	fpm := fpmtest.Start(t, fpmtest.Config{MaxChildren: 2})
	root := t.TempDir()
	fpmtest.WriteFiles(t, root, map[string]string{
		"die.php": `<?php
header('Content-Type: text/html');
echo str_repeat("<p>0123456789abcdef</p>\n", 3000);
flush();
usleep(200000);
exec("kill -9 " . getmypid());
`,
		"early.php": `<?php exec("kill -9 " . getmypid());`,
	})
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "fastcgi", address = "`+fpm.Address+`", root = "`+root+`" }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, ae := range []string{"identity", "gzip"} {
			checkCut(t, c, "/die.php", ae, cutBody)
		}
		resp, _ := c.Get(t, "/early.php")
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("worker died before answering: %d, want 502", resp.StatusCode)
		}
	})
	if log := e.Log(); !strings.Contains(log, "fastcgi:") || !strings.Contains(log, "die.php") {
		t.Errorf("error log does not say the script's answer broke off:\n%s", log)
	}
}
