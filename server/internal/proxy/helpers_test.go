package proxy

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/enginetest"
	"github.com/arkaweb/arka/tests/testkit"
)

// front is the client side of a test: the proxy on Arka's own engines
// (package enginetest), reached over HTTP/1.1, HTTP/1.1 with TLS or
// HTTP/2.
type front struct {
	name   string // "h1", "h1tls" or "h2"
	addr   string // "127.0.0.1:port" the client connects to
	base   string // "http://addr" or "https://addr"
	client *http.Client
}

func (f front) url(p string) string { return f.base + p }

// unwrapWriter stands in for the server's recorder: a ResponseWriter that
// exposes only Unwrap, so Flush and Hijack must go through
// http.ResponseController as they do in production.
type unwrapWriter struct{ w http.ResponseWriter }

func (u *unwrapWriter) Header() http.Header         { return u.w.Header() }
func (u *unwrapWriter) Write(p []byte) (int, error) { return u.w.Write(p) }
func (u *unwrapWriter) WriteHeader(c int)           { u.w.WriteHeader(c) }
func (u *unwrapWriter) Unwrap() http.ResponseWriter { return u.w }

func wrapped(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&unwrapWriter{w}, r)
	})
}

// startFront serves h over one protocol: "h1", "h1tls" or "h2". When the
// test ends the engines shut down and no goroutine of Arka's may be left
// (h itself is closed by newProxy's cleanup, after its subtests).
func startFront(t testing.TB, proto string, h http.Handler) front {
	t.Helper()
	name, ok := map[string]string{"h1": "h1", "h1tls": "h1+tls", "h2": "h2"}[proto]
	if !ok {
		t.Fatalf("unknown front %q", proto)
	}
	e := enginetest.Serve(t, wrapped(h))
	for _, c := range e.Clients() {
		if c.Name == name {
			addr := e.HTTPS
			if proto == "h1" {
				addr = e.HTTP
			}
			return front{name: proto, addr: addr, base: c.Base, client: c.HTTP}
		}
	}
	panic("enginetest has no client " + name)
}

var protos = []string{"h1", "h1tls", "h2"}

// forEachFront runs fn as a subtest over every front protocol.
func forEachFront(t *testing.T, h http.Handler, fn func(t *testing.T, f front)) {
	for _, p := range protos {
		t.Run(p, func(t *testing.T) { fn(t, startFront(t, p, h)) })
	}
}

// wantProto asserts that a response came over the front's protocol.
func wantProto(t testing.TB, f front, resp *http.Response) {
	t.Helper()
	want := 1
	if f.name == "h2" {
		want = 2
	}
	if resp.ProtoMajor != want {
		t.Errorf("front %s answered over HTTP/%d", f.name, resp.ProtoMajor)
	}
}

// upstream is a real Go HTTP server on loopback that counts the
// connections it accepted.
type testUpstream struct {
	srv   *httptest.Server
	addr  string // as written in a site file
	conns atomic.Int64
	mu    sync.Mutex
	live  map[net.Conn]bool
}

func startUpstream(t testing.TB, h http.Handler) *testUpstream {
	t.Helper()
	u := &testUpstream{live: map[net.Conn]bool{}}
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = u.track
	s.Start()
	u.srv = s
	u.addr = s.Listener.Addr().String()
	t.Cleanup(s.Close)
	return u
}

func (u *testUpstream) track(c net.Conn, st http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch st {
	case http.StateNew:
		u.conns.Add(1)
		u.live[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(u.live, c)
	}
}

// closeIdle closes the upstream's idle keep-alive connections from its side.
func (u *testUpstream) closeIdle() {
	u.srv.Config.SetKeepAlivesEnabled(false)
	u.srv.Config.SetKeepAlivesEnabled(true)
}

// startUnixUpstream serves h on a unix socket in a temporary directory.
func startUnixUpstream(t testing.TB, h http.Handler) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "up.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: h}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return "unix:" + p
}

// newProxy builds a handler for route "/proxy/" with cfg's upstreams.
func newProxy(t testing.TB, cfg config.Proxy) (*Handler, *testkit.LogBuffer) {
	t.Helper()
	lb := &testkit.LogBuffer{}
	h, err := New("/proxy/", complete(t, &cfg), Options{Logger: slog.New(slog.NewTextHandler(lb, nil)), Site: "test.toml"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, lb
}

func dur(d time.Duration) config.Duration { return config.Duration(d) }

// complete normalizes a handler configuration built in the test, as
// config.Load does for one read from a site file.
func complete[T config.Handler](t testing.TB, h T) T {
	t.Helper()
	if err := config.Complete(h); err != nil {
		t.Fatal(err)
	}
	return h
}

func ptr[T any](v T) *T { return &v }

// get fetches url and returns status and body, failing the test on error.
func get(t testing.TB, c *http.Client, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
