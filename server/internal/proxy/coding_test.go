package proxy

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/encoding"
	"github.com/klauspost/compress/zstd"
)

// withCoding puts the server's content-coding middleware in front of h, as
// build.go does for proxy routes.
func withCoding(h http.Handler) http.Handler {
	return encoding.New(encoding.Options{MinSize: 512}).Wrap(h)
}

func TestResponsesGoThroughContentCoding(t *testing.T) {
	page := strings.Repeat("<p>Home Assistant says hello</p>\n", 200)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, page)
	zw.Close()
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/pre" {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gz.Bytes())
			return
		}
		io.WriteString(w, page)
	}))
	h, _ := newProxy(t, config.Proxy{Upstreams: []string{up.addr}, StripPrefix: true})
	forEachFront(t, withCoding(h), func(t *testing.T, f front) {
		// A transport that leaves Content-Encoding alone.
		c := *f.client
		tr := f.client.Transport.(*http.Transport).Clone()
		tr.DisableCompression = true
		c.Transport = tr
		defer tr.CloseIdleConnections()
		for _, tc := range []struct{ path, accept, want string }{
			{"/page", "gzip, deflate, br, zstd", "zstd"},
			{"/page", "br", "br"},
			{"/page", "gzip", "gzip"},
			{"/pre", "gzip, br, zstd", "gzip"}, // the upstream already encoded: left alone
		} {
			resp, body := get(t, &c, f.url("/proxy"+tc.path), "Accept-Encoding", tc.accept)
			if ce := resp.Header.Get("Content-Encoding"); ce != tc.want {
				t.Fatalf("%s with %q: Content-Encoding %q, want %q", tc.path, tc.accept, ce, tc.want)
			}
			if got := decode(t, tc.want, body); got != page {
				t.Fatalf("%s with %q: decoded body differs (%d bytes)", tc.path, tc.accept, len(got))
			}
		}
	})
}

func decode(t *testing.T, coding, body string) string {
	t.Helper()
	var r io.Reader
	switch coding {
	case "zstd":
		d, err := zstd.NewReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		r = d
	case "br":
		r = brotli.NewReader(strings.NewReader(body))
	case "gzip":
		g, err := gzip.NewReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r = g
	default:
		return body
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", coding, err)
	}
	return string(b)
}
