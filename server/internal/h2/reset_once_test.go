package h2_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestOneResetPerStream: a request whose body breaks its content-length
// (RFC 9113 section 8.1.1) gets one RST_STREAM, PROTOCOL_ERROR, even when
// its handler then gives up with http.ErrAbortHandler, as the proxy and
// FastCGI handlers do when a body read fails: nothing may follow a
// RST_STREAM on that stream (section 5.1, "closed"), least of all an
// INTERNAL_ERROR that blames the server for the client's mistake.
func TestOneResetPerStream(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			panic(http.ErrAbortHandler)
		}
		io.WriteString(w, "ok")
	}))
	for _, tc := range []struct {
		name     string
		declared string
		data     string
	}{
		{"body longer than content-length", "3", "abcdef"},
		{"body shorter than content-length", "10", "abc"},
	} {
		c, fr := rawConn(t, addr)
		writeHeaders(fr, 1, false, [2]string{":method", "POST"}, [2]string{":scheme", "https"}, [2]string{":authority", "a"}, [2]string{":path", "/p"}, [2]string{"content-length", tc.declared})
		fr.WriteData(1, true, []byte(tc.data))
		// A later request's whole answer: by then the handler of stream 1
		// has long ended and anything it sent is in.
		time.Sleep(50 * time.Millisecond)
		writeHeaders(fr, 3, true, [2]string{":method", "GET"}, [2]string{":scheme", "https"}, [2]string{":authority", "a"}, [2]string{":path", "/q"})
		var resets []http2.ErrCode
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
	read:
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("%s: %v (resets of stream 1: %v)", tc.name, err, resets)
			}
			switch f := f.(type) {
			case *http2.RSTStreamFrame:
				if f.StreamID == 1 {
					resets = append(resets, f.ErrCode)
				}
			case *http2.DataFrame:
				if f.StreamID == 3 && f.StreamEnded() {
					break read
				}
			case *http2.GoAwayFrame:
				t.Fatalf("%s: GOAWAY %v", tc.name, f.ErrCode)
			}
		}
		if len(resets) != 1 || resets[0] != http2.ErrCodeProtocol {
			t.Errorf("%s: stream 1 was reset with %v, want one PROTOCOL_ERROR", tc.name, resets)
		}
	}
}
