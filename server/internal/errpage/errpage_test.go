package errpage

import (
	"net/http/httptest"
	"testing"
)

// Errors go out with Cache-Control: no-store and none of the caching
// fields set before; redirects keep what they had.
func TestErrorsAreNotStored(t *testing.T) {
	for code, want := range map[int]string{404: "no-store", 412: "no-store", 503: "no-store", 301: "public, max-age=60"} {
		w := httptest.NewRecorder()
		h := w.Header()
		h.Set("Cache-Control", "public, max-age=60")
		h.Set("Expires", "Thu, 01 Jan 2037 00:00:00 GMT")
		h.Set("Retry-After", "1")
		Write(w, httptest.NewRequest("GET", "/", nil), code)
		if got := w.Header().Get("Cache-Control"); got != want {
			t.Errorf("%d: Cache-Control %q, want %q", code, got, want)
		}
		if exp := w.Header().Get("Expires") != ""; exp != (code < 400) {
			t.Errorf("%d: Expires kept: %v", code, exp)
		}
		if w.Header().Get("Retry-After") != "1" || w.Code != code {
			t.Errorf("%d: other fields or status lost: %d %v", code, w.Code, w.Header())
		}
	}
}
