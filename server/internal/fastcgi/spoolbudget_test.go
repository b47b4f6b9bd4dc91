package fastcgi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/enginetest"
	"github.com/arkaweb/arka/server/internal/spool"
	"github.com/arkaweb/arka/tests/fpmtest"
	"github.com/arkaweb/arka/tests/testkit"
)

// responseSpool counts this process's open response spool files and
// sums their sizes (the handler runs in the test's process; the files are
// unlinked).
func responseSpool(t *testing.T) (files int, bytes int64) {
	t.Helper()
	return testkit.OpenFiles(t, "arka-response-")
}

// QA M1: slow-reading clients of a large buffered PHP page cannot make
// the spool files pass the spool budget (here the client's share: 2 MiB
// of 8 MiB, all clients being 127.0.0.1); past it each page is passed on
// at the client's pace, and each client still gets its whole page, in
// order. Meanwhile the next client is served.
func TestResponseSpoolBudget(t *testing.T) {
	const clients = 3
	e := newEnv(t, fpmtest.Config{MaxChildren: clients + 1})
	fpmtest.WriteFiles(t, e.root, map[string]string{"app/lines.php": `<?php
for ($i = 0; $i < (int)$_GET['n']; $i++) {
  printf("%015d\n", $i);
}
`})
	const lines = 512 << 10 // 16 bytes each: 8 MiB
	want := make([]byte, 16*lines)
	for i := range lines {
		line := want[16*i : 16*i+16]
		line[15] = '\n'
		for j, v := 14, i; j >= 0; j, v = j-1, v/10 {
			line[j] = byte('0' + v%10)
		}
	}
	const total, share = 8 << 20, 2 << 20
	bud := spool.NewBudget(64, total, 16, share, nil)
	tmp := t.TempDir()
	h := e.handler(t, func(c *config.FastCGI, o *Options) {
		o.TempDir = tmp
		o.Spool = bud
	})
	srv := enginetest.Serve(t, h) // HTTP/1.1 on Arka's engine
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	slow := make([]net.Conn, clients)
	for i := range slow {
		c, err := d.Dial("tcp", srv.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /app/lines.php?n=%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", lines)
		slow[i] = c
	}
	var most int64
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		_, n := responseSpool(t)
		most = max(most, n)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + srv.HTTP + "/app/pid.php")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("next client: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	t.Logf("%d clients that do not read an 8 MiB page: at most %d bytes in spool files", clients, most)
	if most > share {
		t.Errorf("spool files held %d bytes, more than the client's share of %d", most, share)
	}
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
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
