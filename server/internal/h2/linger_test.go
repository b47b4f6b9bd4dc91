package h2_test

import (
	"io"
	"maps"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/h2"
	"github.com/arkaweb/arka/server/internal/limits"
	"golang.org/x/net/http2"
)

// TestUnendedRequestsForgotten: GETs whose request never ends (HEADERS
// without END_STREAM, no DATA) are answered, then reset with RST_STREAM
// NO_ERROR (RFC 9113 section 8.1) and forgotten: after many of them on
// several connections the servers' stream tables are empty and the heap
// did not grow with them; a normal client is served.
func TestUnendedRequestsForgotten(t *testing.T) {
	page := strings.Repeat("x", 2000)
	addr, srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, page)
	}))
	const conns, perConn = 4, 300
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	for range conns {
		c, fr := rawConn(t, addr)
		fr.WriteWindowUpdate(0, 1<<30)
		// In batches well under the concurrent streams limit, so none is
		// refused: every stream is answered, then reset.
		const batch = 50
		ev := &frameEvent{rst: map[uint32]http2.ErrCode{}, status: map[uint32]string{}}
		for sent := 0; sent < perConn; {
			for range batch {
				writeHeaders(fr, uint32(2*sent+1), false, append(reqFields("GET", "/small.html"), [2]string{"user-agent", strings.Repeat("u", 500)})...)
				sent++
			}
			got := readUntil(t, fr, c.SetReadDeadline, 10*time.Second, func(ev *frameEvent) bool { return len(ev.rst) >= batch })
			if got.closed || got.goAway != nil {
				t.Fatalf("connection closed %v, GOAWAY %v", got.closed, got.goAway)
			}
			maps.Copy(ev.rst, got.rst)
			maps.Copy(ev.status, got.status)
		}
		ok := 0
		for id, code := range ev.rst {
			if code == http2.ErrCodeNo && ev.status[id] == "200" {
				ok++
			} else {
				t.Errorf("stream %d: status %q, reset %v", id, ev.status[id], code)
			}
		}
		if ok != perConn {
			t.Fatalf("%d of %d streams answered then reset NO_ERROR", ok, perConn)
		}
	}
	var streams int
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if streams, _, _ = srv.ConnStateForTest(); streams == 0 {
			break
		}
	}
	if streams != 0 {
		t.Errorf("%d streams still in the connections' tables, want 0", streams)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	// 1,200 streams of a 500-byte header each, kept, held well over 1 MB.
	if grew := int64(ms.HeapAlloc) - int64(before); grew > 1<<20 {
		t.Errorf("heap grew by %d bytes with %d finished streams", grew, conns*perConn)
	}
	resp, body := get(t, client(), "https://"+addr+"/")
	if resp.StatusCode != 200 || body != page {
		t.Errorf("next client: %d, %d bytes", resp.StatusCode, len(body))
	}
}

// TestConnWindowStarved: a client that gives its streams large windows
// but never replenishes the connection window starves them all the same:
// they count as stalled, streams beyond the cap are refused and the
// connection counts as not progressing (so it may be closed to make room).
func TestConnWindowStarved(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 64<<10))
	})
	addr, srv := startServer(t, &h2.Server{Handler: h, Limits: limits.Limits{Write: 10 * time.Second}})
	c, fr := rawConn(t, addr)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	// The first stream takes the connection's 65,535 bytes; then none has
	// any, though each stream's own window is 1 MiB.
	const n = 40
	for i := range n {
		writeHeaders(fr, uint32(2*i+1), true, reqFields("GET", "/")...)
		time.Sleep(2 * time.Millisecond)
	}
	ev := readUntil(t, fr, c.SetReadDeadline, 3*time.Second, func(ev *frameEvent) bool { return len(ev.rst) >= n-16 })
	refused := 0
	for _, code := range ev.rst {
		if code == http2.ErrCodeRefusedStream {
			refused++
		}
	}
	if refused < n-16 || refused > n-8 {
		t.Errorf("%d of %d streams refused, want about %d", refused, n, n-16)
	}
	var streams, stalled, progressing int
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if streams, stalled, progressing = srv.ConnStateForTest(); stalled > 0 && stalled == streams {
			break
		}
	}
	if stalled == 0 || stalled != streams || progressing != 0 {
		t.Errorf("%d streams, %d stalled, %d connections progressing: want all stalled, none progressing", streams, stalled, progressing)
	}
}

// TestStalledBurstBounded: streams sent in one burst, before any handler
// reaches its wait for window, are held to the stall cap all the same
// when the peer's windows are closed (SETTINGS_INITIAL_WINDOW_SIZE 0).
func TestStalledBurstBounded(t *testing.T) {
	running := make(chan struct{}, 200)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running <- struct{}{}
		w.Write(make([]byte, 8<<10))
		w.(http.Flusher).Flush()
	})
	addr, _ := startServer(t, &h2.Server{Handler: h, Limits: limits.Limits{Write: 10 * time.Second}})
	c, fr := rawConn(t, addr)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	const n = 100
	for i := range n {
		writeHeaders(fr, uint32(2*i+1), true, reqFields("GET", "/")...)
	}
	ev := readUntil(t, fr, c.SetReadDeadline, 3*time.Second, func(ev *frameEvent) bool { return len(ev.rst) >= n-16 })
	refused := 0
	for _, code := range ev.rst {
		if code == http2.ErrCodeRefusedStream {
			refused++
		}
	}
	for deadline := time.Now().Add(2 * time.Second); len(running) < 16 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // no more start
	if refused != n-16 || len(running) != 16 {
		t.Errorf("burst of %d: %d refused, %d handlers ran; want %d refused, 16 ran", n, refused, len(running), n-16)
	}
}
