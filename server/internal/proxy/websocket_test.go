package proxy

//lint:file-ignore SA1019 x/net's HTTP/2 Transport is the client that sends extended CONNECT (net/http's refuses ":protocol").

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/coder/websocket"
	"golang.org/x/net/http2"
)

// wsEcho is a WebSocket echo upstream (coder/websocket, as a Go app
// behind Arka would use).
var wsEcho = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer c.CloseNow()
	for {
		typ, msg, err := c.Read(r.Context())
		if err != nil {
			return
		}
		if err := c.Write(r.Context(), typ, append([]byte("echo: "), msg...)); err != nil {
			return
		}
	}
})

func TestWebSocketEcho(t *testing.T) {
	up := startUpstream(t, wsEcho)
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, StripPrefix: true})
	for _, p := range []string{"h1", "h1tls"} {
		t.Run(p, func(t *testing.T) {
			// The content-coding middleware sits in front, as in the server.
			f := startFront(t, p, withCoding(h))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			url := strings.Replace(f.url("/proxy/ws"), "http", "ws", 1)
			c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: f.client})
			if err != nil {
				t.Fatalf("dial through the proxy: %v", err)
			}
			defer c.CloseNow()
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("status %d", resp.StatusCode)
			}
			for i := 0; i < 50; i++ {
				msg := fmt.Sprintf("message %d %s", i, strings.Repeat("x", i*100))
				if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
					t.Fatal(err)
				}
				_, got, err := c.Read(ctx)
				if err != nil || string(got) != "echo: "+msg {
					t.Fatalf("echo %d: %q, %v", i, got, err)
				}
			}
			if err := c.Close(websocket.StatusNormalClosure, "bye"); err != nil {
				t.Errorf("close handshake: %v", err)
			}
		})
	}
}

func TestWebSocketRefusedIsRelayed(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no sockets here", http.StatusForbidden)
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	for _, p := range []string{"h1", "h1tls"} {
		t.Run(p, func(t *testing.T) {
			f := startFront(t, p, h)
			_, resp, err := websocket.Dial(context.Background(), strings.Replace(f.url("/proxy/ws"), "http", "ws", 1), &websocket.DialOptions{HTTPClient: f.client})
			if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("want the upstream's 403, got %v, %v", resp, err)
			}
		})
	}
}

// TestWebSocketOverHTTP2 checks RFC 8441 extended CONNECT, which Arka's
// HTTP/2 engine announces (SETTINGS_ENABLE_CONNECT_PROTOCOL).
func TestWebSocketOverHTTP2(t *testing.T) {
	up := startUpstream(t, wsEcho)
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, StripPrefix: true})
	f := startFront(t, "h2", withCoding(h))
	// net/http's Transport refuses the ":protocol" field before it reaches
	// HTTP/2; x/net's HTTP/2 transport sends it (RFC 8441 section 4).
	tr := &http2.Transport{TLSClientConfig: f.client.Transport.(*http.Transport).TLSClientConfig.Clone()}
	defer tr.CloseIdleConnections()

	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodConnect, f.url("/proxy/ws"), pr)
	req.Header.Set(":protocol", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("extended CONNECT: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("status %d over HTTP/%d", resp.StatusCode, resp.ProtoMajor)
	}
	for i := 0; i < 5; i++ {
		msg := fmt.Sprintf("over h2 %d", i)
		if _, err := pw.Write(maskedTextFrame(msg)); err != nil {
			t.Fatal(err)
		}
		got, err := readFrame(resp.Body)
		if err != nil || got != "echo: "+msg {
			t.Fatalf("echo %d: %q, %v", i, got, err)
		}
	}
	pw.Close()
}

// maskedTextFrame encodes a short client-to-server text frame (RFC 6455
// section 5.2).
func maskedTextFrame(s string) []byte {
	mask := [4]byte{1, 2, 3, 4}
	b := []byte{0x81, 0x80 | byte(len(s)), mask[0], mask[1], mask[2], mask[3]}
	for i := 0; i < len(s); i++ {
		b = append(b, s[i]^mask[i%4])
	}
	return b
}

// readFrame reads one short unmasked server frame and returns its payload.
func readFrame(r io.Reader) (string, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", err
	}
	n := int(hdr[1] & 0x7f)
	if n >= 126 {
		return "", fmt.Errorf("frame too long for this test")
	}
	p := make([]byte, n)
	_, err := io.ReadFull(r, p)
	return string(p), err
}

// TestWebSocketOverHTTP2NotSwitched: an upstream that answers the
// upgrade without switching protocols opens no tunnel. Its refusal (403)
// reaches the client as an ordinary response that ends the stream; its
// 200, which to an extended CONNECT would say the tunnel is open
// (RFC 9110 section 9.3.6, RFC 8441 section 5) while the upstream speaks
// HTTP, becomes a 502, logged; so does a refusal cut short before any of
// it reached the client.
func TestWebSocketOverHTTP2NotSwitched(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/forbidden"):
			http.Error(w, "no sockets here", http.StatusForbidden)
		case strings.HasSuffix(r.URL.Path, "/cut"):
			// A refusal whose body ends before its Content-Length.
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 100\r\n\r\nno sock")
				c.Close()
			}
		default:
			io.WriteString(w, "a page, not a socket")
		}
	}))
	h, lb := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, StripPrefix: true})
	f := startFront(t, "h2", withCoding(h))
	tr := &http2.Transport{TLSClientConfig: f.client.Transport.(*http.Transport).TLSClientConfig.Clone()}
	defer tr.CloseIdleConnections()

	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/proxy/forbidden", http.StatusForbidden, "no sockets here\n"},
		{"/proxy/page", http.StatusBadGateway, "502 Bad Gateway"},
		{"/proxy/cut", http.StatusBadGateway, "502 Bad Gateway"},
	} {
		pr, pw := io.Pipe()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodConnect, f.url(tc.path), pr)
		req.Header.Set(":protocol", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: extended CONNECT: %v", tc.path, err)
		}
		// The stream ends with the response: the body is read to its end
		// although the client never closes its side.
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Errorf("%s: body: %v", tc.path, err)
		}
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s: %d %q, want %d with %q", tc.path, resp.StatusCode, body, tc.status, tc.body)
		}
		pw.Close()
		cancel()
	}
	if log := lb.String(); !strings.Contains(log, "status=502") || !strings.Contains(log, "200") {
		t.Errorf("the upstream's 200 is not logged as a failure:\n%s", log)
	}
}
