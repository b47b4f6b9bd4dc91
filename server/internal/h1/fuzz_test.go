package h1

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/enginetest/memconn"
	"github.com/arkaweb/arka/server/internal/limits"
)

// FuzzConn feeds arbitrary bytes to a connection: the engine must answer
// with well-formed responses or close, never panic or hang.
func FuzzConn(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /p?q HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX: y\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.0\r\n\r\n",
		"GET http://h:1/a%2Fb HTTP/1.1\r\nHost: y\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz",
		"\r\nGET * HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Path", r.URL.Path)
		io.WriteString(w, r.Method)
	}), Limits: limits.Limits{HeaderBytes: 4096, ReadHeader: 200 * time.Millisecond, Idle: 200 * time.Millisecond}}
	f.Fuzz(func(t *testing.T, in []byte) {
		// The client's bytes, then its end of stream: no timer decides
		// when the input is over, so each input costs microseconds.
		c := &memconn.Conn{In: bytes.NewReader(in)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.ServeConn(c, nil)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("connection not finished for %q", in)
		}
		out := c.Out()
		if len(out) > 0 && !bytes.HasPrefix(out, []byte("HTTP/1.1 ")) {
			t.Fatalf("response does not start with a status line: %q", out)
		}
	})
}
