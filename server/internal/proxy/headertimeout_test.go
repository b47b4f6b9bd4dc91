package proxy

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
)

// TestHeaderTimeoutTiming: an upstream that sends no response head gets
// 504 no sooner than response_header_timeout after the request was sent
// and no later than an eighth of it more, on a new connection and on a
// kept one whose deadline, left by the last response (moved once per
// eighth of the timeout at most, to spare timer updates), once fired up
// to that much early.
func TestHeaderTimeoutTiming(t *testing.T) {
	const timeout = 2 * time.Second
	const slack = timeout / 8
	stop := make(chan struct{})
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/proxy/fast" {
			io.WriteString(w, "fast")
			return
		}
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer close(stop)
	h, logs := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, ResponseHeaderTimeout: dur(timeout)})
	f := startFront(t, "h1", h)
	stalled := func(what string) {
		t.Helper()
		start := time.Now()
		res, _ := get(t, f.client, f.url("/proxy/stall"))
		d := time.Since(start)
		t.Logf("%s: %d after %v", what, res.StatusCode, d)
		if res.StatusCode != http.StatusGatewayTimeout || d < timeout || d > timeout+slack {
			t.Errorf("%s: %d after %v, want 504 after %v to %v\n%s", what, res.StatusCode, d, timeout, timeout+slack, logs)
		}
	}
	stalled("new connection")
	if res, body := get(t, f.client, f.url("/proxy/fast")); res.StatusCode != 200 || body != "fast" {
		t.Fatalf("%d %q", res.StatusCode, body)
	}
	time.Sleep(slack / 2)
	stalled("kept connection")
	if st := h.Stats()[0]; st.Dials != 2 {
		t.Errorf("dials %d, want 2 (the second stalled request on the kept connection)", st.Dials)
	}
}
