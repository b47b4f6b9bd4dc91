package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
)

// serverFields sets the fields the server sets on every response before
// the handler runs (server.go: Server, Strict-Transport-Security,
// X-Request-Id).
func serverFields(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Server"] = []string{"arka"}
		w.Header()["Strict-Transport-Security"] = []string{"max-age=600"}
		w.Header()["X-Request-Id"] = []string{"ours"}
		h.ServeHTTP(w, r)
	})
}

// TestInterimFields: an upstream 103 is relayed with its own fields less
// framing and hop-by-hop ones and never in place of the server's, and the
// final response carries exactly the fields it has without the 103
// (RFC 8297 section 2, RFC 9110 section 15.2).
func TestInterimFields(t *testing.T) {
	eachFront(t, func(t *testing.T, proto string) {
		up, stop := rawUpstream(t, func(path string) (string, bool) {
			return "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\nContent-Length: 999\r\n" +
				"Server: evil\r\nX-Request-Id: forged\r\nConnection: X-Hop\r\nX-Hop: 1\r\nProxy-Foo: 1\r\n" +
				"Strict-Transport-Security: max-age=1\r\n\r\n" +
				"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Up: 1\r\n\r\nc103\n", false
		})
		h, _ := newProxy(t, config.Proxy{Upstreams: []string{up}})
		f := startFront(t, proto, serverFields(h))
		t.Cleanup(stop)
		for range 2 {
			var mu sync.Mutex
			var hints []http.Header
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				Got1xxResponse: func(code int, hdr textproto.MIMEHeader) error {
					mu.Lock()
					hints = append(hints, http.Header(hdr).Clone())
					mu.Unlock()
					return nil
				},
			})
			req, _ := http.NewRequestWithContext(ctx, "GET", f.url("/proxy/c103"), nil)
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "c103\n" || resp.Header.Get("X-Up") != "1" || resp.Header.Get("Link") != "" {
				t.Errorf("final: body %q header %v", b, resp.Header)
			}
			for k, want := range map[string]string{"Server": "arka", "Strict-Transport-Security": "max-age=600", "X-Request-Id": "ours"} {
				if got := resp.Header.Values(k); len(got) != 1 || got[0] != want {
					t.Errorf("final %s: %q, want %q", k, got, want)
				}
			}
			mu.Lock()
			if len(hints) != 1 {
				t.Fatalf("1xx responses: %v", hints)
			}
			hh := hints[0]
			mu.Unlock()
			if hh.Get("Link") != "</s.css>; rel=preload" {
				t.Errorf("103 Link %q", hh.Get("Link"))
			}
			for _, k := range []string{"Content-Length", "X-Hop", "Connection", "Proxy-Foo"} {
				if v, ok := hh[k]; ok {
					t.Errorf("103 relayed %s: %q", k, v)
				}
			}
			for k, want := range map[string]string{"Server": "arka", "X-Request-Id": "ours", "Strict-Transport-Security": "max-age=600"} {
				if got := hh.Values(k); len(got) > 1 || len(got) == 1 && got[0] != want || strings.Contains(strings.Join(got, ""), "evil") {
					t.Errorf("103 %s: %q", k, got)
				}
			}
		}
	})
}

// eachFront runs fn as a subtest per front protocol, for tests that
// start their own upstream, proxy and front (startFront) in it.
func eachFront(t *testing.T, fn func(t *testing.T, proto string)) {
	for _, p := range protos {
		t.Run(p, func(t *testing.T) { fn(t, p) })
	}
}

// TestUpstreamHeadLimit: an upstream response head larger than
// limits.UpstreamHeaderBytes, as read or counted as an HTTP/2 header list
// (RFC 9113 section 6.5.2), is answered 502 and logged; one just under it
// is relayed.
func TestUpstreamHeadLimit(t *testing.T) {
	heads := map[string]string{
		// 30 KiB in one field: under the limit.
		"fits": "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 30<<10) + "\r\nContent-Length: 2\r\n\r\nok",
		// 200 KB in one field.
		"field": "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 200_000) + "\r\nContent-Length: 2\r\n\r\nok",
		// 1,000 fields of 6 bytes: 6 KB read, 34 KB as a header list.
		"list": "HTTP/1.1 200 OK\r\n" + strings.Repeat("A: b\r\n", 1000) + "Content-Length: 2\r\n\r\nok",
	}
	eachFront(t, func(t *testing.T, proto string) {
		up, stop := rawUpstream(t, func(path string) (string, bool) {
			return heads[strings.TrimPrefix(path, "/")], false
		})
		h, logs := newProxy(t, config.Proxy{Upstreams: []string{up}, StripPrefix: true})
		f := startFront(t, proto, h)
		t.Cleanup(stop)
		resp, body := get(t, f.client, f.url("/proxy/fits"))
		if resp.StatusCode != 200 || body != "ok" || len(resp.Header.Get("X-Big")) != 30<<10 {
			t.Errorf("fits: %d %q, X-Big %d bytes", resp.StatusCode, body, len(resp.Header.Get("X-Big")))
		}
		for _, name := range []string{"field", "list"} {
			resp, body := get(t, f.client, f.url("/proxy/"+name))
			if resp.StatusCode != http.StatusBadGateway || body == "ok" || resp.Header.Get("X-Big") != "" || resp.Header.Get("A") != "" {
				t.Errorf("%s: %d %.40q, want 502", name, resp.StatusCode, body)
			}
		}
		if resp, body := get(t, f.client, f.url("/proxy/good")); resp.StatusCode != 200 || body != "good" {
			t.Errorf("after: %d %q", resp.StatusCode, body)
		}
		if n := strings.Count(logs.String(), "upstream sent too big header"); n != 2 {
			t.Errorf("%d log lines say why, want 2:\n%s", n, logs.String())
		}
	})
}

// TestBrokenBodyBuffered: with response buffering, an upstream body found
// broken before anything of the response reached the client is answered
// 502 (and logged so); one that breaks after the head went out (a pause
// flushed it) is cut off: the client never sees a complete response.
func TestBrokenBodyBuffered(t *testing.T) {
	eachFront(t, func(t *testing.T, proto string) {
		up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, bw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			bw.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Up: 1\r\n\r\n2\r\nok\r\n")
			if strings.HasSuffix(r.URL.Path, "/late") {
				bw.Flush()
				time.Sleep(100 * time.Millisecond)
			}
			bw.WriteString("zz\r\n")
			bw.Flush()
		}))
		h, logs := newProxy(t, config.Proxy{Upstreams: []string{up.addr}})
		f := startFront(t, proto, h)
		resp, err := f.client.Get(f.url("/proxy/now"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway || err != nil || strings.Contains(string(b), "ok") || resp.Header.Get("X-Up") != "" {
			t.Errorf("now: %d %v %.40q (%v), want 502 without the upstream's", resp.StatusCode, resp.Header, b, err)
		}
		if !strings.Contains(logs.String(), "status=502") {
			t.Errorf("log: %s", logs.String())
		}
		resp, err = f.client.Get(f.url("/proxy/late"))
		if err == nil {
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil || resp.StatusCode != 200 {
				t.Errorf("late: %d %q, want a 200 cut off", resp.StatusCode, b)
			}
		}
	})
}

// TestUpstreamLengthNormalized: a Content-Length with leading zeros is
// relayed as the number it is, and a 205 goes out without the content its
// upstream sent (RFC 9110 section 15.3.6), the upstream connection staying
// in step.
func TestUpstreamLengthNormalized(t *testing.T) {
	answers := map[string]string{
		"zeros": "HTTP/1.1 200 OK\r\nContent-Length: 0004\r\n\r\nabcd",
		"reset": "HTTP/1.1 205 Reset Content\r\nContent-Length: 5\r\n\r\nhello",
	}
	eachFront(t, func(t *testing.T, proto string) {
		up, stop := rawUpstream(t, func(path string) (string, bool) {
			return answers[strings.TrimPrefix(path, "/")], false
		})
		h, _ := newProxy(t, config.Proxy{Upstreams: []string{up}, StripPrefix: true})
		f := startFront(t, proto, h)
		t.Cleanup(stop)
		resp, body := get(t, f.client, f.url("/proxy/zeros"))
		if resp.StatusCode != 200 || body != "abcd" || resp.ContentLength != 4 {
			t.Errorf("zeros: %d %q length %d", resp.StatusCode, body, resp.ContentLength)
		}
		if proto == "h1" {
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, "GET /proxy/zeros HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			raw, _ := io.ReadAll(c)
			c.Close()
			if !strings.Contains(string(raw), "\r\nContent-Length: 4\r\n") {
				t.Errorf("zeros on the wire: %q", raw)
			}
		}
		for range 2 {
			resp, body = get(t, f.client, f.url("/proxy/reset"))
			if resp.StatusCode != http.StatusResetContent || body != "" {
				t.Errorf("reset: %d %q", resp.StatusCode, body)
			}
		}
		if resp, body := get(t, f.client, f.url("/proxy/good")); resp.StatusCode != 200 || body != "good" {
			t.Errorf("after: %d %q", resp.StatusCode, body)
		}
	})
}
