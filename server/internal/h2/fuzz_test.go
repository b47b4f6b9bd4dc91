package h2_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/enginetest/memconn"
	"github.com/arkaweb/arka/server/internal/h2"
	"github.com/arkaweb/arka/server/internal/limits"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// FuzzConn feeds the client preface and then arbitrary bytes (frames, as
// the seeds start) to a connection, after which the client's side ends:
// the engine must write only well-formed frames and end the connection,
// never panic or hang. No timer decides when an input is over, so each
// costs microseconds.
func FuzzConn(f *testing.F) {
	seed := func(build func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer)) {
		var b, hb bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
		build(fr, hpack.NewEncoder(&hb), &hb)
		f.Add(b.Bytes())
	}
	fields := func(enc *hpack.Encoder, hb *bytes.Buffer, method, path string, extra ...string) []byte {
		hb.Reset()
		for _, kv := range [][2]string{{":method", method}, {":scheme", "https"}, {":authority", "x"}, {":path", path}} {
			enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
		}
		for i := 0; i+1 < len(extra); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: extra[i], Value: extra[i+1]})
		}
		return append([]byte(nil), hb.Bytes()...)
	}
	seed(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: fields(enc, hb, "GET", "/"), EndHeaders: true, EndStream: true})
	})
	seed(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: fields(enc, hb, "POST", "/p", "content-length", "5"), EndHeaders: true})
		fr.WriteData(1, false, []byte("hel"))
		fr.WriteWindowUpdate(0, 1000)
		fr.WriteData(1, true, []byte("lo"))
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: fields(enc, hb, "GET", "/a?b"), EndHeaders: true, EndStream: true})
		fr.WriteRSTStream(3, http2.ErrCodeCancel)
	})
	seed(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		block := fields(enc, hb, "GET", "/c", "x-long", string(bytes.Repeat([]byte("v"), 100)))
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:10], EndStream: true})
		fr.WriteContinuation(1, false, block[10:20])
		fr.WriteContinuation(1, true, block[20:])
		fr.WritePing(false, [8]byte{1})
		fr.WritePriority(5, http2.PriorityParam{StreamDep: 1, Weight: 10})
		fr.WriteGoAway(1, http2.ErrCodeNo, nil)
	})
	var active atomic.Int32
	srv := &h2.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Path", r.URL.Path)
		io.WriteString(w, r.Method)
	}), Limits: limits.Limits{HeaderBytes: 4096, ReadHeader: 200 * time.Millisecond, Idle: 200 * time.Millisecond}}
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &memconn.Conn{
			In:    io.MultiReader(bytes.NewReader([]byte(http2.ClientPreface)), bytes.NewReader(in)),
			Local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443},
			Busy:  &active,
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.ServeConn(c, nil)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("connection not finished for %q", in)
		}
		// What the server wrote parses as frames, the first its SETTINGS.
		fr := http2.NewFramer(nil, bytes.NewReader(c.Out()))
		fr.SetMaxReadFrameSize(1 << 24)
		for i := 0; ; i++ {
			fm, err := fr.ReadFrame()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("frame %d the server wrote: %v", i, err)
			}
			if _, ok := fm.(*http2.SettingsFrame); i == 0 && !ok {
				t.Fatalf("first frame %v, want SETTINGS", fm.Header())
			}
		}
	})
}
