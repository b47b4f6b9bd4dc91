package server_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/servertest"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// dialFrom connects from a given loopback address (127.0.0.x), so that one
// test plays several clients.
func dialFrom(t *testing.T, from, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// open counts the connections of cs the server has not closed.
func open(cs []net.Conn) int {
	n := 0
	for _, c := range cs {
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && isTimeout(err) {
			n++
		}
	}
	return n
}

// TestSlowlorisAtLimit: with every slot held by connections that drip a
// request head (plain HTTP) or hold an HTTP/2 connection with no running
// handler (a stream never ended, after its answer), a new client is still
// served: those connections are closed first to make room.
func TestSlowlorisAtLimit(t *testing.T) {
	dir := t.TempDir()
	const limit = 8
	e := servertest.StartWith(t, server.Options{MaxConns: limit}, siteFor(`"a.example"`, www(t, dir, "a", "ok"), true))
	// The limit is per listen address: fill both.
	var held []net.Conn
	for range limit {
		c, err := dialFrom(t, "127.0.0.2", e.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET / HTTP/1.1\r\nHost: a.exa")) // and never the rest
		held = append(held, c)
	}
	for range limit {
		c, err := dialFrom(t, "127.0.0.2", e.HTTPS)
		if err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		tc.Write([]byte(http2.ClientPreface))
		fr := http2.NewFramer(tc, tc)
		fr.WriteSettings()
		held = append(held, tc)
	}
	time.Sleep(100 * time.Millisecond) // every connection in its engine
	for _, cl := range e.Clients() {
		if cl.Name == "h1+tls" {
			continue // h1 and h2 are enough to take two slots
		}
		if resp, body := cl.Get(t, "/", "Host: a.example"); resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("%s client at the limit: %d %q", cl.Name, resp.StatusCode, body)
		}
	}
	if n := open(held); n > 2*limit-2 {
		t.Errorf("%d of %d held connections still open; want room made for 2 clients", n, len(held))
	}
}

// TestPerAddressShare: one client address cannot take more than its share
// of the connection limit (a quarter, at least 64): its extra connections
// cost it its own idle ones or are refused, and another address is served.
func TestPerAddressShare(t *testing.T) {
	dir := t.TempDir()
	const limit = 256
	e := servertest.StartWith(t, server.Options{MaxConns: limit}, siteFor(`"a.example"`, www(t, dir, "a", "ok"), true))
	var held []net.Conn
	for range 100 {
		c, err := dialFrom(t, "127.0.0.3", e.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET / HTTP/1.1\r\n"))
		held = append(held, c)
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if n := open(held); n > 64 || n < 32 {
		t.Errorf("one address holds %d connections; want its share, 64", n)
	}
	h1 := e.Clients()[0]
	if resp, body := h1.Get(t, "/", "Host: a.example"); resp.StatusCode != 200 || !strings.HasPrefix(string(body), "ok") {
		t.Fatalf("another address: %d %q", resp.StatusCode, body)
	}
}

// TestStarvedHTTP2AtLimit: HTTP/2 connections whose only streams are
// uploads that never send their body hold their slots without progress;
// at the limit they are closed to make room for a new client.
func TestStarvedHTTP2AtLimit(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up") }))
	defer up.Close()
	const limit = 4
	e := servertest.StartWith(t, server.Options{MaxConns: limit}, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "proxy", upstreams = ["`+strings.TrimPrefix(up.URL, "http://")+`"] }
`)
	var held []net.Conn
	for range limit {
		c, err := dialFrom(t, "127.0.0.2", e.HTTPS)
		if err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		tc.Write([]byte(http2.ClientPreface))
		fr := http2.NewFramer(tc, tc)
		fr.WriteSettings()
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/up"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: true})
		held = append(held, tc)
	}
	time.Sleep(200 * time.Millisecond) // every handler waits for its body
	h2c := e.Clients()[2]
	if resp, body := h2c.Get(t, "/x"); resp.StatusCode != 200 || string(body) != "up" {
		t.Fatalf("new client at the limit: %d %q", resp.StatusCode, body)
	}
	if n := open(held); n > limit-1 {
		t.Errorf("%d of %d starved connections still open", n, limit)
	}
}

// TestEvictOnePerConnection: at the limit, a new connection closes one
// idle keep-alive connection to take its slot, not a batch of them (each
// closed is a client that must reconnect).
func TestEvictOnePerConnection(t *testing.T) {
	dir := t.TempDir()
	const limit = 8
	e := servertest.StartWith(t, server.Options{MaxConns: limit}, siteFor(`"a.example"`, www(t, dir, "a", "ok"), true))
	var held []net.Conn
	for range limit {
		c, err := dialFrom(t, "127.0.0.2", e.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		// One whole request, then the connection stays idle (keep-alive).
		c.Write([]byte("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 4<<10)
		if n, err := c.Read(buf); err != nil || !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200 ")) {
			t.Fatalf("held connection: %q %v", buf[:n], err)
		}
		held = append(held, c)
	}
	time.Sleep(50 * time.Millisecond)
	if resp, body := e.Clients()[0].Get(t, "/", "Host: a.example"); resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("new client at the limit: %d %q", resp.StatusCode, body)
	}
	time.Sleep(50 * time.Millisecond)
	if n := open(held); n != limit-1 {
		t.Errorf("%d of %d idle connections still open; want one closed for the new client", n, limit)
	}
}
