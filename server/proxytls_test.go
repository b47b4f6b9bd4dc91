package server_test

import (
	"bufio"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/servertest"
)

// A proxy to a TLS upstream with a self-signed certificate: refused
// without its CA, served with it (and with the name it was issued for),
// connections kept alive.
func TestProxyHTTPSUpstream(t *testing.T) {
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "over tls: "+r.Host)
	}))
	up.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	up.StartTLS()
	defer up.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "upstream-ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o644)
	addr := up.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/untrusted/"
handler = { type = "proxy", upstreams = ["https://`+addr+`"] }
[[routes]]
path = "/trusted/"
handler = { type = "proxy", upstreams = ["https://`+addr+`"], tls_ca = "`+ca+`" }
[[routes]]
path = "/byname/"
handler = { type = "proxy", upstreams = ["https://localhost:`+port+`"], tls_ca = "`+ca+`", tls_server_name = "example.com" }
[[routes]]
path = "/wrongname/"
handler = { type = "proxy", upstreams = ["https://`+addr+`"], tls_ca = "`+ca+`", tls_server_name = "other.example" }
[[routes]]
path = "/insecure/"
handler = { type = "proxy", upstreams = ["https://`+addr+`"], tls_insecure_skip_verify = true }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, body := c.Get(t, "/untrusted/x")
		if resp.StatusCode != 502 || strings.Contains(string(body), "over tls") {
			t.Errorf("without the CA: %d %q", resp.StatusCode, body)
		}
		resp, body = c.Get(t, "/wrongname/x")
		if resp.StatusCode != 502 {
			t.Errorf("wrong server name: %d %q", resp.StatusCode, body)
		}
		before := conns.Load()
		for range 3 {
			resp, body = c.Get(t, "/trusted/x", "Host: site.example")
			if resp.StatusCode != 200 || string(body) != "over tls: site.example" {
				t.Errorf("with the CA: %d %q", resp.StatusCode, body)
			}
		}
		if n := conns.Load() - before; n > 1 {
			t.Errorf("%d new upstream connections for 3 sequential requests: not kept alive", n)
		}
		resp, body = c.Get(t, "/byname/x")
		if resp.StatusCode != 200 {
			t.Errorf("tls_server_name: %d %q", resp.StatusCode, body)
		}
		resp, body = c.Get(t, "/insecure/x")
		if resp.StatusCode != 200 {
			t.Errorf("tls_insecure_skip_verify: %d %q", resp.StatusCode, body)
		}
	})
	if log := e.Log(); !strings.Contains(log, "certificate") {
		t.Errorf("the refused handshake is not logged with its cause:\n%s", log)
	}
	sites, err := config.LoadFiles([]string{filepath.Join(e.Dir, "site0.toml")})
	if err != nil {
		t.Fatal(err)
	}
	w := config.Warnings(sites)
	if len(w) != 1 || !strings.Contains(w[0], "site0.toml:19:") || !strings.Contains(w[0], "tls_insecure_skip_verify") {
		t.Errorf("warnings: %q", w)
	}
}

// Only WebSocket upgrades reach an upstream: "Upgrade: h2c" (and any other
// protocol) is removed and the request proxied as a plain one.
func TestProxyDropsNonWebSocketUpgrades(t *testing.T) {
	got := make(chan http.Header, 10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, "plain answer")
	}))
	defer up.Close()
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
`)
	for _, proto := range []string{"h2c", "h2c, websocket", "TLS/1.0", "my-tunnel"} {
		nc, err := net.Dial("tcp", e.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(nc, "GET /x HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: "+proto+"\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		nc.Close()
		if resp.StatusCode != 200 || string(body) != "plain answer" {
			t.Errorf("Upgrade: %s: %d %q", proto, resp.StatusCode, body)
		}
		select {
		case h := <-got:
			if h.Get("Upgrade") != "" || h.Get("Http2-Settings") != "" || strings.Contains(strings.ToLower(h.Get("Connection")), "upgrade") {
				t.Errorf("Upgrade: %s reached the upstream: %v", proto, h)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Upgrade: %s: the upstream got nothing", proto)
		}
	}
}
