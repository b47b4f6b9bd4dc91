package proxy

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
)

// TestRequestBuffering: by default a request body arrives whole before
// the upstream sees the request (no upstream connection is held while a
// client uploads slowly), of known or unknown length, small or spooled to
// a file, and the upstream gets it with its Content-Length.
func TestRequestBuffering(t *testing.T) {
	var seen atomic.Int32
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d %x cl=%s te=%s", len(b), sha256.Sum256(b), r.Header.Get("Content-Length"), r.Header.Get("Transfer-Encoding"))
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	for _, size := range []int{1000, 200 << 10} {
		body := strings.Repeat("z", size)
		for _, known := range []bool{true, false} {
			forEachFront(t, h, func(t *testing.T, f front) {
				seen.Store(0)
				pr, pw := io.Pipe()
				go func() {
					io.WriteString(pw, body[:size/2])
					time.Sleep(300 * time.Millisecond)
					if n := seen.Load(); n != 0 {
						pw.CloseWithError(fmt.Errorf("the upstream saw the request before its body arrived"))
						return
					}
					io.WriteString(pw, body[size/2:])
					pw.Close()
				}()
				req, _ := http.NewRequest("POST", f.url("/proxy/up"), pr)
				if known {
					req.ContentLength = int64(size)
				}
				resp, err := f.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("%d %x cl=%d te=", size, sha256.Sum256([]byte(body)), size); string(got) != want {
					t.Errorf("size %d known %v: %q, want %q", size, known, got, want)
				}
			})
		}
	}
}

// TestRequestBufferingOff: with request_buffering = false a body streams
// to the upstream as it comes, however small: the upstream sees the
// request while the client is still sending (here, a 5,000-byte body of
// which 100 bytes have been sent).
func TestRequestBufferingOff(t *testing.T) {
	seen := make(chan struct{}, 1)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- struct{}{}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d", len(b))
	}))
	off := false
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, RequestBuffering: &off})
	forEachFront(t, h, func(t *testing.T, f front) {
		pr, pw := io.Pipe()
		go func() {
			io.WriteString(pw, strings.Repeat("s", 100))
			select {
			case <-seen:
			case <-time.After(5 * time.Second):
				pw.CloseWithError(fmt.Errorf("the upstream did not see the request while its body was being sent"))
				return
			}
			io.WriteString(pw, strings.Repeat("s", 4900))
			pw.Close()
		}()
		req, _ := http.NewRequest("POST", f.url("/proxy/up"), pr)
		req.ContentLength = 5000
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "5000" {
			t.Errorf("upstream got %q bytes, want 5000", got)
		}
	})
}
