package proxy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
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

// TestResponseBuffering: a client that asks for an 8 MiB answer and does
// not read it holds no upstream connection with response_buffering (the
// default): the upstream finishes sending at once and its connection goes
// back to the pool (the next request reuses it), while the client gets
// every byte, in order, when it reads. With response_buffering = false,
// or an upstream's X-Accel-Buffering: no (as nginx reads it), the upstream
// is still sending to the stalled client.
func TestResponseBuffering(t *testing.T) {
	const lines = 2 << 20 // 16 bytes each: 32 MiB, more than loopback sockets hold
	want := numberedLines(lines)
	for _, tc := range []struct {
		route     bool   // response_buffering
		accel     string // the upstream's X-Accel-Buffering
		buffering bool   // what follows
	}{{true, "", true}, {false, "", false}, {true, "no", false}} {
		buffering := tc.buffering
		t.Run(fmt.Sprintf("route=%v,accel=%q", tc.route, tc.accel), func(t *testing.T) {
			var finished atomic.Int32
			up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/proxy/small" {
					io.WriteString(w, "small")
					return
				}
				if tc.accel != "" {
					w.Header().Set("X-Accel-Buffering", tc.accel)
				}
				for p := want; len(p) > 0; p = p[min(len(p), 64<<10):] {
					w.Write(p[:min(len(p), 64<<10)])
				}
				finished.Add(1)
			}))
			h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, ResponseBuffering: &tc.route})
			f := startFront(t, "h1", h)
			d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
				return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			}}
			slow, err := d.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Close()
			io.WriteString(slow, "GET /proxy/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			deadline := time.Now().Add(4 * time.Second)
			for finished.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if done := finished.Load() == 1; done != buffering {
				t.Errorf("upstream finished sending to a client that does not read: %v", done)
			}
			if buffering {
				// The connection goes back to the pool (the upstream has
				// nothing in flight) and the next request reuses it.
				for time.Now().Before(deadline) && (h.Stats()[0].Idle != 1 || h.Stats()[0].Active != 0) {
					time.Sleep(10 * time.Millisecond)
				}
				if _, body := get(t, f.client, f.url("/proxy/small")); body != "small" {
					t.Errorf("next request: %q", body)
				}
				if n := up.conns.Load(); n != 1 {
					t.Errorf("%d upstream connections, want the first one reused", n)
				}
			}
			slow.SetReadDeadline(time.Now().Add(20 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(slow), nil)
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
		})
	}
}

// numberedLines is n lines "000000000000042\n" (16 bytes each, 0 to
// n-1), which show any loss or reordering.
func numberedLines(n int) []byte {
	b := make([]byte, 16*n)
	for i := range n {
		line := b[16*i : 16*i+16]
		line[15] = '\n'
		for j, v := 14, i; j >= 0; j, v = j-1, v/10 {
			line[j] = byte('0' + v%10)
		}
	}
	return b
}

// TestResponseBodyOfKnownLength: a buffered body of known length reaches
// the client whole, over every front, whether it was all in hand at once
// (read into the relay's buffer and sent after the upstream connection is
// back in the pool) or paused midway (then through the spool), at the
// relay buffer's size and past it; and the upstream connection is reused
// for every one of them.
func TestResponseBodyOfKnownLength(t *testing.T) {
	bodies := map[string][]byte{}
	for _, n := range []int{1, 119, 4000, 4096, 30 << 10, 32 << 10, 32<<10 + 1, 100 << 10} {
		bodies[fmt.Sprintf("/proxy/%d", n)] = numberedLines(n/16 + 1)[:n]
	}
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bodies[strings.TrimSuffix(r.URL.Path, "/pause")]
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		if strings.HasSuffix(r.URL.Path, "/pause") {
			w.Write(b[:len(b)/2])
			http.NewResponseController(w).Flush()
			time.Sleep(30 * time.Millisecond)
			b = b[len(b)/2:]
		}
		w.Write(b)
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	forEachFront(t, h, func(t *testing.T, f front) {
		for path, want := range bodies {
			for _, p := range []string{path, path + "/pause"} {
				resp, body := get(t, f.client, f.url(p))
				wantProto(t, f, resp)
				if resp.StatusCode != http.StatusOK || body != string(want) || resp.ContentLength != int64(len(want)) {
					t.Errorf("%s: %d, %d bytes (Content-Length %d), want 200 and the %d bytes sent", p, resp.StatusCode, len(body), resp.ContentLength, len(want))
				}
			}
		}
	})
	if n := up.conns.Load(); n != 1 {
		t.Errorf("%d upstream connections for requests one after another, want 1", n)
	}
}
