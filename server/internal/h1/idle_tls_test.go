package h1_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/enginetest"
)

// TestTLSIdleKeepAlive: over TLS an idle keep-alive connection gives its
// read buffer back and reads on from the byte that ended the wait
// (waitRequest). Pipelined requests, a request after an idle pause, and a
// request whose first byte comes alone all get their answers, in order,
// on one connection.
func TestTLSIdleKeepAlive(t *testing.T) {
	e := enginetest.Serve(t, echo)
	c, err := tls.Dial("tcp", e.HTTPS, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	read := func(want string) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", want, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(b), want) {
			t.Errorf("got %q, want %q...", b, want)
		}
	}
	// Three pipelined requests in one TLS record.
	c.Write([]byte("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n"))
	read("GET /a ")
	read("GET /b ")
	read("GET /c ")
	// After an idle pause.
	time.Sleep(100 * time.Millisecond)
	c.Write([]byte("GET /d HTTP/1.1\r\nHost: x\r\n\r\n"))
	read("GET /d ")
	// The first byte alone in its record, the rest later.
	c.Write([]byte("G"))
	time.Sleep(50 * time.Millisecond)
	c.Write([]byte("ET /e HTTP/1.1\r\nHost: x\r\n\r\n"))
	read("GET /e ")
	// A body after the pause, then the connection closes cleanly.
	time.Sleep(50 * time.Millisecond)
	c.Write([]byte("POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"))
	read("POST /f ")
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after Connection: close: %v, want EOF", err)
	}
}
