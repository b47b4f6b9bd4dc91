package proxy

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/spool"
	"github.com/arkaweb/arka/tests/testkit"
)

// responseSpool counts this process's open response spool files and
// sums their sizes (the handler runs in the test's process; the files are
// unlinked).
func responseSpool(t *testing.T) (files int, bytes int64) {
	t.Helper()
	return testkit.OpenFiles(t, "arka-response-")
}

// QA M1: slow-reading clients of a large buffered response cannot make
// the spool files pass the spool budget (here the client's share: 2 MiB
// of 8 MiB, all clients being 127.0.0.1); past it each response is
// passed on at the client's pace, and each client still gets its whole
// response, in order. Meanwhile the next client is served.
func TestResponseSpoolBudget(t *testing.T) {
	const lines = 512 << 10 // 16 bytes each: 8 MiB
	want := numberedLines(lines)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/proxy/small" {
			io.WriteString(w, "small")
			return
		}
		for p := want; len(p) > 0; p = p[min(len(p), 64<<10):] {
			w.Write(p[:min(len(p), 64<<10)])
		}
	}))
	const total, share = 8 << 20, 2 << 20
	bud := spool.NewBudget(64, total, 16, share, nil)
	cfg := config.Proxy{Upstreams: []string{up.addr}}
	h, err := New("/proxy/", complete(t, &cfg), Options{Logger: slog.New(slog.NewTextHandler(&testkit.LogBuffer{}, nil)),
		Site: "test.toml", TempDir: t.TempDir(), Spool: bud})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	f := startFront(t, "h1", h)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	const clients = 3
	slow := make([]net.Conn, clients)
	for i := range slow {
		c, err := d.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /proxy/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		slow[i] = c
	}
	var most int64
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		_, n := responseSpool(t)
		most = max(most, n)
	}
	if _, body := get(t, f.client, f.url("/proxy/small")); body != "small" {
		t.Errorf("next client: %q", body)
	}
	t.Logf("%d clients that do not read an 8 MiB response: at most %d bytes in spool files", clients, most)
	if most > share {
		t.Errorf("spool files held %d bytes, more than the client's share of %d", most, share)
	}
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("client %d: %d bytes (%v), not the %d lines in order", i, len(got), err, lines)
		}
	}
	if files, n := bud.Use(); files != 0 || n != 0 {
		t.Errorf("budget after the responses: %d files, %d bytes held", files, n)
	}
}
