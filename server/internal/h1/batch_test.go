package h1_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/h1"
	"github.com/arkaweb/arka/server/internal/wire"
	"github.com/arkaweb/arka/tests/testkit"
)

// socketWrites counts the writes that reach the socket.
type socketWrites struct {
	net.Conn
	writes atomic.Int64
}

func (c *socketWrites) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestTLSBodyOneWrite: over TLS with a wire.BatchConn under the
// connection (as the server installs it), a response whose body does not
// fit the write buffer after its head (a 25 KB page: three TLS records)
// reaches the socket in one write, and arrives whole; a body larger than
// the batch limit still arrives whole.
func TestTLSBodyOneWrite(t *testing.T) {
	page := strings.Repeat("<tr><td>a row of a page made per request</td></tr>\n", 500) // 25.5 KB
	big := strings.Repeat("x", 200<<10)
	srv := &h1.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := page
		if r.URL.Path == "/big" {
			body = big
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		io.WriteString(w, body)
	})}
	ln := testkit.Listen(t)
	_, _, cert := testkit.Cert(t, "localhost")
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	var cc *socketWrites
	var wg sync.WaitGroup
	ready := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			close(ready)
			return
		}
		cc = &socketWrites{Conn: c}
		tc := tls.Server(&wire.BatchConn{Conn: cc}, cfg)
		if err := tc.Handshake(); err != nil {
			tc.Close()
			close(ready)
			return
		}
		close(ready)
		st := tc.ConnectionState()
		srv.ServeConn(tc, &st)
	}()
	defer func() {
		ln.Close()
		srv.Close()
		wg.Wait()
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	<-ready
	if cc == nil {
		t.Fatal("server handshake failed")
	}
	br := bufio.NewReader(c)
	get := func(path, want string) int64 {
		t.Helper()
		before := cc.writes.Load()
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != want {
			t.Fatalf("%s: %d bytes, %v; want %d", path, len(b), err, len(want))
		}
		return cc.writes.Load() - before
	}
	get("/", page) // the session ticket after the handshake may go out with the first
	if n := get("/", page); n != 1 {
		t.Errorf("a 25 KB page reached the socket in %d writes, want 1", n)
	}
	get("/big", big)
	if n := get("/", page); n != 1 {
		t.Errorf("after a large body: %d writes, want 1", n)
	}
}
