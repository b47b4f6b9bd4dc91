package h2_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// responseFrames sends GET path on a new connection and returns the
// response's frames as "HEADERS", "HEADERS+END", "DATA n" or "DATA n+END",
// in order, until the stream ends.
func responseFrames(t *testing.T, addr, path string) []string {
	t.Helper()
	c, fr := rawConn(t, addr)
	writeHeaders(fr, 1, true, reqFields("GET", path)...)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []string
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%s: %v after %v", path, err, got)
		}
		if f.Header().StreamID != 1 {
			continue
		}
		end := ""
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				end = "+END"
			}
			got = append(got, "HEADERS"+end)
		case *http2.DataFrame:
			if f.StreamEnded() {
				end = "+END"
			}
			got = append(got, fmt.Sprintf("DATA %d%s", len(f.Data()), end))
		case *http2.RSTStreamFrame:
			t.Fatalf("%s: RST_STREAM %v after %v", path, f.ErrCode, got)
		}
		if end != "" {
			return got
		}
	}
}

// TestResponseFrames: a response ends with its last DATA frame (END_STREAM
// on it, as nginx sends it) rather than with an empty DATA frame after it,
// whether its length is declared, held back by the engine, or the body
// was flushed before the handler returned; an empty body ends on HEADERS,
// and declared trailers end the stream after the DATA.
func TestResponseFrames(t *testing.T) {
	page := strings.Repeat("x", 1335)
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/declared":
			w.Header().Set("Content-Length", "1335")
			w.Write([]byte(page))
		case "/unknown":
			w.Write([]byte(page))
		case "/flushed":
			w.Write([]byte(page[:100]))
			w.(http.Flusher).Flush()
			w.Write([]byte(page[100:]))
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/trailer":
			w.Header().Set("Trailer", "X-Sum")
			w.Write([]byte(page))
			w.Header().Set("X-Sum", "1")
		}
	}))
	for path, want := range map[string]string{
		"/declared": "HEADERS,DATA 1335+END",
		"/unknown":  "HEADERS,DATA 1335+END",
		"/empty":    "HEADERS+END",
		"/trailer":  "HEADERS,DATA 1335,HEADERS+END",
	} {
		if got := strings.Join(responseFrames(t, addr, path), ","); got != want {
			t.Errorf("%s: frames %s, want %s", path, got, want)
		}
	}
	// Flushed: the first DATA frame may have gone out already; the last
	// one carries END_STREAM all the same, and no empty frame follows.
	got := responseFrames(t, addr, "/flushed")
	if last := got[len(got)-1]; last != "DATA 1235+END" {
		t.Errorf("/flushed: frames %v, want the last DATA 1235+END", got)
	}
}
