// Package servertest runs a real Arka server in-process for tests, on
// loopback ports chosen at run time, and gives clients for the three ways
// browsers reach it: HTTP/1.1, HTTP/1.1 over TLS and HTTP/2 over TLS. Tests
// write each behaviour once and run it over all three with Each.
package servertest

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
)

// Env is a running server.
type Env struct {
	Server  *server.Server
	Dir     string // temp directory holding site files and state
	HTTP    string // "127.0.0.1:port" of the plain listener
	HTTPS   string // "127.0.0.1:port" of the TLS listener
	files   []string
	log     *lockedWriter
	mu      sync.Mutex
	clients []*http.Client
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Start writes each site (TOML; "{{HTTP}}", "{{HTTPS}}" and "{{DIR}}" are
// replaced by the plain and TLS listen addresses and the temp directory)
// into a site file and starts a server on them. The server is shut down
// when the test ends.
func Start(t testing.TB, sites ...string) *Env {
	t.Helper()
	return StartWith(t, server.Options{}, sites...)
}

// StartWith is Start with server options (StateDir and Logger are set by
// the helper).
func StartWith(t testing.TB, o server.Options, sites ...string) *Env {
	t.Helper()
	e := &Env{Dir: t.TempDir(), HTTP: FreeAddr(t), HTTPS: FreeAddr(t), log: &lockedWriter{}}
	for i, src := range sites {
		f := filepath.Join(e.Dir, "site"+strconv.Itoa(i)+".toml")
		if err := os.WriteFile(f, []byte(e.Expand(src)), 0o644); err != nil {
			t.Fatal(err)
		}
		e.files = append(e.files, f)
	}
	loaded, err := config.LoadFiles(e.files)
	if err == nil {
		err = config.CheckEnvironment(loaded)
	}
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	log := slog.New(slog.NewTextHandler(e.log, nil))
	o.StateDir, o.Logger = filepath.Join(e.Dir, "state"), log
	e.Server = server.New(o)
	if err := e.Server.Apply(loaded); err != nil {
		t.Fatalf("apply: %v", err)
	}
	t.Cleanup(func() {
		// Close the clients' connections first: an HTTP/2 server otherwise
		// waits a second for the peer after GOAWAY.
		e.mu.Lock()
		for _, c := range e.clients {
			c.CloseIdleConnections()
		}
		e.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Server.Shutdown(ctx)
	})
	return e
}

// Expand replaces the placeholders Start understands.
func (e *Env) Expand(s string) string {
	return strings.NewReplacer("{{HTTP}}", e.HTTP, "{{HTTPS}}", e.HTTPS, "{{DIR}}", e.Dir).Replace(s)
}

// Reload rewrites site file i and applies all files again, as arka does
// on SIGHUP, returning the error from loading, checking the environment or
// applying.
func (e *Env) Reload(i int, src string) error {
	if err := os.WriteFile(e.files[i], []byte(e.Expand(src)), 0o644); err != nil {
		return err
	}
	loaded, err := config.LoadFiles(e.files)
	if err != nil {
		return err
	}
	if err := config.CheckEnvironment(loaded); err != nil {
		return err
	}
	return e.Server.Apply(loaded)
}

// Client is one way of reaching the server.
type Client struct {
	Name  string // "h1", "h1+tls", "h2"
	Base  string // "http://127.0.0.1:port" or "https://..."
	Proto string // expected resp.Proto
	HTTP  *http.Client
}

// Clients returns an HTTP/1.1 client, an HTTP/1.1-over-TLS client and an
// HTTP/2 client. None follows redirects or decompresses bodies.
func (e *Env) Clients() []*Client {
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tls1 := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}},
		DisableCompression: true,
		TLSNextProto:       map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	h2 := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
	}
	cs := []*Client{
		{Name: "h1", Base: "http://" + e.HTTP, Proto: "HTTP/1.1",
			HTTP: &http.Client{Transport: &http.Transport{DisableCompression: true}, CheckRedirect: noRedirect, Timeout: 30 * time.Second}},
		{Name: "h1+tls", Base: "https://" + e.HTTPS, Proto: "HTTP/1.1",
			HTTP: &http.Client{Transport: tls1, CheckRedirect: noRedirect, Timeout: 30 * time.Second}},
		{Name: "h2", Base: "https://" + e.HTTPS, Proto: "HTTP/2.0",
			HTTP: &http.Client{Transport: h2, CheckRedirect: noRedirect, Timeout: 30 * time.Second}},
	}
	e.mu.Lock()
	for _, c := range cs {
		e.clients = append(e.clients, c.HTTP)
	}
	e.mu.Unlock()
	return cs
}

// Each runs fn as a subtest once per client.
func (e *Env) Each(t *testing.T, fn func(t *testing.T, c *Client)) {
	for _, c := range e.Clients() {
		t.Run(c.Name, func(t *testing.T) { fn(t, c) })
	}
}

// Do sends a request with the given header fields ("Name: value") and
// returns the response with its body read.
func (c *Client) Do(t testing.TB, method, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, c.Base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if hst := req.Header.Get("Host"); hst != "" {
		req.Host = hst
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s over %s: %v", method, path, c.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s over %s: reading body: %v", method, path, c.Name, err)
	}
	if resp.Proto != c.Proto {
		t.Errorf("%s %s: protocol %s, want %s", method, path, resp.Proto, c.Proto)
	}
	return resp, body
}

// Get is Do with GET.
func (c *Client) Get(t testing.TB, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	return c.Do(t, http.MethodGet, path, headers...)
}

type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Log returns what the server wrote to its error log so far.
func (e *Env) Log() string {
	e.log.mu.Lock()
	defer e.log.mu.Unlock()
	return e.log.b.String()
}
