package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
	"github.com/coder/websocket"
)

// The handler inside the real server: dispatcher path normalization,
// request ids, the recorder (Hijack through http.ResponseController),
// content coding, and the status page's upstream figures.
func TestInsideTheServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		typ, msg, err := c.Read(r.Context())
		if err == nil {
			c.Write(r.Context(), typ, msg)
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s id=%s", r.RequestURI, r.Header.Get("X-Request-Id"))
	})
	up := &http.Server{Handler: mux}
	go up.Serve(ln)
	defer up.Close()

	e := servertest.Start(t, `
listen = ["{{HTTP}}"]
request_id = true
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/proxy/"
handler = { type = "proxy", upstreams = ["`+ln.Addr().String()+`"], strip_prefix = true }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for in, want := range map[string]string{
			"/proxy/x%2Fy?q=%41":    "/x%2Fy?q=%41",    // untouched path: sent byte for byte
			"/proxy/a/../b%2Fc":     "/b%2Fc",          // normalized; kept segments as the client encoded them
			"/proxy/items/a%2F%2Fb": "/items/a%2F%2Fb", // encoded slashes are data, never merged
			"/proxy/./%7e%2fx//y/":  "/%7e%2fx/y/",
		} {
			resp, body := c.Get(t, in)
			got, id, _ := strings.Cut(string(body), " id=")
			if resp.StatusCode != 200 || got != want {
				t.Errorf("%s -> %d %q, want %q", in, resp.StatusCode, got, want)
			}
			if id == "" || id != resp.Header.Get("X-Request-Id") {
				t.Errorf("request id: upstream saw %q, client got %q", id, resp.Header.Get("X-Request-Id"))
			}
		}
		if c.Name == "h2" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, strings.Replace(c.Base, "http", "ws", 1)+"/proxy/ws", &websocket.DialOptions{HTTPClient: c.HTTP})
		if err != nil {
			t.Fatalf("websocket through the server: %v", err)
		}
		defer ws.CloseNow()
		ws.Write(ctx, websocket.MessageText, []byte("ping"))
		if _, got, err := ws.Read(ctx); err != nil || string(got) != "ping" {
			t.Fatalf("echo %q %v", got, err)
		}
	})
	snap := e.Server.Snapshot()
	if len(snap.Upstreams) != 1 || snap.Upstreams[0].Address != ln.Addr().String() || !snap.Upstreams[0].Healthy ||
		snap.Upstreams[0].Requests < 6 || snap.Upstreams[0].IdleConns == 0 {
		t.Errorf("status snapshot upstreams: %+v", snap.Upstreams)
	}
}

// A request body the client framed badly gets 400, one over max_body_size
// 413; neither reaches the upstream as a complete request.
func TestClientBodyErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "upstream read %d %v", n, err)
	})}
	go up.Serve(ln)
	defer up.Close()
	e := servertest.Start(t, `
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[limits]
max_body_size = "64KiB"
[[routes]]
path = "/"
handler = { type = "proxy", upstreams = ["`+ln.Addr().String()+`"] }
`)
	raw := func(req string) string {
		c, err := net.Dial("tcp", e.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte(req))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(c)
		line, _, _ := strings.Cut(string(b), "\r\n")
		return line
	}
	if got := raw("POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"); got != "HTTP/1.1 400 Bad Request" {
		t.Errorf("bad chunk: %q", got)
	}
	big := strings.Repeat("x", 200<<10)
	chunked := fmt.Sprintf("POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(big), big)
	if got := raw(chunked); !strings.HasPrefix(got, "HTTP/1.1 413 ") {
		t.Errorf("chunked body over the limit: %q", got)
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		req, _ := http.NewRequest("POST", c.Base+"/u", io.NopCloser(strings.NewReader(big))) // unknown length
		resp, err := c.HTTP.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Errorf("%s: body of unknown length over the limit: %d", c.Name, resp.StatusCode)
		}
	})
}
