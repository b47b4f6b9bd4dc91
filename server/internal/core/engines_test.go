package core_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/h1"
	"github.com/arkaweb/arka/server/internal/h2"
	"github.com/arkaweb/arka/tests/testkit"
)

// engines serves h with the HTTP/1.1 engine (plain) and the HTTP/2 engine
// (TLS) and returns a client and base URL for each.
func engines(t *testing.T, h http.Handler) map[string][2]any {
	ln1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s1 := &h1.Server{Handler: h}
	go s1.Serve(ln1)
	t.Cleanup(func() { s1.Close() })

	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, _, cert := testkit.Cert(t, "localhost")
	s2 := &h2.Server{Handler: h}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
	go func() {
		for {
			c, err := ln2.Accept()
			if err != nil {
				return
			}
			go func() {
				tc := tls.Server(c, cfg)
				if tc.Handshake() != nil {
					tc.Close()
					return
				}
				st := tc.ConnectionState()
				s2.ServeConn(tc, &st)
			}()
		}
	}()
	t.Cleanup(func() { ln2.Close(); s2.Close() })
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	c2 := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	c1 := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	return map[string][2]any{
		"h1": {c1, "http://" + ln1.Addr().String()},
		"h2": {c2, "https://" + ln2.Addr().String()},
	}
}

// TestEnginesFollowCore: the response rules of package core hold on both
// engines alike: trailers declared and set with http.TrailerPrefix arrive
// after the body; Content-Type is sniffed; a finished handler's body gets
// its length; HEAD gets the GET's length; 204 loses a Content-Length and
// 304 keeps it; a body short of its declared length is not delivered as
// complete.
func TestEnginesFollowCore(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/trailers":
			w.Header().Set("Trailer", "X-Sum")
			w.WriteHeader(200)
			io.WriteString(w, "body")
			w.(http.Flusher).Flush()
			w.Header().Set("X-Sum", "42")
			w.Header().Set(http.TrailerPrefix+"x-late", "yes")
		case "/sniff", "/head":
			io.WriteString(w, "<!doctype html><p>hi")
		case "/204":
			w.Header().Set("Content-Length", "5")
			w.WriteHeader(204)
		case "/304":
			w.Header().Set("Content-Length", "5")
			w.WriteHeader(304)
		case "/short":
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "abc")
		}
	})
	for name, e := range engines(t, h) {
		c, base := e[0].(*http.Client), e[1].(string)
		t.Run(name, func(t *testing.T) {
			resp, err := c.Get(base + "/trailers")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "body" || resp.Trailer.Get("X-Sum") != "42" || resp.Trailer.Get("X-Late") != "yes" || resp.Header.Get("X-Sum") != "" {
				t.Errorf("trailers: body %q, trailer %v, header %v", b, resp.Trailer, resp.Header)
			}

			resp, err = c.Get(base + "/sniff")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || resp.ContentLength != 20 {
				t.Errorf("sniff: Content-Type %q, length %d", ct, resp.ContentLength)
			}

			resp, err = c.Head(base + "/head")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.Header.Get("Content-Length") != "20" {
				t.Errorf("HEAD: Content-Length %q, want the GET's 20", resp.Header.Get("Content-Length"))
			}

			for path, want := range map[string]string{"/204": "", "/304": "5"} {
				resp, err = c.Get(base + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := resp.Header.Get("Content-Length"); got != want {
					t.Errorf("%s: Content-Length %q, want %q", path, got, want)
				}
			}

			resp, err = c.Get(base + "/short")
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err == nil {
				t.Error("a body short of its Content-Length was delivered as complete")
			}
		})
	}
}
