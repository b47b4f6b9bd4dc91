package server_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
)

// TestClientGoneHalfClose: a client that closes its sending side while a
// proxied request waits for the upstream (a TCP FIN; over TLS a
// close_notify alert, RFC 8446 section 6.1) has left, as nginx also
// judges: Arka logs 499 and writes nothing more on the half-open
// connection, over HTTP/1.1 and HTTP/1.1 over TLS, for GET and HEAD.
//
// This is TestClientGone499's rare failure made certain: Go's client,
// cancelled, sends close_notify and then closes its socket; a default
// 200 that Arka wrote in between (the handler returned with nothing
// written once the client had left) could be read and returned as the
// answer to a request already given up.
func TestClientGoneHalfClose(t *testing.T) {
	arrived := make(chan struct{}, 1)
	released := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-released:
		case <-time.After(5 * time.Second):
		}
	}))
	defer close(released)
	t.Cleanup(up.Close)
	logPath := filepath.Join(t.TempDir(), "access.log")
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[log]
enabled = true
path = "`+logPath+`"
format = "json"
[[routes]]
path = "/up/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
`)
	type halfCloser interface {
		net.Conn
		CloseWrite() error
	}
	dials := []struct {
		name string
		dial func() (halfCloser, error)
	}{
		{"h1", func() (halfCloser, error) {
			c, err := net.Dial("tcp", e.HTTP)
			if err != nil {
				return nil, err
			}
			return c.(*net.TCPConn), nil
		}},
		{"h1+tls", func() (halfCloser, error) {
			return tls.Dial("tcp", e.HTTPS, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		}},
	}
	want := 0
	for _, d := range dials {
		for _, method := range []string{"GET", "HEAD"} {
			c, err := d.dial()
			if err != nil {
				t.Fatalf("%s: %v", d.name, err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, method+" /up/slow HTTP/1.1\r\nHost: x\r\n\r\n")
			select {
			case <-arrived:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s %s: the request did not reach the upstream", d.name, method)
			}
			if err := c.CloseWrite(); err != nil {
				t.Fatalf("%s: CloseWrite: %v", d.name, err)
			}
			b, _ := io.ReadAll(c) // until Arka closes (or the deadline)
			c.Close()
			if len(b) > 0 {
				t.Errorf("%s %s: after the client left, Arka wrote %q", d.name, method, b)
			}
			want++
		}
	}
	wantLogged(t, flushedLog(t, e, logPath, want), 499)
}

// wantLogged checks that each access-log line (JSON) has status.
func wantLogged(t *testing.T, lines []string, status int) {
	t.Helper()
	for _, l := range lines {
		var m struct{ Status int }
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if m.Status != status {
			t.Errorf("logged %d, want %d: %s", m.Status, status, l)
		}
	}
}
