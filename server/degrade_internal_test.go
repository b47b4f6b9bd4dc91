package server

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The fallback page names the site files' mistakes (paths, values) only to
// clients the status page lets in by default: loopback and private
// networks. Anyone else learns that the site is down, and nothing more.
func TestProblemsPageShownToLocalClientsOnly(t *testing.T) {
	s := &Server{}
	s.SetProblem("config", "/perm/sites/b.toml:3:1: a secret value")
	for _, tc := range []struct {
		remote string
		shown  bool
	}{
		{"127.0.0.1:5000", true},
		{"[::1]:5000", true},
		{"192.168.1.20:5000", true},
		{"[fd00::5]:5000", true},
		{"[::ffff:10.1.2.3]:5000", true},
		{"203.0.113.9:5000", false},
		{"[2001:db8::1]:5000", false},
		{"not an address", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		w := httptest.NewRecorder()
		problemsPage{s: s}.ServeHTTP(w, r)
		body := w.Body.String()
		if w.Code != 503 || !strings.Contains(body, "This site is not available") {
			t.Errorf("%s: %d %q", tc.remote, w.Code, body)
		}
		if got := strings.Contains(body, "a secret value"); got != tc.shown {
			t.Errorf("%s: mistakes shown %v, want %v:\n%s", tc.remote, got, tc.shown, body)
		}
	}
}
