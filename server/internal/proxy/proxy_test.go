package proxy

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/tests/testkit"
)

// echoURI answers with the request target the upstream received.
var echoURI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, r.RequestURI)
})

func TestStripPrefixKeepsEncodedPathAndQuery(t *testing.T) {
	up := startUpstream(t, echoURI)
	strip, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, StripPrefix: true})
	keep, _ := newProxy(t, config.Proxy{Upstreams: []string{"http://" + up.addr}})
	cases := []struct {
		h        http.Handler
		in, want string
	}{
		{strip, "/proxy/a?b=1", "/a?b=1"},
		{strip, "/proxy/", "/"},
		{strip, "/proxy/a%2Fb%20c/%41?x=%41&y=a+b&&z", "/a%2Fb%20c/%41?x=%41&y=a+b&&z"},
		{strip, "/proxy/a?", "/a?"},
		{strip, "/pr%6Fxy/a%2Fb", "/a%2Fb"}, // prefix itself encoded: the rest as the client wrote it
		{strip, "/proxy/items/a%2F%2Fb", "/items/a%2F%2Fb"},
		{keep, "/proxy/a%2Fb?q=%zz", "/proxy/a%2Fb?q=%zz"},
	}
	for _, c := range cases {
		forEachFront(t, c.h, func(t *testing.T, f front) {
			resp, body := get(t, f.client, f.url(c.in))
			wantProto(t, f, resp)
			if resp.StatusCode != 200 || body != c.want {
				t.Errorf("%s -> %d %q, want %q", c.in, resp.StatusCode, body, c.want)
			}
		})
	}
}

// dumpHeaders answers with the request's Host and header fields, one per
// line, sorted by the client.
var dumpHeaders = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "Host: %s\n", r.Host)
	for k, vv := range r.Header {
		for _, v := range vv {
			fmt.Fprintf(w, "%s: %s\n", k, v)
		}
	}
})

func headerLines(body string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		if _, ok := m[k]; ok {
			m[k] += "|" + v
		} else {
			m[k] = v
		}
	}
	return m
}

func TestForwardedHeaders(t *testing.T) {
	up := startUpstream(t, dumpHeaders)
	on, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	off, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, ForwardHeaders: ptr(false)})
	trusting, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	hosted, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, ForwardHeaders: ptr(false), HostHeader: "app.internal"})
	spoof := []string{"X-Forwarded-For", "6.6.6.6", "X-Forwarded-Proto", "gopher", "X-Forwarded-Host", "evil.example",
		"Forwarded", "for=6.6.6.6", "Host", "site.example:8443"}

	t.Run("on", func(t *testing.T) {
		forEachFront(t, on, func(t *testing.T, f front) {
			_, body := get(t, f.client, f.url("/proxy/"), spoof...)
			h := headerLines(body)
			proto := "https"
			if f.name == "h1" {
				proto = "http"
			}
			want := map[string]string{
				"Host":              "site.example:8443",
				"X-Forwarded-For":   "127.0.0.1",
				"X-Forwarded-Proto": proto,
				"X-Forwarded-Host":  "site.example:8443",
				"Forwarded":         `for=127.0.0.1;host="site.example:8443";proto=` + proto,
				"X-Real-Ip":         "127.0.0.1",
			}
			for k, v := range want {
				if h[k] != v {
					t.Errorf("%s = %q, want %q", k, h[k], v)
				}
			}
		})
	})
	t.Run("trusted", func(t *testing.T) {
		f := startFront(t, "h1", trusting)
		_, body := get(t, f.client, f.url("/proxy/"), spoof...)
		h := headerLines(body)
		if h["X-Forwarded-For"] != "6.6.6.6, 127.0.0.1" || h["Forwarded"] != `for=6.6.6.6, for=127.0.0.1;host="site.example:8443";proto=http` ||
			h["X-Forwarded-Proto"] != "gopher" || h["X-Forwarded-Host"] != "evil.example" {
			t.Errorf("a trusted proxy's chain should be kept and extended, got %q", body)
		}
	})
	t.Run("off", func(t *testing.T) {
		forEachFront(t, off, func(t *testing.T, f front) {
			_, body := get(t, f.client, f.url("/proxy/"), spoof...)
			h := headerLines(body)
			for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded", "X-Real-Ip"} {
				if v, ok := h[k]; ok {
					t.Errorf("forward_headers = false, yet %s: %q reached the upstream", k, v)
				}
			}
			if h["Host"] != "site.example:8443" {
				t.Errorf("Host = %q, want the client's", h["Host"])
			}
		})
	})
	t.Run("host_header", func(t *testing.T) {
		f := startFront(t, "h2", hosted)
		_, body := get(t, f.client, f.url("/proxy/"), spoof...)
		if h := headerLines(body); h["Host"] != "app.internal" {
			t.Errorf("Host = %q, want app.internal", h["Host"])
		}
	})
}

// TestRequestHeaderHardening: field names with an underscore are dropped
// (nginx's underscores_in_headers off), so X_Forwarded_For cannot pass for
// X-Forwarded-For in an application that maps "_" and "-" alike; Proxy is
// dropped (httpoxy); X-Real-IP is the client's address unless the client
// is a trusted proxy; with forward_headers = false none of the forwarding
// fields reaches the upstream, whatever the client sent.
func TestRequestHeaderHardening(t *testing.T) {
	up := startUpstream(t, dumpHeaders)
	on, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	off, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, ForwardHeaders: ptr(false)})
	trusting, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	sent := []string{"X_Forwarded_For", "6.6.6.6", "X-Forwarded_Proto", "https", "Foo_Bar", "x",
		"Proxy", "http://evil.example:3128", "X-Real-IP", "6.6.6.6", "X-Normal", "kept"}
	for _, c := range []struct {
		name    string
		h       http.Handler
		realIP  string // "" = absent
		forward bool
	}{
		{"on", on, "127.0.0.1", true},
		{"off", off, "", false},
		{"trusted", trusting, "127.0.0.1", true}, // its X-Real-IP is not the site's client_ip_header (QA M1)
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachFront(t, c.h, func(t *testing.T, f front) {
				_, body := get(t, f.client, f.url("/proxy/"), sent...)
				h := headerLines(body)
				for k, v := range h {
					if strings.Contains(k, "_") || strings.EqualFold(k, "Proxy") {
						t.Errorf("%s: %q reached the upstream", k, v)
					}
				}
				if h["X-Normal"] != "kept" {
					t.Errorf("X-Normal = %q", h["X-Normal"])
				}
				if got, ok := h["X-Real-Ip"]; got != c.realIP || ok != (c.realIP != "") {
					t.Errorf("X-Real-IP = %q, want %q", got, c.realIP)
				}
				if _, ok := h["X-Forwarded-For"]; ok != c.forward {
					t.Errorf("X-Forwarded-For present: %v, want %v", ok, c.forward)
				}
				if c.forward && h["X-Forwarded-For"] != "127.0.0.1" {
					t.Errorf("X-Forwarded-For = %q: an underscore field was taken for it", h["X-Forwarded-For"])
				}
			})
		})
	}
}

// TestForwardedChainConsistent: behind a trusted proxy, Forwarded and
// X-Forwarded-Proto/-Host name the same original request: a front proxy
// that sends only X-Forwarded-* gets its chain turned into Forwarded
// elements (so Forwarded does not say proto=http for a client that used
// https), and one that sends only Forwarded gets X-Forwarded-Proto/-Host
// from its first element. This hop's own element still says how Arka was
// reached (RFC 7239 section 4).
func TestForwardedChainConsistent(t *testing.T) {
	up := startUpstream(t, dumpHeaders)
	trusting, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	cases := []struct {
		name string
		sent []string
		want map[string]string
	}{
		{"x-forwarded only", []string{"X-Forwarded-For", "203.0.113.7, 2001:db8::1", "X-Forwarded-Proto", "https",
			"X-Forwarded-Host", "www.example", "Host", "app.internal"}, map[string]string{
			"X-Forwarded-For":   "203.0.113.7, 2001:db8::1, 127.0.0.1",
			"X-Forwarded-Proto": "https",
			"X-Forwarded-Host":  "www.example",
			"Forwarded":         `for=203.0.113.7;host=www.example;proto=https, for="[2001:db8::1]", for=127.0.0.1;host=app.internal;proto=http`,
		}},
		{"proto only", []string{"X-Forwarded-Proto", "https", "Host", "app.internal"}, map[string]string{
			"X-Forwarded-For":   "127.0.0.1",
			"X-Forwarded-Proto": "https",
			"X-Forwarded-Host":  "app.internal",
			"Forwarded":         `for=unknown;proto=https, for=127.0.0.1;host=app.internal;proto=http`,
		}},
		{"forwarded only", []string{"Forwarded", `for=203.0.113.7;proto=https;host="www.example:8443"`, "Host", "app.internal"}, map[string]string{
			"X-Forwarded-For":   "127.0.0.1",
			"X-Forwarded-Proto": "https",
			"X-Forwarded-Host":  "www.example:8443",
			"Forwarded":         `for=203.0.113.7;proto=https;host="www.example:8443", for=127.0.0.1;host=app.internal;proto=http`,
		}},
		{"nothing", []string{"Host", "app.internal"}, map[string]string{
			"X-Forwarded-For":   "127.0.0.1",
			"X-Forwarded-Proto": "http",
			"X-Forwarded-Host":  "app.internal",
			"Forwarded":         `for=127.0.0.1;host=app.internal;proto=http`,
		}},
	}
	forEachFront(t, trusting, func(t *testing.T, f front) {
		scheme := "http" // how Arka was reached: this hop's proto
		if f.name != "h1" {
			scheme = "https"
		}
		for _, c := range cases {
			_, body := get(t, f.client, f.url("/proxy/"), c.sent...)
			h := headerLines(body)
			for k, v := range c.want {
				v = strings.ReplaceAll(v, "host=app.internal;proto=http", "host=app.internal;proto="+scheme)
				if c.name == "nothing" && k == "X-Forwarded-Proto" {
					v = scheme
				}
				if h[k] != v {
					t.Errorf("%s: %s = %q, want %q", c.name, k, h[k], v)
				}
			}
		}
	})
}

func TestHopByHopRemovedBothWays(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "X-Up-Hop")
		w.Header().Set("X-Up-Hop", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("Proxy-Connection", "keep-alive")
		w.Header().Set("Upgrade", "h2c")
		w.Header().Set("X-End-To-End", "kept")
		dumpHeaders(w, r)
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	f := startFront(t, "h1", h)
	// A raw request, so the client library adds and removes nothing.
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /proxy/ HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"+
		"Keep-Alive: 300\r\nProxy-Connection: keep-alive\r\nTE: trailers, deflate\r\nUpgrade: foo/1\r\nX-Kept: yes\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	got := headerLines(string(b))
	for _, k := range []string{"X-Hop", "Keep-Alive", "Proxy-Connection", "Upgrade", "Connection"} {
		if v, ok := got[k]; ok {
			t.Errorf("request field %s: %q reached the upstream", k, v)
		}
	}
	if got["X-Kept"] != "yes" {
		t.Errorf("end-to-end request field lost: %q", b)
	}
	if got["Te"] != "trailers" {
		t.Errorf("TE = %q, want only \"trailers\"", got["Te"])
	}
	for _, k := range []string{"X-Up-Hop", "Keep-Alive", "Proxy-Connection", "Upgrade"} {
		if v := resp.Header.Get(k); v != "" {
			t.Errorf("response field %s: %q reached the client", k, v)
		}
	}
	if resp.Header.Get("X-End-To-End") != "kept" {
		t.Errorf("end-to-end response field lost")
	}
}

// gatedReader yields size bytes, but after the first gateAt bytes it waits
// until the far side confirms it has received them: if the proxy buffered
// the whole body before forwarding, it would never be released.
type gatedReader struct {
	size, gateAt int64
	sent         atomic.Int64
	release      chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	n := g.sent.Load()
	if n >= g.size {
		return 0, io.EOF
	}
	if n >= g.gateAt {
		select {
		case <-g.release:
		case <-time.After(20 * time.Second):
			return 0, fmt.Errorf("the far side never received the first %d bytes: the proxy is buffering", g.gateAt)
		}
	}
	if int64(len(p)) > g.size-n {
		p = p[:g.size-n]
	}
	if n < g.gateAt && int64(len(p)) > g.gateAt-n {
		p = p[:g.gateAt-n]
	}
	for i := range p {
		p[i] = byte((n + int64(i)) * 7)
	}
	g.sent.Add(int64(len(p)))
	return len(p), nil
}

func patternSum(size int64) [32]byte {
	h := sha256.New()
	buf := make([]byte, 64<<10)
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		for i := int64(0); i < n; i++ {
			buf[i] = byte((off + i) * 7)
		}
		h.Write(buf[:n])
		off += n
	}
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

const bigSize = 10 << 20

func TestUploadStreams10MB(t *testing.T) {
	want := patternSum(bigSize)
	var release chan struct{}
	var mu sync.Mutex
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		var n int64
		buf := make([]byte, 32<<10)
		released := false
		for {
			m, err := r.Body.Read(buf)
			h.Write(buf[:m])
			n += int64(m)
			if n >= 1<<20 && !released {
				released = true
				mu.Lock()
				close(release)
				mu.Unlock()
			}
			if err != nil {
				break
			}
		}
		fmt.Fprintf(w, "%d %x %s", n, h.Sum(nil), r.Header.Get("Transfer-Encoding")+r.Header.Get("Content-Length"))
	}))
	streaming := false // request_buffering = false
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, RequestBuffering: &streaming})
	for _, known := range []bool{true, false} {
		forEachFront(t, h, func(t *testing.T, f front) {
			mu.Lock()
			release = make(chan struct{})
			g := &gatedReader{size: bigSize, gateAt: 1 << 20, release: release}
			mu.Unlock()
			req, _ := http.NewRequest("PUT", f.url("/proxy/upload"), io.NopCloser(g))
			if known {
				req.ContentLength = bigSize
			}
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var n int64
			var sum string
			fmt.Sscanf(string(b), "%d %s", &n, &sum)
			if resp.StatusCode != 200 || n != bigSize || sum != fmt.Sprintf("%x", want) {
				t.Fatalf("known length %v: upstream got %q (status %d)", known, b, resp.StatusCode)
			}
		})
	}
}

func TestDownloadStreams10MB(t *testing.T) {
	var mu sync.Mutex
	var release chan struct{}
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		rel := release
		mu.Unlock()
		if r.URL.Query().Get("cl") == "1" {
			w.Header().Set("Content-Length", fmt.Sprint(bigSize))
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		g := &gatedReader{size: bigSize, gateAt: 1 << 20, release: rel}
		buf := make([]byte, 32<<10)
		for {
			n, err := g.Read(buf)
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if g.sent.Load() == 1<<20 {
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	want := patternSum(bigSize)
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	for _, q := range []string{"?cl=1", "?cl=0"} {
		forEachFront(t, h, func(t *testing.T, f front) {
			mu.Lock()
			release = make(chan struct{})
			rel := release
			mu.Unlock()
			resp, err := f.client.Get(f.url("/proxy/big" + q))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sum := sha256.New()
			if _, err := io.CopyN(sum, resp.Body, 1<<20); err != nil {
				t.Fatalf("first MiB: %v", err)
			}
			close(rel) // the client has the first MiB before the upstream sends more
			n, err := io.Copy(sum, resp.Body)
			if err != nil || n+1<<20 != bigSize || fmt.Sprintf("%x", sum.Sum(nil)) != fmt.Sprintf("%x", want) {
				t.Fatalf("%s: got %d more bytes, err %v", q, n, err)
			}
		})
	}
}

func TestServerSentEventsFlush(t *testing.T) {
	acks := make(chan struct{})
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(w, "data: event %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-acks: // the client saw this event before the next is written
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Second):
				return
			}
		}
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	for _, coded := range []bool{false, true} {
		var fh http.Handler = h
		if coded {
			fh = withCoding(h)
		}
		forEachFront(t, fh, func(t *testing.T, f front) {
			resp, err := f.client.Get(f.url("/proxy/events"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			for i := 1; i <= 3; i++ {
				line, err := br.ReadString('\n')
				if err != nil || line != fmt.Sprintf("data: event %d\n", i) {
					t.Fatalf("event %d: %q, %v", i, line, err)
				}
				br.ReadString('\n')
				acks <- struct{}{}
			}
		})
	}
}

func TestUpstreamDownIs502(t *testing.T) {
	dead := testkit.FreeAddr(t) // nothing listens there
	h, logs := newProxy(t, config.Proxy{Upstreams: []string{dead}})
	forEachFront(t, h, func(t *testing.T, f front) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", f.url("/proxy/x"), nil)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d, want 502", resp.StatusCode)
		}
	})
	l := logs.String()
	if !strings.Contains(l, "upstream="+dead) || !strings.Contains(l, "connection refused") || !strings.Contains(l, "route=/proxy/") {
		t.Errorf("log should name the upstream and the cause:\n%s", l)
	}
	if n := strings.Count(strings.TrimSpace(strings.Split(l, "\n")[0]), "\n"); n != 0 {
		t.Errorf("one line per failure")
	}
}

func TestUpstreamSlowIs504(t *testing.T) {
	stop := make(chan struct{})
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer close(stop)
	h, logs := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, ResponseHeaderTimeout: dur(200 * time.Millisecond)})
	forEachFront(t, h, func(t *testing.T, f front) {
		resp, _ := get(t, f.client, f.url("/proxy/slow"))
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("status %d, want 504", resp.StatusCode)
		}
	})
	if !strings.Contains(logs.String(), "no response header within 200ms") {
		t.Errorf("log: %s", logs.String())
	}
}

func TestClientGoneReleasesUpstream(t *testing.T) {
	for _, p := range protos { // an HTTP/2 client leaves with RST_STREAM, not by closing
		t.Run(p, func(t *testing.T) {
			upGone := make(chan struct{})
			entered := make(chan struct{})
			up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(200)
				w.(http.Flusher).Flush()
				close(entered)
				<-r.Context().Done() // the proxy closed its connection
				close(upGone)
			}))
			h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
			f := startFront(t, p, h)
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", f.url("/proxy/poll"), nil)
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			<-entered
			cancel()
			resp.Body.Close()
			select {
			case <-upGone:
			case <-time.After(20 * time.Second):
				t.Fatal("the upstream request was not cancelled after the client left")
			}
		})
	}
}

// whoAmI answers with a name.
func whoAmI(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) })
}

func TestRoundRobinSpread(t *testing.T) {
	var addrs []string
	for _, n := range []string{"a", "b", "c"} {
		addrs = append(addrs, startUpstream(t, whoAmI(n)).addr)
	}
	h, _ := newProxy(t, config.Proxy{Upstreams: addrs})
	f := startFront(t, "h1", h)
	count := map[string]int{}
	for i := 0; i < 30; i++ {
		_, b := get(t, f.client, f.url("/proxy/"))
		count[b]++
	}
	if count["a"] != 10 || count["b"] != 10 || count["c"] != 10 {
		t.Errorf("round robin spread %v, want 10 each", count)
	}
}

func TestLeastConn(t *testing.T) {
	hold := make(chan struct{})
	held := make(chan struct{}, 1)
	busy := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/hold") {
			held <- struct{}{}
			<-hold
		}
		io.WriteString(w, "busy")
	}))
	idle := startUpstream(t, whoAmI("idle"))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{busy.addr, idle.addr}, LB: "least_conn"})
	f := startFront(t, "h1", h)
	// Park one request on whichever upstream takes it; make sure it is "busy".
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			resp, err := f.client.Get(f.url("/proxy/hold"))
			if err != nil {
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) == "busy" {
				return
			}
		}
	}()
	<-held
	for i := 0; i < 10; i++ {
		if _, b := get(t, f.client, f.url("/proxy/x")); b != "idle" {
			t.Fatalf("request %d went to %q while the other upstream was idle", i, b)
		}
	}
	close(hold)
	<-done
}

func TestDeadUpstreamSkipped(t *testing.T) {
	dead := testkit.FreeAddr(t) // nothing listens there
	live := startUpstream(t, whoAmI("live"))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{dead, live.addr}, FailTimeout: dur(time.Minute)})
	forEachFront(t, h, func(t *testing.T, f front) {
		for i := 0; i < 20; i++ {
			if resp, b := get(t, f.client, f.url("/proxy/")); resp.StatusCode != 200 || b != "live" {
				t.Fatalf("request %d: %d %q", i, resp.StatusCode, b)
			}
		}
	})
	st := h.Stats()
	if st[0].Healthy || st[0].Dials != 1 || st[0].Failures != 1 {
		t.Errorf("the dead upstream should have been tried once, then skipped: %+v", st[0])
	}
	if !st[1].Healthy || st[1].Requests < 60 {
		t.Errorf("live upstream: %+v", st[1])
	}
}

func TestActiveHealthCheck(t *testing.T) {
	var sick atomic.Bool
	checked := make(chan bool, 100)
	a := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			if sick.Load() {
				w.WriteHeader(503)
			}
			select {
			case checked <- sick.Load():
			default:
			}
			return
		}
		io.WriteString(w, "a")
	}))
	b := startUpstream(t, whoAmI("b"))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{a.addr, b.addr},
		Health: &config.Health{Path: "/healthz", Interval: dur(20 * time.Millisecond)}})
	f := startFront(t, "h1", h)
	sick.Store(true)
	// Two checks that saw the failure: the first one's verdict is stored
	// before the second runs.
	for n := 0; n < 2; {
		if <-checked {
			n++
		}
	}
	for i := 0; i < 10; i++ {
		if _, body := get(t, f.client, f.url("/proxy/")); body != "b" {
			t.Fatalf("request %d reached the unhealthy upstream", i)
		}
	}
	if h.Stats()[0].Healthy {
		t.Error("stats should show the upstream unhealthy")
	}
	sick.Store(false)
	for n := 0; n < 2; {
		if !<-checked {
			n++
		}
	}
	seen := map[string]bool{}
	for i := 0; i < 4; i++ {
		_, body := get(t, f.client, f.url("/proxy/"))
		seen[body] = true
	}
	if !seen["a"] {
		t.Error("the upstream did not come back after passing its check")
	}
}

func TestKeepAliveReuse(t *testing.T) {
	up := startUpstream(t, whoAmI("ok"))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	f := startFront(t, "h2", h)
	const n, workers = 1000, 8
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= n {
				resp, err := f.client.Get(f.url("/proxy/"))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	conns := up.conns.Load()
	t.Logf("keep-alive reuse: %d proxied requests over %d upstream connections (%d concurrent clients)", n, conns, workers)
	if conns > workers {
		t.Errorf("%d upstream connections for %d requests from %d concurrent clients", conns, n, workers)
	}
	if st := h.Stats()[0]; st.Dials != uint64(conns) || st.Idle == 0 {
		t.Errorf("stats %+v, upstream saw %d connections", st, conns)
	}
}

func TestStaleKeptConnectionRetried(t *testing.T) {
	up := startUpstream(t, whoAmI("ok"))
	h, logs := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	f := startFront(t, "h1", h)
	for i := 0; i < 5; i++ {
		get(t, f.client, f.url("/proxy/"))
		// The upstream closes its idle connection, as its keep-alive
		// timeout would; the proxy's next request must not fail for it.
		up.closeIdle()
		if resp, b := get(t, f.client, f.url("/proxy/")); resp.StatusCode != 200 || b != "ok" {
			t.Fatalf("after the upstream closed a kept connection: %d %q\n%s", resp.StatusCode, b, logs)
		}
	}
	// A POST is not replayed, but a kept connection the upstream closed is
	// found out before the POST is sent on it.
	for i := 0; i < 5; i++ {
		get(t, f.client, f.url("/proxy/"))
		up.closeIdle()
		resp, err := f.client.Post(f.url("/proxy/"), "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST after the upstream closed a kept connection: %d\n%s", resp.StatusCode, logs)
		}
	}
}

// TestStaleNonIdempotentLogged: a POST on a kept connection that the
// upstream closes without answering (it crashed handling it, or closed the
// connection just as the POST went out) is not sent again, and its 502 is
// logged like any other, though a replayed request's stale connection is
// not.
func TestStaleNonIdempotentLogged(t *testing.T) {
	var posts atomic.Int64
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
			io.Copy(io.Discard, r.Body)
			nc, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				nc.Close()
			}
			return
		}
		io.WriteString(w, "ok")
	}))
	h, logs := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	f := startFront(t, "h1", h)
	get(t, f.client, f.url("/proxy/"))
	resp, err := f.client.Post(f.url("/proxy/"), "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || posts.Load() != 1 {
		t.Fatalf("POST: %d, upstream saw %d POSTs; want 502 and 1", resp.StatusCode, posts.Load())
	}
	if l := logs.String(); !strings.Contains(l, "upstream failed") || !strings.Contains(l, "method=POST") {
		t.Errorf("the 502 is not logged:\n%s", l)
	}
}

func TestUnixSocketUpstream(t *testing.T) {
	addr := startUnixUpstream(t, echoURI)
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{addr}, StripPrefix: true})
	forEachFront(t, h, func(t *testing.T, f front) {
		for i := 0; i < 3; i++ {
			if resp, b := get(t, f.client, f.url("/proxy/sock?x=1")); resp.StatusCode != 200 || b != "/sock?x=1" {
				t.Fatalf("%d %q", resp.StatusCode, b)
			}
		}
	})
	if st := h.Stats()[0]; st.Dials > 3 {
		t.Errorf("unix socket connections not kept: %+v", st)
	}
}

// TestTrailersBothWays: trailers go both ways; of the upstream's, only
// those its Trailer field announced and that may be trailers (not
// Set-Cookie, RFC 9110 section 6.5.1) reach the client.
func TestTrailersBothWays(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Trailer", "X-Checksum, Set-Cookie")
		io.WriteString(w, "body;")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Checksum", "req="+r.Trailer.Get("X-Req-Sum"))
		w.Header().Set("Set-Cookie", "evil=1")
		w.Header().Set(http.TrailerPrefix+"X-Late", "unannounced")
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	forEachFront(t, h, func(t *testing.T, f front) {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("POST", f.url("/proxy/t"), pr)
		req.Trailer = http.Header{"X-Req-Sum": nil}
		go func() {
			io.WriteString(pw, "payload")
			req.Trailer.Set("X-Req-Sum", "42")
			pw.Close()
		}()
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "body;" || resp.Trailer.Get("X-Checksum") != "req=42" || len(resp.Trailer) != 1 || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("body %q trailers %v header %v", b, resp.Trailer, resp.Header)
		}
	})
}

func TestHeadAndBodilessStatuses(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/304":
			w.Header().Set("Etag", `"x"`)
			w.WriteHeader(304)
		case "/204":
			w.WriteHeader(204)
		default:
			w.Header().Set("Content-Length", "12345")
			if r.Method != "HEAD" {
				w.Write(make([]byte, 12345))
			}
		}
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, StripPrefix: true})
	forEachFront(t, h, func(t *testing.T, f front) {
		for i := 0; i < 3; i++ { // the connection stays usable after each
			req, _ := http.NewRequest("HEAD", f.url("/proxy/file"), nil)
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.ContentLength != 12345 {
				t.Errorf("HEAD: %d, Content-Length %d", resp.StatusCode, resp.ContentLength)
			}
			if resp, _ := get(t, f.client, f.url("/proxy/304")); resp.StatusCode != 304 || resp.Header.Get("Etag") != `"x"` {
				t.Errorf("304: %d %v", resp.StatusCode, resp.Header)
			}
			if resp, _ := get(t, f.client, f.url("/proxy/204")); resp.StatusCode != 204 {
				t.Errorf("204: %d", resp.StatusCode)
			}
		}
	})
	if st := h.Stats()[0]; st.Dials != 1 {
		t.Errorf("bodiless responses should leave the connection reusable: %+v", st)
	}
}

// TestNoContentTypeAdded: a response the upstream sent without
// Content-Type reaches the client without one; the proxy does not guess
// (RFC 9110 section 8.3 leaves that to the recipient).
func TestNoContentTypeAdded(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // net/http: send none, do not sniff
		io.WriteString(w, "<html>plain bytes that look like HTML, long enough to be compressed if typed: "+strings.Repeat("x", 600))
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, StripPrefix: true})
	forEachFront(t, h, func(t *testing.T, f front) {
		resp, body := get(t, f.client, f.url("/proxy/x"), "Accept-Encoding", "gzip")
		if ct, ok := resp.Header["Content-Type"]; ok || resp.StatusCode != 200 || !strings.HasPrefix(string(body), "<html>") {
			t.Errorf("%d Content-Type %q (%v), Content-Encoding %q, body %.20q", resp.StatusCode, ct, ok, resp.Header.Get("Content-Encoding"), body)
		}
	})
}

func TestEarlyHintsRelayed(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "page")
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	forEachFront(t, h, func(t *testing.T, f front) {
		var hints []string
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			Got1xxResponse: func(code int, hdr textproto.MIMEHeader) error {
				if code == 103 {
					hints = append(hints, hdr["Link"]...)
				}
				return nil
			},
		})
		req, _ := http.NewRequestWithContext(ctx, "GET", f.url("/proxy/"), nil)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "page" || len(hints) != 1 || resp.Header.Get("Link") != "" {
			t.Errorf("body %q, hints %q, final Link %q", b, hints, resp.Header.Get("Link"))
		}
	})
}

func TestExpectContinue(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s expect=%q", b, r.Header.Get("Expect"))
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
	forEachFront(t, h, func(t *testing.T, f front) {
		req, _ := http.NewRequest("POST", f.url("/proxy/"), strings.NewReader("hello"))
		req.Header.Set("Expect", "100-continue")
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != `hello expect=""` {
			t.Errorf("got %q", b)
		}
	})
}

func TestCloseStopsHealthChecksAndIdleConns(t *testing.T) {
	var checks atomic.Int64
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			checks.Add(1)
		}
	}))
	h, err := New("/p/", complete(t, &config.Proxy{Upstreams: []string{up.addr}, Health: &config.Health{Path: "/healthz", Interval: dur(10 * time.Millisecond)}}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := startFront(t, "h1", h)
	get(t, f.client, f.url("/p/"))
	if h.Stats()[0].Idle != 1 {
		t.Fatalf("stats: %+v", h.Stats()[0])
	}
	h.Close()
	n := checks.Load()
	if st := h.Stats()[0]; st.Idle != 0 {
		t.Errorf("idle connections left after Close: %+v", st)
	}
	// After Close returned, no checker runs: a request to the upstream
	// directly is the last thing it sees.
	get(t, up.srv.Client(), up.srv.URL+"/after")
	if checks.Load() != n {
		t.Errorf("health checks ran after Close")
	}
}

// TestNewErrors: the configuration is checked once, by config (Load, or
// Complete for one built in Go); New refuses only a configuration that
// was never checked, and a tls_ca that CheckEnvironment did not read.
func TestNewErrors(t *testing.T) {
	for _, c := range []config.Proxy{
		{},
		{Upstreams: []string{"nope"}},
		{Upstreams: []string{"127.0.0.1:1"}, LB: "random"},
		{Upstreams: []string{"127.0.0.1:1"}, Health: &config.Health{Path: "healthz"}},
	} {
		if err := config.Complete(&c); err == nil {
			t.Errorf("%+v: config.Complete found no error", c)
		}
	}
	if h, err := New("/", &config.Proxy{Upstreams: []string{"127.0.0.1:1"}}, Options{}); err == nil {
		h.Close()
		t.Error("New took a configuration config did not parse")
	}
	c := complete(t, &config.Proxy{Upstreams: []string{"https://127.0.0.1:1"}, TLSCA: "/nonexistent/ca.pem"})
	if h, err := New("/", c, Options{}); err == nil || !strings.Contains(err.Error(), "tls_ca") {
		if h != nil {
			h.Close()
		}
		t.Errorf("tls_ca not read: err %v", err)
	}
}
