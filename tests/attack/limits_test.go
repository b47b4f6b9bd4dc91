package attack

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/server"
	"golang.org/x/net/http2"
)

// TestLargeFileStall: clients that take the first 16 KiB of a large static
// file over HTTP/2 and then grant no more window (before: the static
// handler's own 60 s deadline fired first, each stream got RST_STREAM
// PROTOCOL_ERROR, no GOAWAY, and the connections were still open at 73 s).
// Now the engine's stall rule owns it, as for every handler: RST_STREAM
// CANCEL, then GOAWAY ENHANCE_YOUR_CALM and the connection closed, after
// the write timeout.
func TestLargeFileStall(t *testing.T) {
	tg := start(t, server.Options{WriteTimeout: time.Second})
	const conns = 7
	var wg sync.WaitGroup
	var cancels, calm, closed atomic.Int32
	start := time.Now()
	for range conns {
		c, fr, err := h2conn(t, tg.e.HTTPS, 16<<10)
		if err != nil {
			t.Fatal(err)
		}
		headers(fr, 1, "GET", "/large.bin", true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					if ne, ok := err.(interface{ Timeout() bool }); !ok || !ne.Timeout() {
						closed.Add(1)
					}
					return
				}
				switch f := f.(type) {
				case *http2.RSTStreamFrame:
					if f.ErrCode == http2.ErrCodeCancel {
						cancels.Add(1)
					}
				case *http2.GoAwayFrame:
					if f.ErrCode == http2.ErrCodeEnhanceYourCalm {
						calm.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("%d connections stalled on a 4 MiB file: %d RST_STREAM CANCEL, %d GOAWAY ENHANCE_YOUR_CALM, %d closed, after %v",
		conns, cancels.Load(), calm.Load(), closed.Load(), took.Round(time.Millisecond))
	if cancels.Load() != conns || calm.Load() != conns || closed.Load() != conns || took > 5*time.Second {
		t.Errorf("want every stream reset with CANCEL and every connection closed after GOAWAY ENHANCE_YOUR_CALM within 5 s")
	}
	tg.normal(t, 3*time.Second)
}

// TestControlFrameFlood: PING, SETTINGS and WINDOW_UPDATE frames sent as
// fast as the client can, and one-byte DATA frames on an upload to PHP
// (before: accepted without limit, about a core each, connection kept).
// Now the connection gets GOAWAY ENHANCE_YOUR_CALM within a second.
func TestControlFrameFlood(t *testing.T) {
	tg := start(t, server.Options{})
	for _, tc := range []struct {
		name  string
		path  string // an upload opened first on stream 1, if set
		frame func(fr *http2.Framer, k int) error
	}{
		{"PING, SETTINGS, WINDOW_UPDATE", "", func(fr *http2.Framer, k int) error {
			switch k % 3 {
			case 0:
				return fr.WritePing(false, [8]byte{byte(k)})
			case 1:
				return fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: uint32(k)})
			}
			return fr.WriteWindowUpdate(0, 1)
		}},
		{"one-byte DATA", "/php/upload.php", func(fr *http2.Framer, k int) error { return fr.WriteData(1, false, []byte("x")) }},
	} {
		c, fr, err := h2conn(t, tg.e.HTTPS, 65535)
		if err != nil {
			t.Fatal(err)
		}
		if tc.path != "" {
			headers(fr, 1, "POST", tc.path, false)
		}
		var sent atomic.Int64
		go func() {
			for k := 0; k < 2_000_000 && tc.frame(fr, k) == nil; k++ {
				sent.Add(1)
			}
		}()
		start := time.Now()
		_, g := drain(c, fr, 5*time.Second)
		took := time.Since(start)
		c.Close()
		t.Logf("%s flood: GOAWAY %d after %v, %d frames sent", tc.name, g, took.Round(time.Millisecond), sent.Load())
		if g != int(http2.ErrCodeEnhanceYourCalm) || took > 2*time.Second {
			t.Errorf("%s flood: GOAWAY %d after %v, want ENHANCE_YOUR_CALM within 2 s", tc.name, g, took)
		}
	}
	tg.normal(t, 3*time.Second)
}
