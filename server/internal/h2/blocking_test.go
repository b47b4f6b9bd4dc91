package h2_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/h2"
	"golang.org/x/net/http2"
)

// A handler of the connection's only stream (no body) that waits keeps
// no frame from being read: a PING is answered, another stream is served
// and a RST_STREAM reaches the waiting handler while it waits; after it
// returned the connection goes on serving, and when the client goes away
// during such a wait the handler's context ends and the server shuts down
// at once.
func TestBlockingHandlerDoesNotStallReading(t *testing.T) {
	blocked, cancelled := make(chan struct{}, 4), make(chan struct{}, 4)
	addr, srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			blocked <- struct{}{}
			select {
			case <-r.Context().Done():
				cancelled <- struct{}{}
			case <-time.After(10 * time.Second):
			}
			return
		}
		io.WriteString(w, "fast")
	}))
	c, fr := rawConn(t, addr)
	writeHeaders(fr, 1, true, reqFields("GET", "/block")...)
	<-blocked
	var sawPing bool
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	fr.WritePing(false, [8]byte{4, 5, 6})
	for !sawPing {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("no PING ack while a handler waits: %v", err)
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == [8]byte{4, 5, 6} {
			sawPing = true
		}
	}
	writeHeaders(fr, 3, true, reqFields("GET", "/fast")...)
	ev := readUntil(t, fr, c.SetReadDeadline, 5*time.Second, func(ev *frameEvent) bool { return ev.status[3] != "" })
	if ev.status[3] != "200" {
		t.Fatalf("stream 3 beside a waiting handler: %+v", ev)
	}
	fr.WriteRSTStream(1, http2.ErrCodeCancel)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("RST_STREAM did not reach the handler")
	}
	// The connection goes on serving later streams.
	for id := uint32(5); id < 5+2*70; id += 2 {
		writeHeaders(fr, id, true, reqFields("GET", "/fast")...)
		ev = readUntil(t, fr, c.SetReadDeadline, 5*time.Second, func(ev *frameEvent) bool { return ev.status[id] != "" })
		if ev.status[id] != "200" {
			t.Fatalf("stream %d after the wait: %+v", id, ev)
		}
	}
	// The client leaves while a handler waits.
	writeHeaders(fr, 201, true, reqFields("GET", "/block")...)
	<-blocked
	c.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection's end did not reach the handler")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("connection not ended: %v", err)
	}
}

// A handler of the connection's only stream whose response needs more
// window than the client's initial one gets it: the WINDOW_UPDATE frames
// are read while it waits (RFC 9113 section 6.9).
func TestHandlerGetsWindow(t *testing.T) {
	const size = 200 << 10
	addr, _ := startServer(t, &h2.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("w", size))
	})})
	c, fr := rawConn(t, addr)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1000})
	for _, id := range []uint32{1, 3} {
		writeHeaders(fr, id, true, reqFields("GET", "/")...)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got := 0
		start := time.Now()
		for done := false; !done; {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("stream %d: %d of %d bytes: %v", id, got, size, err)
			}
			if d, ok := f.(*http2.DataFrame); ok && d.StreamID == id {
				got += len(d.Data())
				if n := uint32(len(d.Data())); n > 0 {
					fr.WriteWindowUpdate(0, n)
					fr.WriteWindowUpdate(id, n)
				}
				done = d.StreamEnded()
			}
		}
		if got != size {
			t.Fatalf("stream %d: %d bytes, want %d", id, got, size)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("stream %d took %v with 1000-byte windows", id, d)
		}
	}
}
