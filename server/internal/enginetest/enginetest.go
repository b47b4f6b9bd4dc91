// Package enginetest is the client-side test matrix shared by package
// servertest and the handlers' own tests: the three ways browsers reach
// Arka (HTTP/1.1, HTTP/1.1 over TLS, HTTP/2 over TLS), each a Client, and
// a check that no goroutine running Arka's code outlives a test.
//
// Serve runs one http.Handler on Arka's own engines (packages h1 and h2)
// for tests inside a handler's package, which cannot import package server
// (it imports them). servertest.Start runs a whole server from site files
// and gives the same Clients.
package enginetest

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/h1"
	"github.com/arkaweb/arka/server/internal/h2"
	"github.com/arkaweb/arka/tests/testkit"
)

// Client is one way of reaching a server.
type Client struct {
	Name  string // "h1", "h1+tls", "h2"
	Base  string // "http://127.0.0.1:port" or "https://..."
	Proto string // expected resp.Proto
	HTTP  *http.Client
}

// Clients returns an HTTP/1.1 client for the plain address and an
// HTTP/1.1-over-TLS and an HTTP/2 client for the TLS one (addresses as
// "127.0.0.1:port"). None follows redirects, decompresses bodies or checks
// the server's certificate; each gives up on a request after 30 s.
func Clients(plain, secure string) []*Client {
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tls1 := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}},
		DisableCompression: true,
		TLSNextProto:       map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	h2c := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
	}
	return []*Client{
		{Name: "h1", Base: "http://" + plain, Proto: "HTTP/1.1",
			HTTP: &http.Client{Transport: &http.Transport{DisableCompression: true}, CheckRedirect: noRedirect, Timeout: 30 * time.Second}},
		{Name: "h1+tls", Base: "https://" + secure, Proto: "HTTP/1.1",
			HTTP: &http.Client{Transport: tls1, CheckRedirect: noRedirect, Timeout: 30 * time.Second}},
		{Name: "h2", Base: "https://" + secure, Proto: "HTTP/2.0",
			HTTP: &http.Client{Transport: h2c, CheckRedirect: noRedirect, Timeout: 30 * time.Second}},
	}
}

// Do sends a request with the given header fields ("Name: value") and
// returns the response with its body read. A "Host" field sets the
// request's Host.
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

// Addrs are a test server's two addresses and the clients made for them
// (Env here, servertest.Env for a whole server).
type Addrs struct {
	HTTP  string // "127.0.0.1:port" of the plain listener (HTTP/1.1)
	HTTPS string // "127.0.0.1:port" of the TLS listener (HTTP/1.1 or HTTP/2 by ALPN)

	mu      sync.Mutex
	clients []*http.Client
}

// Clients returns the three clients for the addresses (see Clients);
// CloseClients closes their idle connections.
func (a *Addrs) Clients() []*Client {
	cs := Clients(a.HTTP, a.HTTPS)
	a.mu.Lock()
	for _, c := range cs {
		a.clients = append(a.clients, c.HTTP)
	}
	a.mu.Unlock()
	return cs
}

// Each runs fn as a subtest once per client.
func (a *Addrs) Each(t *testing.T, fn func(t *testing.T, c *Client)) {
	for _, c := range a.Clients() {
		t.Run(c.Name, func(t *testing.T) { fn(t, c) })
	}
}

// CloseClients closes the idle connections of every client Clients made:
// done before the server shuts down, since an HTTP/2 server otherwise
// waits a second for the peer after GOAWAY.
func (a *Addrs) CloseClients() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.clients {
		c.CloseIdleConnections()
	}
}

// Env is a handler served by Serve; the clients' idle connections are
// closed when the test ends.
type Env struct {
	Addrs
	Log *testkit.LogBuffer
}

// checking holds the tests whose leak check Serve registered.
var checking sync.Map

// Serve runs h on Arka's HTTP/1.1 engine on a plain loopback listener and
// on its HTTP/1.1 and HTTP/2 engines behind one TLS listener (a
// self-signed certificate; ALPN picks the engine, as package server
// does), with the engines' default limits. The engines' log goes to
// Env.Log.
//
// When the test ends the engines shut down (in-flight requests get five
// seconds), then h's Close method runs if it has one, and then no
// goroutine started by Arka's code since the test's first Serve may still
// run (CheckLeaks).
func Serve(t testing.TB, h http.Handler) *Env {
	t.Helper()
	if _, again := checking.LoadOrStore(t, true); !again {
		// Once per test, after every Serve's shutdown (cleanups run last
		// registered first): a second Serve's leak check would count the
		// first one's connections.
		before := Goroutines()
		t.Cleanup(func() {
			checking.Delete(t)
			CheckLeaks(t, before)
		})
	}
	plain, secure := testkit.Listen(t), testkit.Listen(t)
	_, _, cert := testkit.Cert(t, "localhost")
	e := &Env{Addrs: Addrs{HTTP: plain.Addr().String(), HTTPS: secure.Addr().String()}, Log: &testkit.LogBuffer{}}
	log := slog.New(slog.NewTextHandler(e.Log, nil))
	s1 := &h1.Server{Handler: h, Logger: log}
	s2 := &h2.Server{Handler: h, Logger: log}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}

	var wg sync.WaitGroup
	var hsMu sync.Mutex
	handshaking := map[net.Conn]bool{}
	wg.Add(2)
	go func() {
		defer wg.Done()
		s1.Serve(plain)
	}()
	go func() {
		defer wg.Done()
		for {
			c, err := secure.Accept()
			if err != nil {
				return
			}
			hsMu.Lock()
			handshaking[c] = true
			hsMu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				tc := tls.Server(c, cfg)
				tc.SetDeadline(time.Now().Add(10 * time.Second))
				err := tc.Handshake()
				hsMu.Lock()
				delete(handshaking, c)
				hsMu.Unlock()
				if err != nil {
					tc.Close()
					return
				}
				tc.SetDeadline(time.Time{})
				st := tc.ConnectionState()
				if st.NegotiatedProtocol == "h2" {
					s2.ServeConn(tc, &st)
				} else {
					s1.ServeConn(tc, &st)
				}
			}()
		}
	}()
	t.Cleanup(func() {
		e.CloseClients()
		plain.Close()
		secure.Close()
		hsMu.Lock()
		for c := range handshaking {
			c.Close()
		}
		hsMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var sw sync.WaitGroup
		sw.Add(2)
		go func() { defer sw.Done(); s1.Shutdown(ctx) }()
		go func() { defer sw.Done(); s2.Shutdown(ctx) }()
		sw.Wait()
		s1.Close()
		s2.Close()
		wg.Wait()
		if c, ok := h.(io.Closer); ok {
			c.Close()
		}
	})
	return e
}

// Goroutines returns the stacks of all goroutines, by goroutine id.
func Goroutines() map[string]string {
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

// runsArka says whether a goroutine's stack has a frame of Arka's code
// other than the shared test fixtures under tests/ (a php-fpm or ACME CA
// a test started, restarted by the test itself, is the test's to stop).
func runsArka(stack string) bool {
	for _, line := range strings.Split(stack, "\n") {
		if strings.Contains(line, "github.com/arkaweb/arka/") && !strings.Contains(line, "github.com/arkaweb/arka/tests/") {
			return true
		}
	}
	return false
}

// grace is how long CheckLeaks waits for stragglers.
var grace = 5 * time.Second

// CheckLeaks reports goroutines running Arka's code that were not running
// before (a Goroutines result): the server's own must have ended with its
// shutdown. Stragglers get five seconds (a connection closing, an old
// configuration retiring). A test that already failed is not checked: it
// may leave a request hanging on purpose.
func CheckLeaks(t testing.TB, before map[string]string) {
	t.Helper()
	if t.Failed() {
		return
	}
	deadline := time.Now().Add(grace)
	for {
		var leaked []string
		for id, g := range Goroutines() {
			if _, ok := before[id]; ok || !runsArka(g) || strings.Contains(g, "enginetest.CheckLeaks") {
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
