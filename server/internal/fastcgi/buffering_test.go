package fastcgi

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/enginetest"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// TestRequestBuffering: with one php-fpm connection, a client that sends
// half of a 100 KB body and stalls holds no php-fpm connection while it
// does (request_buffering, the default), so another client is served at
// once; when it finishes, its whole body reaches the script. With
// request_buffering = false the stalled upload holds the connection and
// the other client waits.
func TestRequestBuffering(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 2})
	for _, buffering := range []bool{true, false} {
		t.Run(fmt.Sprintf("buffering=%v", buffering), func(t *testing.T) {
			h := e.handler(t, func(c *config.FastCGI, _ *Options) {
				c.MaxConns = config.AutoInt{Set: true, Value: 1}
				c.RequestBuffering = &buffering
			})
			srv := enginetest.Serve(t, h) // HTTP/1.1 on Arka's engine
			body := strings.Repeat("0123456789", 10000)
			up, err := net.Dial("tcp", srv.HTTP)
			if err != nil {
				t.Fatal(err)
			}
			defer up.Close()
			fmt.Fprintf(up, "POST /app/hash.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)/2])
			time.Sleep(200 * time.Millisecond) // the upload is under way

			c := &http.Client{Timeout: 1500 * time.Millisecond}
			resp, err := c.Get("http://" + srv.HTTP + "/app/pid.php")
			served := err == nil && resp.StatusCode == 200
			if resp != nil {
				resp.Body.Close()
			}
			if served != buffering {
				t.Errorf("another client served while an upload stalls: %v (err %v)", served, err)
			}

			io.WriteString(up, body[len(body)/2:])
			up.SetReadDeadline(time.Now().Add(10 * time.Second))
			out, _ := io.ReadAll(io.LimitReader(up, 4096))
			sum := sha256.Sum256([]byte(body))
			if want := fmt.Sprintf("%d %s", len(body), hex.EncodeToString(sum[:])); !strings.Contains(string(out), want) {
				t.Errorf("upload answer %q, want %q", out, want)
			}
		})
	}
}

// TestResponseBuffering: with one php-fpm connection, a client that asks
// for a 32 MiB page and does not read it holds no php-fpm connection
// (response_buffering, the default: the page goes to memory and the spool
// file, and the connection is released when the script has finished), so
// another client is served at once; when the stalled client reads, it
// gets every byte in order. With response_buffering = false the stalled
// client holds the connection and the other client waits.
func TestResponseBuffering(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 2})
	fpmtest.WriteFiles(t, e.root, map[string]string{"app/lines.php": `<?php
if (isset($_GET['accel'])) {
  header('X-Accel-Buffering: ' . $_GET['accel']);
}
for ($i = 0; $i < (int)$_GET['n']; $i++) {
  printf("%015d\n", $i);
}
`})
	const lines = 2 << 20          // 16 bytes each: 32 MiB, more than loopback sockets hold
	want := make([]byte, 16*lines) // as PHP prints them
	for i := range lines {
		line := want[16*i : 16*i+16]
		line[15] = '\n'
		for j, v := 14, i; j >= 0; j, v = j-1, v/10 {
			line[j] = byte('0' + v%10)
		}
	}
	for _, tc := range []struct {
		route     bool   // response_buffering
		accel     string // the script's X-Accel-Buffering
		buffering bool   // what follows
	}{{true, "", true}, {false, "", false}, {true, "no", false}, {false, "yes", true}} {
		buffering := tc.buffering
		t.Run(fmt.Sprintf("route=%v,accel=%q", tc.route, tc.accel), func(t *testing.T) {
			tmp := t.TempDir()
			h := e.handler(t, func(c *config.FastCGI, o *Options) {
				c.MaxConns = config.AutoInt{Set: true, Value: 1}
				c.ResponseBuffering = &tc.route
				o.TempDir = tmp
			})
			srv := enginetest.Serve(t, h) // HTTP/1.1 on Arka's engine
			d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
				return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			}}
			slow, err := d.Dial("tcp", srv.HTTP)
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Close()
			fmt.Fprintf(slow, "GET /app/lines.php?n=%d&accel=%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", lines, tc.accel)
			time.Sleep(500 * time.Millisecond) // the script has written its page

			c := &http.Client{Timeout: 3 * time.Second}
			start := time.Now()
			resp, err := c.Get("http://" + srv.HTTP + "/app/pid.php")
			served := err == nil && resp.StatusCode == 200
			if resp != nil {
				resp.Body.Close()
			}
			t.Logf("another client while one does not read: served %v in %v", served, time.Since(start).Round(time.Millisecond))
			if served != buffering {
				t.Errorf("another client served while a client does not read: %v (err %v)", served, err)
			}

			slow.SetReadDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(slow)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if v, ok := res.Header["X-Accel-Buffering"]; ok {
				t.Errorf("X-Accel-Buffering %q passed to the client", v)
			}
			got, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatalf("after %d bytes: %v", len(got), err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, not the %d lines in order", len(got), lines)
			}
			if n, _ := io.Copy(io.Discard, res.Body); n != 0 {
				t.Errorf("%d bytes after the last line", n)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("spool files left: %v", left)
			}
		})
	}
}
