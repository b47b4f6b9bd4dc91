package fastcgi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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
