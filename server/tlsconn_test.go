package server_test

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
)

// TestTLSResumption: a client that keeps session tickets resumes its
// session on the next connection (an abbreviated handshake without the
// certificate's signature), over TLS 1.3 and TLS 1.2.
func TestTLSResumption(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, siteFor(`"localhost"`, www(t, dir, "a", "hello"), true))
	for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		cfg := &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", MaxVersion: v, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
		for i := range 3 {
			c, err := tls.Dial("tcp", e.HTTPS, cfg)
			if err != nil {
				t.Fatal(err)
			}
			// TLS 1.3 tickets come after the handshake: a request and its
			// answer read them.
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			st := c.ConnectionState()
			c.Close()
			if st.Version != v || resp.StatusCode != 200 || st.DidResume != (i > 0) {
				t.Errorf("TLS %x connection %d: version %x, status %d, resumed %v", v, i, st.Version, resp.StatusCode, st.DidResume)
			}
		}
	}
}

// recordSizes is a net.Conn that notes the length of each TLS record it
// reads (RFC 8446 section 5.1: type, version, 16-bit length).
type recordSizes struct {
	net.Conn
	buf   []byte
	sizes []int
}

func (r *recordSizes) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.buf = append(r.buf, p[:n]...)
	for len(r.buf) >= 5 {
		l := int(binary.BigEndian.Uint16(r.buf[3:5]))
		if len(r.buf) < 5+l {
			break
		}
		r.sizes = append(r.sizes, l)
		r.buf = r.buf[5+l:]
	}
	return n, err
}

// TestTLSFirstRecordsFull: a 3 KB page on a new TLS connection arrives in
// one record, as with nginx's default 16 KiB records, not in records of
// about one TCP segment each (crypto/tls's dynamic record sizing).
func TestTLSFirstRecordsFull(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "x")
	if err := os.WriteFile(filepath.Join(root, "six.txt"), []byte(strings.Repeat("0123456789abcdef", 3008/16)), 0o644); err != nil {
		t.Fatal(err)
	}
	e := servertest.Start(t, siteFor(`"localhost"`, root, true))
	raw, err := net.Dial("tcp", e.HTTPS)
	if err != nil {
		t.Fatal(err)
	}
	rs := &recordSizes{Conn: raw}
	c := tls.Client(rs, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", NextProtos: []string{"http/1.1"}})
	defer c.Close()
	io.WriteString(c, "GET /six.txt HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if len(body) != 3008 {
		t.Fatalf("body %d bytes", len(body))
	}
	largest := 0
	for _, n := range rs.sizes {
		largest = max(largest, n)
	}
	if largest < 3008 {
		t.Errorf("largest record %d bytes (records %v), want the whole answer in one", largest, rs.sizes)
	}
}

// TestTLSConnectionBursts: bursts of new TLS connections, each with one
// request, are all served (by goroutines that wait for the next
// connection after one ends, see tlsWorker), at most 16 of those wait
// afterwards, and when the server shuts down none is left (servertest
// checks for leaks).
func TestTLSConnectionBursts(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, siteFor(`"localhost"`, www(t, dir, "a", "hello"), true))
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	before := runtime.NumGoroutine()
	for burst := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for range 100 {
			wg.Go(func() {
				resp, err := client.Get("https://" + e.HTTPS + "/")
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "hello" {
					errs <- io.ErrUnexpectedEOF
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("burst %d: %v", burst, err)
		}
	}
	// Of the goroutines that served 100 connections at once, at most 16
	// wait for more (maxIdleTLSWorkers).
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+16+8 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+16+8 {
		t.Errorf("%d goroutines after the bursts, %d before", n, before)
	}
}

// BenchmarkTLSResumedConn is the bench test newconn-tls in one process: a
// new TLS 1.3 connection per request that resumes the previous session
// (X25519 key exchange, no certificate signature), one small page, then
// Connection: close. ns/op and allocs/op include Go's TLS client, about
// as costly as the server; -cpuprofile or -memprofile with -focus
// server tells them apart.
func BenchmarkTLSResumedConn(b *testing.B) {
	dir := b.TempDir()
	root := filepath.Join(dir, "www")
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(root, "index.html"), []byte(strings.Repeat("x", 1335)), 0o644)
	e := servertest.Start(b, siteFor(`"localhost"`, root, true))
	cfg := &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", NextProtos: []string{"http/1.1"}, ClientSessionCache: tls.NewLRUClientSessionCache(1)}
	req := []byte("GET /index.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	buf := make([]byte, 64<<10)
	one := func() bool {
		c, err := tls.Dial("tcp", e.HTTPS, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		got := 0
		for {
			n, err := c.Read(buf)
			got += n
			if err != nil {
				break
			}
		}
		if got < 1335 {
			b.Fatalf("read %d bytes", got)
		}
		return c.ConnectionState().DidResume
	}
	one() // a full handshake; its ticket is resumed from here on
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if !one() {
			b.Fatal("session not resumed")
		}
	}
}
