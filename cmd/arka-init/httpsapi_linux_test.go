package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// apiTestServer serves h with limits lim on 127.0.0.1, plain TCP (the
// limits are the same under TLS), and returns its address.
func apiTestServer(t *testing.T, h http.Handler, lim apiLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newAPIServer(h, lim)
	go srv.Serve(limitConns(ln, lim.MaxConns))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func closedWithin(t *testing.T, c net.Conn, d time.Duration) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

// TestAPIServerLimits: the HTTPS API (in PID 1) drops an idle keep-alive
// connection after IdleTimeout and an upload that stops moving after
// BodyIdle, lets a slow upload that keeps moving finish however long it
// takes, and holds at most MaxConns connections (the next waits).
func TestAPIServerLimits(t *testing.T) {
	lim := apiLimits{Idle: 300 * time.Millisecond, BodyIdle: 300 * time.Millisecond, HeaderTimeout: time.Second, MaxConns: 2}
	addr := apiTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			return
		}
		fmt.Fprintf(w, "got %d", n)
	}), lim)

	// An idle keep-alive connection after its answer.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !closedWithin(t, c, 3*time.Second) {
		t.Error("an idle keep-alive connection was kept past IdleTimeout")
	}

	// An upload that stops.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789")
	if !closedWithin(t, c2, 3*time.Second) {
		t.Error("a stalled upload was kept past BodyIdle")
	}

	// A slow upload that keeps moving, four times BodyIdle in all.
	pr, pw := io.Pipe()
	go func() {
		for range 12 {
			pw.Write([]byte("0123456789"))
			time.Sleep(100 * time.Millisecond)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", "http://"+addr+"/", pr)
	req.ContentLength = 120
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("slow upload: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "got 120" {
		t.Errorf("slow upload: %q", b)
	}
	http.DefaultClient.CloseIdleConnections()

	// The cap: two connections held, a third is not served until one
	// goes (limits long enough for the held ones not to time out).
	addr = apiTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}), apiLimits{Idle: 10 * time.Second, BodyIdle: 10 * time.Second, HeaderTimeout: 10 * time.Second, MaxConns: 2})
	var held []net.Conn
	for range 2 {
		h, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		fmt.Fprintf(h, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
		for range 2 { // keep it moving
			h.Write([]byte(strings.Repeat("x", 10)))
		}
		held = append(held, h)
	}
	time.Sleep(100 * time.Millisecond)
	third, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	fmt.Fprintf(third, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := third.Read(make([]byte, 1)); err == nil {
		t.Error("a third connection was served while two were held (MaxConns 2)")
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the third connection once one went: %v", err)
	}
	resp.Body.Close()
}

// TestLocalOnly: connections made to a local address the filter refuses
// (on the device: a public one, which gokrazy itself never binds) are
// closed at once; the others are served.
func TestLocalOnly(t *testing.T) {
	for _, keep := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := newAPIServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), httpsAPILimits)
		go srv.Serve(localOnly(ln, func(ip net.IP) bool { return keep && ip.IsLoopback() }))
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		srv.Close()
		if served := strings.HasPrefix(string(b), "HTTP/1.1 200 ") && strings.Contains(string(b), "ok"); served != keep {
			t.Errorf("keep %v: served %v (%q, %v)", keep, served, b, err)
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("keep %v: the connection was left open", keep)
		}
	}
}
