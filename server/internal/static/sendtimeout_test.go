package static_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/h1"
	"github.com/arkaweb/arka/server/internal/limits"
	"github.com/arkaweb/arka/server/internal/static"
)

// smallSendBuffer makes accepted connections' kernel send buffers small, so
// that how fast the server can write is set by how fast the client reads.
type smallSendBuffer struct{ net.Listener }

func (l smallSendBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// serveLarge serves a file of size bytes (a repeated pattern) with the
// static handler on an h1 engine whose write timeout is timeout, both
// kernel buffers small (16 KiB) so that the client's reading paces the
// server's writes, and connects to it. It returns the file's content and
// the client's connection; all is closed when the test ends.
func serveLarge(t *testing.T, size int, timeout time.Duration) ([]byte, net.Conn) {
	t.Helper()
	dir := t.TempDir()
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	if err := os.WriteFile(filepath.Join(dir, "large.bin"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := static.New(complete(t, &config.Static{Root: dir}), static.Options{
		Cache: static.NewCache(static.CacheOptions{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h1.Server{Handler: h, Limits: limits.Limits{Write: timeout}}
	go s.Serve(smallSendBuffer{ln})
	t.Cleanup(func() { s.Close() })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.(*net.TCPConn).SetReadBuffer(16 << 10)
	return body, c
}

// The engine's write timeout (Limits.Write) bounds each write to a client that does not read, as
// nginx's send_timeout does (the time between two successive writes), not
// the time a large body takes: a client on a slow link that keeps reading
// gets the whole file (RFC 9112 section 9.5: the server must not cut a
// response that is still making progress).
func TestSendTimeoutSlowReader(t *testing.T) {
	const timeout = 400 * time.Millisecond
	body, c := serveLarge(t, 2<<20, timeout) // 2 MiB: sent from disk
	io.WriteString(c, "GET /large.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	// Read steadily at about 3 MB/s: the 2 MiB take well over the timeout
	// in total, while no single write waits long.
	var got []byte
	buf := make([]byte, 32<<10)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	head, rest, ok := bytes.Cut(got, []byte("\r\n\r\n"))
	if !ok || !bytes.HasPrefix(head, []byte("HTTP/1.1 200 ")) ||
		!strings.Contains(string(head), "Content-Length: "+strconv.Itoa(len(body))) {
		t.Fatalf("response head %q", head)
	}
	if len(rest) != len(body) {
		t.Fatalf("slow but steady reader got %d of %d body bytes (the send timeout cut the response)", len(rest), len(body))
	}
	if !bytes.Equal(rest, body) {
		t.Fatal("body differs from the file")
	}
}

// A client that stops reading a large file (sent with sendfile) is
// dropped after the engine's write timeout, Limits.Write: the static
// handler sets no deadline of its own that would outlive it.
func TestSendTimeoutStoppedReader(t *testing.T) {
	const timeout = 300 * time.Millisecond
	body, c := serveLarge(t, 8<<20, timeout) // 8 MiB
	io.WriteString(c, "GET /large.bin HTTP/1.1\r\nHost: x\r\n\r\n")
	buf := make([]byte, 4<<10)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * timeout) // stop reading
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after %d more bytes: %v (want the connection closed)", n, err)
	}
	if n+int64(len(buf)) >= int64(len(body)) {
		t.Fatalf("a client that stopped reading for %v got the whole body (%d bytes); want it dropped after %v", 5*timeout, n, timeout)
	}
}
