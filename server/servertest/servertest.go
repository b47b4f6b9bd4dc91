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
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/tests/testkit"
)

// Env is a running server.
type Env struct {
	Server  *server.Server
	Dir     string // temp directory holding site files and state
	HTTP    string // "127.0.0.1:port" of the plain listener
	HTTPS   string // "127.0.0.1:port" of the TLS listener
	files   []string
	log     *testkit.LogBuffer
	mu      sync.Mutex
	clients []*http.Client
}

// FreeAddr returns a loopback address with a port free right now (see
// testkit.FreeAddr; Start binds its own addresses without this race).
func FreeAddr(t testing.TB) string {
	t.Helper()
	return testkit.FreeAddr(t)
}

// Start writes each site (TOML; "{{HTTP}}", "{{HTTPS}}" and "{{DIR}}" are
// replaced by the plain and TLS listen addresses and the temp directory)
// into a site file and starts a server on them. The server is shut down
// when the test ends.
func Start(t testing.TB, sites ...string) *Env {
	t.Helper()
	return StartWith(t, server.Options{}, sites...)
}

// StartWith is Start with server options (StateDir, Logger and Listen are
// set by the helper).
//
// The plain and TLS addresses are bound here, on port 0, and handed to the
// server (Options.Listen), so no other program can take them in between.
// When the test ends, after the server has shut down, no goroutine started
// by Arka's code since Start may still run: one that does is reported as a
// leak, with its stack.
func StartWith(t testing.TB, o server.Options, sites ...string) *Env {
	t.Helper()
	before := goroutines()
	t.Cleanup(func() { checkLeaks(t, before) }) // runs after the shutdown below
	plain, secure := testkit.Listen(t), testkit.Listen(t)
	e := &Env{Dir: t.TempDir(), HTTP: plain.Addr().String(), HTTPS: secure.Addr().String(), log: &testkit.LogBuffer{}}
	bound := map[string]net.Listener{e.HTTP: plain, e.HTTPS: secure}
	var boundMu sync.Mutex
	o.Listen = func(network, addr string) (net.Listener, error) {
		boundMu.Lock()
		ln, ok := bound[addr]
		delete(bound, addr)
		boundMu.Unlock()
		if ok {
			return ln, nil
		}
		return net.Listen(network, addr)
	}
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

// Log returns what the server wrote to its error log so far.
func (e *Env) Log() string { return e.log.String() }

// goroutines returns the stacks of all goroutines, by goroutine id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	m := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(strings.TrimPrefix(g, "goroutine "), " ")
		m[id] = g
	}
	return m
}

// checkLeaks reports goroutines running Arka's code that were not running
// before: the server's own must have ended with Shutdown. Stragglers get
// five seconds (a connection closing, an old configuration retiring).
func checkLeaks(t testing.TB, before map[string]string) {
	t.Helper()
	if t.Failed() {
		return // a failed test may leave a request hanging on purpose
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var leaked []string
		for id, g := range goroutines() {
			if _, ok := before[id]; ok || !strings.Contains(g, "github.com/arkaweb/arka/") ||
				strings.Contains(g, "servertest.checkLeaks") {
				continue
			}
			leaked = append(leaked, g)
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sort.Strings(leaked)
			t.Errorf("%d goroutine(s) still running after the server shut down:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
