package server_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/servertest"
)

// spoolFiles counts this process's open descriptors of spool files (the
// server runs in the test's process).
func spoolFiles(t *testing.T) (spooled, all int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.Contains(l, "arka-body-") {
			spooled++
		}
	}
	return spooled, len(ents)
}

// fromAddr returns a client like c whose connections come from another
// loopback address: another client as the server counts them.
func fromAddr(c *servertest.Client, local string) *http.Client {
	tr := c.HTTP.Transport.(*http.Transport).Clone()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	tr.DialContext = d.DialContext
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// QA F9: one client declaring large bodies on many requests (HTTP/2:
// streams) and sending a little of each cannot take the process's file
// descriptors. Only bytes past the in-memory part open a spool file, the
// client holds at most its share of the spool budget, requests beyond get
// 503 with Retry-After, and meanwhile another client is served a static
// file and an upload of its own.
func TestSpoolBudgetOneClient(t *testing.T) {
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		io.WriteString(w, strconv.FormatInt(n, 10))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(ln)
	defer up.Close()
	const files, share = 256, 64 // share: maxPerAddr(256)
	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "a.css"), []byte("body{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := servertest.StartWith(t, server.Options{Budget: board.Budget{SpoolFiles: files, SpoolBytes: 1 << 30}}, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+www+`" }
[[routes]]
path = "/up/"
handler = { type = "proxy", upstreams = ["`+ln.Addr().String()+`"] }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		// attack sends n requests declaring 1 MB, each sending sent bytes
		// and then nothing; it returns the statuses of those answered
		// within the wait, and a stop that aborts the rest.
		attack := func(n, sent int, limit time.Duration, wait func(got map[int]int) bool) (map[int]int, func()) {
			hc := fromAddr(c, "127.0.0.1") // new connections: one client as before
			var mu sync.Mutex
			got := map[int]int{}
			var wg sync.WaitGroup
			ctx, cancel := context.WithCancel(context.Background())
			pws := make([]*io.PipeWriter, n)
			for i := range n {
				pr, pw := io.Pipe()
				pws[i] = pw
				// Closing the body (the HTTP/2 transport does when the
				// answer came first) ends the pipe's blocked read.
				body := struct {
					io.Reader
					io.Closer
				}{io.MultiReader(bytes.NewReader(make([]byte, sent)), pr), pr}
				req, _ := http.NewRequestWithContext(ctx, "POST", c.Base+"/up/x", body)
				req.ContentLength = 1_000_000
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := hc.Do(req)
					if err != nil {
						return
					}
					resp.Body.Close()
					if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
						t.Errorf("503 without Retry-After")
					}
					mu.Lock()
					got[resp.StatusCode]++
					mu.Unlock()
				}()
			}
			deadline := time.Now().Add(limit)
			for time.Now().Before(deadline) {
				mu.Lock()
				done := wait(got)
				mu.Unlock()
				if done {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			mu.Lock()
			snap := map[int]int{}
			for k, v := range got {
				snap[k] = v
			}
			mu.Unlock()
			return snap, func() {
				for _, pw := range pws {
					pw.CloseWithError(io.ErrClosedPipe)
				}
				cancel()
				wg.Wait()
				hc.CloseIdleConnections()
			}
		}
		other := fromAddr(c, "127.0.0.2")
		defer other.CloseIdleConnections()
		served := func() {
			t.Helper()
			resp, err := other.Get(c.Base + "/a.css")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("another client's static file: %v %v", resp, err)
			}
			resp.Body.Close()
			body := bytes.Repeat([]byte("y"), 200<<10) // spooled: past memory
			resp, err = other.Post(c.Base+"/up/y", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Fatalf("another client's upload: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != strconv.Itoa(len(body)) {
				t.Fatalf("another client's upload: %d %q", resp.StatusCode, b)
			}
		}

		// A declared length with 1 byte sent opens no file at all.
		const n = share + 16
		_, stop := attack(n, 1, time.Second, func(map[int]int) bool {
			s, _ := spoolFiles(t)
			return s > 0
		})
		s, fds := spoolFiles(t)
		served()
		stop()
		if s != 0 {
			t.Errorf("%d requests of 1 byte each: %d spool files open, want 0", n, s)
		}
		t.Logf("%d requests of 1 byte: %d spool files, %d descriptors", n, s, fds)

		// Bytes past memory: at most the client's share of files, 503 for
		// the rest.
		// Wait for both: the refused requests' 503s can come back before
		// every admitted body has passed memory and opened its file.
		got, stop := attack(n, 17<<10, 15*time.Second, func(got map[int]int) bool {
			s, _ := spoolFiles(t)
			return got[503] >= n-share && s >= share
		})
		s, fds = spoolFiles(t)
		served()
		stop()
		if got[503] != n-share || s != share {
			t.Errorf("%d requests of 17 KiB: %v answered, %d spool files open; want %d x 503 and %d files", n, got, s, n-share, share)
		}
		t.Logf("%d requests of 17 KiB: %v answered, %d spool files, %d descriptors", n, got, s, fds)
		deadline := time.Now().Add(5 * time.Second)
		for s, _ = spoolFiles(t); s != 0 && time.Now().Before(deadline); s, _ = spoolFiles(t) {
			time.Sleep(20 * time.Millisecond)
		}
		if s != 0 {
			t.Errorf("%d spool files left open after the client left", s)
		}
	})
}
