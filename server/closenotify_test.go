package server_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
)

// TestTLSConnectionCloseNotify: over TLS, a response to a request with
// Connection: close arrives whole and is followed by close_notify (the
// client reads io.EOF, not a bare TCP close), whether it fits the write
// buffer (the answer and the alert go out gathered in one write) or not
// (its last part is gathered with the alert). Two requests each, the
// second resuming the first's session.
func TestTLSConnectionCloseNotify(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "www")
	os.MkdirAll(root, 0o755)
	small := strings.Repeat("s", 1335)
	big := strings.Repeat("0123456789abcdef", 40<<10/16+7) // 40 KiB and more
	os.WriteFile(filepath.Join(root, "small.html"), []byte(small), 0o644)
	os.WriteFile(filepath.Join(root, "big.bin"), []byte(big), 0o644)
	e := servertest.Start(t, siteFor(`"localhost"`, root, true))
	cfg := &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", NextProtos: []string{"http/1.1"}, ClientSessionCache: tls.NewLRUClientSessionCache(1)}
	for i, tc := range []struct{ path, body string }{{"/small.html", small}, {"/big.bin", big}, {"/small.html", small}, {"/big.bin", big}} {
		raw, err := net.Dial("tcp", e.HTTPS)
		if err != nil {
			t.Fatal(err)
		}
		rec := &recordingConn{Conn: raw}
		c := tls.Client(rec, cfg)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET "+tc.path+" HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c) // nil at close_notify; io.ErrUnexpectedEOF without
		if err != nil {
			t.Errorf("%d %s: read: %v after %d bytes", i, tc.path, err, len(got))
		}
		head, body, _ := bytes.Cut(got, []byte("\r\n\r\n"))
		if !bytes.HasPrefix(head, []byte("HTTP/1.1 200 ")) || string(body) != tc.body {
			t.Errorf("%d %s: head %q, body %d bytes, want %d", i, tc.path, head, len(body), len(tc.body))
		}
		// The last record is close_notify: a 2-byte alert sealed in a
		// TLS 1.3 application_data record of 2+1+16 bytes.
		if last := lastRecord(rec.read.Bytes()); !bytes.Equal(last, []byte{23, 3, 3, 0, 19}) {
			t.Errorf("%d %s: last record's header %v, want close_notify's [23 3 3 0 19]", i, tc.path, last)
		}
		if i >= 2 && !c.ConnectionState().DidResume {
			t.Errorf("%d %s: session not resumed", i, tc.path)
		}
		c.Close()
	}
}

// recordingConn keeps what was read from the connection.
type recordingConn struct {
	net.Conn
	read bytes.Buffer
}

func (r *recordingConn) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.read.Write(p[:n])
	return n, err
}

// lastRecord returns the header of the last whole TLS record in b.
func lastRecord(b []byte) []byte {
	var last []byte
	for len(b) >= 5 {
		n := 5 + int(b[3])<<8 + int(b[4])
		if n > len(b) {
			break
		}
		last, b = b[:5], b[n:]
	}
	return last
}
