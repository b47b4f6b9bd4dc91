package h2_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/arkaweb/arka/server/internal/h2"
)

// TestControlFloods: a client flooding frames that cost work but make no
// progress (PING, SETTINGS, PRIORITY, tiny WINDOW_UPDATEs, empty or
// one-byte DATA on an open upload) while reading every answer gets GOAWAY
// ENHANCE_YOUR_CALM and its connection closed, quickly: after no more
// frames than the bucket's burst and what it leaks in the time taken (a
// marking PING every markEvery frames, acknowledged in order, counts the
// frames the server read; how fast it reads them depends on the machine's
// load, so the time itself is not the measure). The next client is served.
func TestControlFloods(t *testing.T) {
	const markEvery = 64
	addr, _ := start(t, echo)
	for _, tc := range []struct {
		name   string
		upload bool // open stream 1 as a POST first
		frame  func(fr *http2.Framer, k int) error
	}{
		{"PING", false, func(fr *http2.Framer, k int) error { return fr.WritePing(false, [8]byte{byte(k) &^ 0x80}) }},
		{"SETTINGS", false, func(fr *http2.Framer, k int) error {
			return fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: uint32(k)})
		}},
		{"PRIORITY", false, func(fr *http2.Framer, k int) error {
			return fr.WritePriority(uint32(2*k+1), http2.PriorityParam{Weight: 1})
		}},
		{"WINDOW_UPDATE", false, func(fr *http2.Framer, k int) error { return fr.WriteWindowUpdate(0, 1) }},
		{"one-byte DATA", true, func(fr *http2.Framer, k int) error { return fr.WriteData(1, false, []byte("x")) }},
		{"empty DATA", true, func(fr *http2.Framer, k int) error { return fr.WriteData(1, false, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, fr := rawConn(t, addr)
			if tc.upload {
				writeHeaders(fr, 1, false, reqFields("POST", "/hash")...)
			}
			done := make(chan int, 1)
			start := time.Now() // before the first frame: the bucket leaks from then on
			go func() {
				k := 0
				for ; k < 2000000; k++ {
					var err error
					if k%markEvery == markEvery-1 {
						err = fr.WritePing(false, [8]byte{markPing})
					} else {
						err = tc.frame(fr, k)
					}
					if err != nil {
						break
					}
				}
				done <- k
			}()
			ev := readUntil(t, fr, c.SetReadDeadline, 60*time.Second, func(*frameEvent) bool { return false })
			took := time.Since(start)
			c.Close()
			sent := <-done
			if ev.goAway == nil || *ev.goAway != http2.ErrCodeEnhanceYourCalm || !ev.closed {
				t.Fatalf("after %d frames in %v: GOAWAY %v, closed %v; want ENHANCE_YOUR_CALM and closed", sent, took, ev.goAway, ev.closed)
			}
			read := ev.marks * markEvery // frames the server read, at least
			if bound := h2.CtrlBurst + int(took.Seconds()*h2.CtrlRate) + markEvery; read > bound {
				t.Errorf("flood cut after %d frames in %v, want at most %d", read, took, bound)
			}
			t.Logf("cut after %d frames read (%d sent) in %v", read, sent, took)
		})
	}
	if resp, body := get(t, client(), "https://"+addr+"/x"); resp.StatusCode != 200 || body == "" {
		t.Errorf("next client: %d %q", resp.StatusCode, body)
	}
}

// TestControlBurstAllowed: a burst of a few thousand PINGs (a keepalive or
// window-probing client in a hurry, far more than any real one sends) does
// not close the connection, which then serves a request.
func TestControlBurstAllowed(t *testing.T) {
	addr, _ := start(t, echo)
	c, fr := rawConn(t, addr)
	const n = 5000
	go func() {
		for k := range n {
			fr.WritePing(false, [8]byte{byte(k)})
		}
		writeHeaders(fr, 1, true, reqFields("GET", "/x")...)
	}()
	acks := 0
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %d PING ACKs: %v", acks, err)
		}
		switch f := f.(type) {
		case *http2.PingFrame:
			acks++
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v after %d PING ACKs", f.ErrCode, acks)
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "200" || acks != n {
				t.Fatalf("status %s after %d of %d PING ACKs", s, acks, n)
			}
			return
		}
	}
}

// TestWindowAcksAllowed: a client that returns flow-control window for
// every DATA frame it reads, at once and for the connection and the
// stream (small increments: the frames are small), is no flood: its
// WINDOW_UPDATEs give back window the server's own DATA used. Tens of
// thousands of them on one connection, far over the bucket's burst, leave
// it open and every request answered.
func TestWindowAcksAllowed(t *testing.T) {
	const chunks, chunk = 100, 10
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range chunks {
			w.Write([]byte(strings.Repeat("x", chunk)))
			w.(http.Flusher).Flush()
		}
	}))
	c, fr := rawConn(t, addr)
	const requests = 200 // 40,000 WINDOW_UPDATEs of 10 bytes
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	for i := range requests {
		id := uint32(2*i + 1)
		writeHeaders(fr, id, true, reqFields("GET", "/x")...)
		got := 0
		for done := false; !done; {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				t.Fatalf("request %d: GOAWAY %v", i, f.ErrCode)
			case *http2.DataFrame:
				n := len(f.Data())
				got += n
				done = f.StreamEnded()
				if n > 0 {
					fr.WriteWindowUpdate(0, uint32(n))
					if !done {
						fr.WriteWindowUpdate(id, uint32(n))
					}
				}
			}
		}
		if got != chunks*chunk {
			t.Fatalf("request %d: %d bytes, want %d", i, got, chunks*chunk)
		}
	}
}
