package core_test

// The response rules of package core as clients see them, once over both
// engines: HTTP/1.1, HTTP/1.1 with TLS and HTTP/2 (package enginetest).

import (
	"io"
	"net/http"
	"testing"

	"github.com/arkaweb/arka/server/internal/enginetest"
)

// As in net/http, a handler that sets Content-Type to nil sends none; one
// that leaves it unset gets a sniffed one.
func TestNilContentTypeNotSniffed(t *testing.T) {
	e := enginetest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/none" {
			w.Header()["Content-Type"] = nil
		}
		io.WriteString(w, "<html><p>hello</p></html>")
	}))
	e.Each(t, func(t *testing.T, c *enginetest.Client) {
		for path, want := range map[string]string{"/none": "", "/sniff": "text/html; charset=utf-8"} {
			resp, body := c.Get(t, path)
			if string(body) != "<html><p>hello</p></html>" {
				t.Errorf("%s: body %q", path, body)
			}
			if got, ok := resp.Header["Content-Type"]; want == "" && ok || want != "" && (len(got) != 1 || got[0] != want) {
				t.Errorf("%s: Content-Type %q, want %q", path, got, want)
			}
		}
	})
}

// A handler's Content-Length that is not digits ("+5") is not a declared
// length (core.DeclaredLength): the engine frames the answer itself and
// does not pass the field on.
func TestResponseLengthSpelling(t *testing.T) {
	e := enginetest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "+5")
		io.WriteString(w, "hello")
	}))
	e.Each(t, func(t *testing.T, c *enginetest.Client) {
		resp, body := c.Get(t, "/")
		if string(body) != "hello" || resp.Header.Get("Content-Length") == "+5" {
			t.Errorf("body %q, Content-Length %q", body, resp.Header.Get("Content-Length"))
		}
	})
}
