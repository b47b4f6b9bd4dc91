package h2_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/h2"
	"github.com/arkaweb/arka/server/internal/limits"
	"golang.org/x/net/http2"
)

// frameEvent is what a raw client saw: a stream's RST_STREAM, a GOAWAY, or
// the connection closing.
type frameEvent struct {
	rst    map[uint32]http2.ErrCode
	goAway *http2.ErrCode
	closed bool
	status map[uint32]string
	marks  int // PING ACKs carrying markPing
}

// markPing is the first byte of the PINGs a test sends to count how many
// of its frames the server has read (it acknowledges each in order).
const markPing = 0xa5

// readUntil reads frames until the connection closes or d passes, and
// stops early when stop says so.
func readUntil(t *testing.T, fr *http2.Framer, setDeadline func(time.Time) error, d time.Duration, stop func(*frameEvent) bool) *frameEvent {
	t.Helper()
	ev := &frameEvent{rst: map[uint32]http2.ErrCode{}, status: map[uint32]string{}}
	setDeadline(time.Now().Add(d))
	for !stop(ev) {
		f, err := fr.ReadFrame()
		if err != nil {
			ev.closed = !isTimeout(err)
			return ev
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			ev.rst[f.StreamID] = f.ErrCode
		case *http2.GoAwayFrame:
			code := f.ErrCode
			ev.goAway = &code
		case *http2.MetaHeadersFrame:
			ev.status[f.StreamID] = f.PseudoValue("status")
		case *http2.PingFrame:
			if f.IsAck() && f.Data[0] == markPing {
				ev.marks++
			}
		}
	}
	return ev
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

func reqFields(method, path string) [][2]string {
	return [][2]string{{":method", method}, {":scheme", "https"}, {":authority", "localhost"}, {":path", path}}
}

// TestStalledStreamsReset: a client that gives no flow-control window
// (SETTINGS_INITIAL_WINDOW_SIZE 0 and no WINDOW_UPDATE) has each stream
// reset after Limits.Write whatever the handler does (a small answer
// finished by the engine, a large one written by the handler, which must
// see its write fail and return), then, since nothing on the connection
// progressed, the connection ends with GOAWAY; the next client is served.
func TestStalledStreamsReset(t *testing.T) {
	returned := make(chan error, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			io.WriteString(w, "small answer")
			returned <- nil
		case "/large":
			chunk := strings.Repeat("x", 16<<10)
			var err error
			for i := 0; i < 64 && err == nil; i++ {
				_, err = io.WriteString(w, chunk)
			}
			returned <- err
		default:
			io.WriteString(w, "ok")
		}
	})
	addr, _ := startServer(t, &h2.Server{Handler: h, Limits: limits.Limits{Write: 300 * time.Millisecond}})
	c, fr := rawConn(t, addr)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	writeHeaders(fr, 1, true, reqFields("GET", "/small")...)
	writeHeaders(fr, 3, true, reqFields("GET", "/large")...)
	start := time.Now()
	ev := readUntil(t, fr, c.SetReadDeadline, 5*time.Second, func(ev *frameEvent) bool { return ev.closed })
	took := time.Since(start)
	// The first stream to reach the write timeout is reset; the other one
	// is reset too, unless the connection's GOAWAY (nothing on it moved)
	// went out first, which ends it as well (its handler's write failing is
	// checked below).
	if ev.rst[1] != http2.ErrCodeCancel && ev.rst[3] != http2.ErrCodeCancel {
		t.Errorf("RST_STREAM codes %v, want CANCEL for the stalled streams", ev.rst)
	}
	for id, code := range ev.rst {
		if code != http2.ErrCodeCancel {
			t.Errorf("stream %d reset with %v, want CANCEL", id, code)
		}
	}
	if ev.goAway == nil || *ev.goAway != http2.ErrCodeEnhanceYourCalm || !ev.closed {
		t.Errorf("GOAWAY %v, closed %v: want ENHANCE_YOUR_CALM and the connection closed", ev.goAway, ev.closed)
	}
	if took > 3*time.Second {
		t.Errorf("took %v with a 300ms write timeout", took)
	}
	var errs []error
	for range 2 {
		select {
		case err := <-returned:
			errs = append(errs, err)
		case <-time.After(3 * time.Second):
			t.Fatal("a handler did not return")
		}
	}
	if errs[0] != nil && errs[1] != nil || errs[0] == nil && errs[1] == nil {
		t.Errorf("handler errors %v: the large writer must see its write fail", errs)
	}
	resp, body := get(t, client(), "https://"+addr+"/")
	if resp.StatusCode != 200 || body != "ok" {
		t.Errorf("next client: %d %q", resp.StatusCode, body)
	}
}

// TestStalledStreamsBounded: streams without window beyond a few per
// connection are refused (REFUSED_STREAM), so their handlers and buffers
// cost a bounded amount per connection.
func TestStalledStreamsBounded(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 8<<10))
		w.(http.Flusher).Flush()
	})
	addr, _ := startServer(t, &h2.Server{Handler: h, Limits: limits.Limits{Write: 10 * time.Second}})
	c, fr := rawConn(t, addr)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	const n = 64
	for i := range n {
		writeHeaders(fr, uint32(2*i+1), true, reqFields("GET", "/")...)
		time.Sleep(2 * time.Millisecond) // let each handler reach its wait
	}
	ev := readUntil(t, fr, c.SetReadDeadline, 2*time.Second, func(ev *frameEvent) bool { return len(ev.rst) >= n-16 })
	refused := 0
	for _, code := range ev.rst {
		if code == http2.ErrCodeRefusedStream {
			refused++
		}
	}
	if refused < n-16 || refused > n-8 {
		t.Errorf("%d of %d stalled streams refused, want about %d", refused, n, n-16)
	}
}

// TestIdleWithOpenStream: a connection whose only streams are a finished
// GET the client never ended and a body that never comes is closed as
// idle after Limits.Idle, although the client keeps sending PINGs. Idle
// counts from the end of the last handler (the POST's, failed by the body
// timeout): the connection closes no sooner than both limits together,
// and at all only if the PINGs, eight per idle period, do not keep it
// open; how much later a loaded machine closes it is not the measure.
func TestIdleWithOpenStream(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			_, err := io.ReadAll(r.Body)
			if os.IsTimeout(err) {
				w.WriteHeader(http.StatusRequestTimeout)
			}
			return
		}
		io.WriteString(w, "ok")
	})
	addr, _ := startServer(t, &h2.Server{Handler: h, Limits: limits.Limits{Idle: 400 * time.Millisecond, Body: limits.NewBody(300*time.Millisecond, limits.DefaultBodyMinRate)}})
	c, fr := rawConn(t, addr)
	start := time.Now() // before the streams: both limits run from after it
	writeHeaders(fr, 1, false, reqFields("GET", "/")...)
	writeHeaders(fr, 3, false, reqFields("POST", "/")...)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
				if fr.WritePing(false, [8]byte{}) != nil {
					return
				}
			}
		}
	}()
	ev := readUntil(t, fr, c.SetReadDeadline, 20*time.Second, func(ev *frameEvent) bool { return ev.closed })
	took := time.Since(start)
	if !ev.closed || ev.goAway == nil || *ev.goAway != http2.ErrCodeNo {
		t.Fatalf("after %v: closed %v, GOAWAY %v: want GOAWAY NO_ERROR and close", took, ev.closed, ev.goAway)
	}
	if ev.status[3] != "408" {
		t.Errorf("silent body: status %q, want 408", ev.status[3])
	}
	if took < 700*time.Millisecond {
		t.Errorf("closed after %v, before the body timeout and the idle timeout (0.7s)", took)
	}
}

// TestBodyMinRate: a body that trickles in below the minimum rate fails
// the handler's read with a timeout, although no silence lasts long.
func TestBodyMinRate(t *testing.T) {
	got := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		got <- err
		w.WriteHeader(http.StatusRequestTimeout)
	})
	addr, _ := startServer(t, &h2.Server{Handler: h, Limits: limits.Limits{Body: limits.NewBody(300*time.Millisecond, 100)}})
	_, fr := rawConn(t, addr)
	writeHeaders(fr, 1, false, reqFields("POST", "/")...)
	start := time.Now()
	stop := time.After(5 * time.Second)
	for {
		select {
		case err := <-got:
			if !os.IsTimeout(err) {
				t.Fatalf("read error %v, want a timeout", err)
			}
			// 300 ms of grace plus 10 ms per byte at 10 bytes/s: well under 2 s.
			if took := time.Since(start); took < 300*time.Millisecond || took > 2*time.Second {
				t.Errorf("failed after %v", took)
			}
			return
		case <-stop:
			t.Fatal("a body at 10 bytes/s was not stopped")
		case <-time.After(100 * time.Millisecond):
			fr.WriteData(1, false, []byte("x"))
		}
	}
}

// TestContinuationFlood: a header block of endless empty CONTINUATION
// frames, or one that never ends, costs the client its connection.
func TestContinuationFlood(t *testing.T) {
	addr, _ := startServer(t, &h2.Server{Handler: http.NotFoundHandler(), Limits: limits.Limits{ReadHeader: 300 * time.Millisecond}})
	t.Run("frames", func(t *testing.T) {
		addr, _ := startServer(t, &h2.Server{Handler: http.NotFoundHandler()}) // 20 s for a block
		c, fr := rawConn(t, addr)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}, EndStream: true})
		go func() {
			for i := 0; i < 100000; i++ {
				if fr.WriteContinuation(1, false, nil) != nil {
					return
				}
			}
		}()
		ev := readUntil(t, fr, c.SetReadDeadline, 5*time.Second, func(ev *frameEvent) bool { return ev.closed })
		if ev.goAway == nil || *ev.goAway != http2.ErrCodeEnhanceYourCalm || !ev.closed {
			t.Errorf("GOAWAY %v closed %v", ev.goAway, ev.closed)
		}
	})
	t.Run("time", func(t *testing.T) {
		c, fr := rawConn(t, addr)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}, EndStream: true})
		start := time.Now()
		ev := readUntil(t, fr, c.SetReadDeadline, 5*time.Second, func(ev *frameEvent) bool { return ev.closed })
		if ev.goAway == nil || *ev.goAway != http2.ErrCodeEnhanceYourCalm || !ev.closed {
			t.Errorf("GOAWAY %v closed %v", ev.goAway, ev.closed)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("closed after %v", took)
		}
	})
}

// TestHandlerOutlastsIdle: a handler that runs longer than Limits.Idle
// keeps its connection, although the idle deadline of the request before
// it is kept in force while it runs (not cleared per request): a request
// sent after that deadline passed, while the handler still runs, is
// served, the long response comes, and the connection still closes as idle
// (GOAWAY NO_ERROR) once no handler has run for Idle. The client's own
// delays (a loaded machine) fall while a handler runs, where no idle
// timeout applies.
func TestHandlerOutlastsIdle(t *testing.T) {
	const idle = 300 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(6 * idle)
		}
		io.WriteString(w, "ok")
	})
	addr, _ := startServer(t, &h2.Server{Handler: h, Limits: limits.Limits{Idle: idle}})
	c, fr := rawConn(t, addr)
	got := func(id uint32) func(*frameEvent) bool {
		return func(ev *frameEvent) bool { return ev.status[id] != "" || ev.closed || ev.goAway != nil }
	}
	// The quick request ends a handler: the idle deadline is set, and
	// kept when the slow one starts right after it.
	writeHeaders(fr, 1, true, reqFields("GET", "/")...)
	if ev := readUntil(t, fr, c.SetReadDeadline, 5*time.Second, got(1)); ev.status[1] != "200" {
		t.Fatalf("first request: status %q, closed %v, GOAWAY %v", ev.status[1], ev.closed, ev.goAway)
	}
	writeHeaders(fr, 3, true, reqFields("GET", "/slow")...)
	time.Sleep(2 * idle) // past the kept deadline (5/4 Idle after the first handler)
	writeHeaders(fr, 5, true, reqFields("GET", "/")...)
	ev := readUntil(t, fr, c.SetReadDeadline, 10*time.Second, func(ev *frameEvent) bool {
		return ev.status[3] != "" && ev.status[5] != "" || ev.closed || ev.goAway != nil
	})
	if ev.status[3] != "200" || ev.status[5] != "200" {
		t.Fatalf("handler running %v with Idle %v: statuses %q and %q, closed %v, GOAWAY %v; want 200s and the connection kept",
			6*idle, idle, ev.status[3], ev.status[5], ev.closed, ev.goAway)
	}
	start := time.Now()
	ev = readUntil(t, fr, c.SetReadDeadline, 10*time.Second, func(ev *frameEvent) bool { return ev.closed })
	took := time.Since(start)
	if !ev.closed || ev.goAway == nil || *ev.goAway != http2.ErrCodeNo {
		t.Fatalf("idle after %v: closed %v, GOAWAY %v; want GOAWAY NO_ERROR and close", took, ev.closed, ev.goAway)
	}
}
