package server_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
)

// TestPlainHTTPOnTLSPort: plain HTTP sent to the HTTPS port gets a 400
// saying so, with the Date every response has (RFC 9110 section 6.6.1) and
// its length, and the connection closed; HTTPS on the port is served.
func TestPlainHTTPOnTLSPort(t *testing.T) {
	e := servertest.Start(t, `listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "respond", body = "ok" }
`)
	c, err := net.Dial("tcp", e.HTTPS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%q, %v (want the answer and the connection closed)", b, err)
	}
	head, body, _ := strings.Cut(string(b), "\r\n\r\n")
	if !strings.HasPrefix(head, "HTTP/1.") || !strings.Contains(head, " 400 ") || !strings.Contains(body, "HTTPS") {
		t.Errorf("answer %q", b)
	}
	var date string
	for _, l := range strings.Split(head, "\r\n") {
		if v, ok := strings.CutPrefix(l, "Date: "); ok {
			date = v
		}
	}
	if d, err := http.ParseTime(date); err != nil || time.Since(d) > time.Minute {
		t.Errorf("Date %q: %v", date, err)
	}
	if !strings.Contains(head, "Content-Length: ") {
		t.Errorf("no Content-Length: %q", head)
	}
}
