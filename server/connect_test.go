package server_test

//lint:file-ignore SA1019 x/net's HTTP/2 Transport is the client that sends extended CONNECT (net/http's refuses ":protocol").

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
	"golang.org/x/net/http2"
)

// TestConnectRefused: Arka is an origin server and a reverse proxy, not a
// forward proxy. A plain CONNECT (RFC 9112 section 3.2.3, RFC 9113
// section 8.5) is answered 405 with Allow (RFC 9110 sections 9.3.6 and
// 15.5.6) whatever the site's route, over HTTP/1.1, TLS and HTTP/2; the
// connection goes on serving requests (a CONNECT answered with no 2xx
// leaves an HTTP/1.1 connection in HTTP). An extended CONNECT (RFC 8441)
// opens a tunnel on a proxy route only; any other route answers 405.
func TestConnectRefused(t *testing.T) {
	// A WebSocket upstream that, once switched, echoes what it gets.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "not a socket", http.StatusBadRequest)
			return
		}
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
			base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
		brw.Flush()
		io.Copy(c, brw)
	}))
	defer up.Close()

	e, hosts := everyRouteKind(t, up.Listener.Addr().String())

	refused := func(t *testing.T, what string, resp *http.Response, body []byte) {
		t.Helper()
		allow := resp.Header.Get("Allow")
		if resp.StatusCode != http.StatusMethodNotAllowed || allow == "" || strings.Contains(allow, "CONNECT") {
			t.Errorf("%s: %d Allow %q %q, want 405 with Allow", what, resp.StatusCode, allow, body)
		}
	}
	// The Allow field of an extended CONNECT's 405 names the route's
	// methods (RFC 9110 section 15.5.6).
	allows := map[string]string{"static.test": "GET, HEAD, OPTIONS", "status.test": "GET, HEAD"}

	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, h := range hosts {
			// Go's clients send the authority-form (HTTP/1.1) and only
			// :method and :authority (HTTP/2) for a CONNECT without a path.
			resp, body := c.Do(t, http.MethodConnect, "", "Host: "+h+":443")
			refused(t, "CONNECT "+h+":443", resp, body)
		}
		if c.Name == "h2" {
			// The connection serves the next stream.
			reused := false
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
			})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/", nil)
			req.Host = "respond.test"
			resp, err := c.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok\n" || !reused {
				t.Errorf("GET after CONNECT: %d %q, same connection %v", resp.StatusCode, body, reused)
			}
			return
		}
		// HTTP/1.1: the request after a refused CONNECT on the same
		// connection, sent at once (before the answer), is served as a
		// request, not carried as tunnel bytes.
		nc := dialHTTP1(t, e, c)
		defer nc.Close()
		io.WriteString(nc, "CONNECT php.test:443 HTTP/1.1\r\nHost: php.test:443\r\n\r\n"+
			"GET / HTTP/1.1\r\nHost: respond.test\r\n\r\n")
		br := bufio.NewReader(nc)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		refused(t, "pipelined CONNECT", resp, body)
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the request after CONNECT: %v", err)
		}
		body, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "ok\n" {
			t.Errorf("GET after CONNECT: %d %q", resp.StatusCode, body)
		}
	})

	// Extended CONNECT (HTTP/2 only): a tunnel on the proxy route, 405
	// elsewhere.
	tr := &http2.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	for _, h := range hosts {
		pr, pw := io.Pipe()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodConnect, "https://"+e.HTTPS+"/", pr)
		req.Host = h
		req.Header.Set(":protocol", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("extended CONNECT to %s: %v", h, err)
		}
		if h == "proxy.test" {
			if resp.StatusCode != 200 {
				t.Errorf("extended CONNECT to the proxy route: %d", resp.StatusCode)
			} else {
				io.WriteString(pw, "through the tunnel")
				got := make([]byte, len("through the tunnel"))
				if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != "through the tunnel" {
					t.Errorf("tunnel echo: %q, %v", got, err)
				}
			}
		} else {
			body, _ := io.ReadAll(resp.Body)
			refused(t, "extended CONNECT to "+h, resp, body)
			if a := allows[h]; a != "" && resp.Header.Get("Allow") != a {
				t.Errorf("extended CONNECT to %s: Allow %q, want %q", h, resp.Header.Get("Allow"), a)
			}
		}
		pw.Close()
		resp.Body.Close()
		cancel()
	}
}
