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

// TestEnginesFollowCore: the head and trailer rules of package core
// (PrepareHead, EachTrailer, Short) hold on every engine alike: trailers
// declared and set with http.TrailerPrefix arrive after the body, not in
// the head; a finished handler's body gets its length; HEAD gets the
// GET's length; 204 loses a Content-Length and 304 keeps it; a body short
// of its declared length is not delivered as complete; field names that
// are not tokens are dropped and control characters in values become
// spaces (ValidFieldName, CleanValue).
func TestEnginesFollowCore(t *testing.T) {
	e := enginetest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/trailers":
			w.Header().Set("Trailer", "X-Sum")
			w.WriteHeader(200)
			io.WriteString(w, "body")
			w.(http.Flusher).Flush()
			w.Header().Set("X-Sum", "42")
			w.Header().Set(http.TrailerPrefix+"x-late", "yes")
		case "/page", "/head":
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
		case "/fields":
			w.Header()["Bad Name"] = []string{"x"}
			w.Header()["X-Paren(1)"] = []string{"x"}
			w.Header()["X-Ctl"] = []string{"a\x01b\x7fc\rd\ne"}
		}
	}))
	e.Each(t, func(t *testing.T, c *enginetest.Client) {
		resp, body := c.Get(t, "/trailers")
		if string(body) != "body" || resp.Trailer.Get("X-Sum") != "42" || resp.Trailer.Get("X-Late") != "yes" || resp.Header.Get("X-Sum") != "" {
			t.Errorf("trailers: body %q, trailer %v, header %v", body, resp.Trailer, resp.Header)
		}
		if resp, _ := c.Get(t, "/page"); resp.ContentLength != 20 {
			t.Errorf("finished handler: length %d, want 20", resp.ContentLength)
		}
		if resp, _ := c.Do(t, "HEAD", "/head"); resp.Header.Get("Content-Length") != "20" {
			t.Errorf("HEAD: Content-Length %q, want the GET's 20", resp.Header.Get("Content-Length"))
		}
		for path, want := range map[string]string{"/204": "", "/304": "5"} {
			// Not c.Get: Go's HTTP/2 client takes a 304's Content-Length
			// as a body to read (RFC 9113 section 8.1.1 says it is not).
			resp, err := c.HTTP.Get(c.Base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.Header.Get("Content-Length") != want {
				t.Errorf("%s: Content-Length %q, want %q", path, resp.Header.Get("Content-Length"), want)
			}
		}
		resp, _ = c.Get(t, "/fields")
		if resp.Header.Get("X-Ctl") != "a b c d e" || len(resp.Header["Bad Name"]) > 0 || len(resp.Header["X-Paren(1)"]) > 0 {
			t.Errorf("fields: %q", resp.Header)
		}
		resp, err := c.HTTP.Get(c.Base + "/short")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err == nil {
			t.Error("a body short of its Content-Length was delivered as complete")
		}
	})
}
