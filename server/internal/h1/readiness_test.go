package h1_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/enginetest"
)

// TestRequestWhileHandling: a request that reaches the socket while the
// previous one is still being handled, after the engine read that one
// (so it is not in the read buffer), is answered at once, over plain TCP
// and over TLS. It guards the engine's read strategy: waiting for
// readability before reading (to spare the read that fails with EAGAIN)
// would lose this request's readiness, which Go's netpoller forgets when
// a wait begins, and the connection would hang until its idle timeout.
func TestRequestWhileHandling(t *testing.T) {
	e := enginetest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(150 * time.Millisecond)
		}
		io.WriteString(w, r.URL.Path)
	}))
	dial := map[string]func() (net.Conn, error){
		"tcp": func() (net.Conn, error) { return net.Dial("tcp", e.HTTP) },
		"tls": func() (net.Conn, error) {
			return tls.Dial("tcp", e.HTTPS, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		},
	}
	for name, d := range dial {
		t.Run(name, func(t *testing.T) {
			c, err := d()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Well under the idle and header timeouts: a lost readiness
			// shows as a timeout here.
			c.SetDeadline(time.Now().Add(3 * time.Second))
			br := bufio.NewReader(c)
			for i := 0; i < 3; i++ {
				if _, err := c.Write([]byte("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond) // the engine has read /slow and runs its handler
				if _, err := c.Write([]byte("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{"/slow", "/next"} {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatalf("round %d, %s: %v", i, want, err)
					}
					b, _ := io.ReadAll(resp.Body)
					if !strings.HasPrefix(string(b), want) {
						t.Fatalf("round %d: got %q, want %q", i, b, want)
					}
				}
			}
		})
	}
}
