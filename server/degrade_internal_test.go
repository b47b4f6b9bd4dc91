package server

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The fallback page names the site files' mistakes (paths, values) only to
// clients the status page lets in by default: loopback and private
// networks. Anyone else learns that the site is down, and nothing more;
// so does a request that came through a proxy (it names a client in a
// forwarding field, or carries Via): behind nginx or cloudflared on the
// same machine or LAN every visitor's connection is a local one.
func TestProblemsPageShownToLocalClientsOnly(t *testing.T) {
	s := &Server{}
	s.SetProblem("config", "/perm/sites/b.toml:3:1: a secret value")
	for _, tc := range []struct {
		remote string
		shown  bool
		field  string // a forwarding field "Name: value" the request carries
	}{
		{"127.0.0.1:5000", false, "X-Forwarded-For: 203.0.113.5"},
		{"192.168.1.20:5000", false, "X-Real-IP: 203.0.113.5"},
		{"127.0.0.1:5000", false, "Forwarded: for=203.0.113.5"},
		{"127.0.0.1:5000", false, "Via: 1.1 front"},
		{"127.0.0.1:5000", false, "X-Forwarded-For: 127.0.0.1"},
		{"127.0.0.1:5000", true, "X-Other: 1"},
		{"127.0.0.1:5000", true, ""},
		{"[::1]:5000", true, ""},
		{"192.168.1.20:5000", true, ""},
		{"[fd00::5]:5000", true, ""},
		{"[::ffff:10.1.2.3]:5000", true, ""},
		{"203.0.113.9:5000", false, ""},
		{"[2001:db8::1]:5000", false, ""},
		{"not an address", false, ""},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if name, value, ok := strings.Cut(tc.field, ": "); ok {
			r.Header.Set(name, value)
		}
		w := httptest.NewRecorder()
		problemsPage{s: s}.ServeHTTP(w, r)
		body := w.Body.String()
		if w.Code != 503 || !strings.Contains(body, "This site is not available") {
			t.Errorf("%s: %d %q", tc.remote, w.Code, body)
		}
		if got := strings.Contains(body, "a secret value"); got != tc.shown {
			t.Errorf("%s %s: mistakes shown %v, want %v:\n%s", tc.remote, tc.field, got, tc.shown, body)
		}
	}
}
