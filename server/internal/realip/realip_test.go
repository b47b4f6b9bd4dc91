package realip

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/arkaweb/arka/config"
)

func TestClient(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	xff, xri := config.ClientIPXForwardedFor, config.ClientIPXRealIP
	cases := []struct {
		remote string
		h      http.Header
		field  config.ClientIPHeader
		want   string
	}{
		{"192.0.2.1:5000", nil, xff, "192.0.2.1"},
		{"[2001:db8::1]:5000", nil, xff, "2001:db8::1"},
		{"192.0.2.1:5000", http.Header{"X-Real-Ip": {"203.0.113.9"}}, xri, "192.0.2.1"}, // untrusted peer: ignored
		{"192.0.2.1:5000", http.Header{"X-Forwarded-For": {"203.0.113.9"}}, xff, "192.0.2.1"},
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"6.6.6.6, 203.0.113.9, 10.0.0.7"}}, xff, "203.0.113.9"},
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"6.6.6.6", "203.0.113.9"}}, xff, "203.0.113.9"},
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"10.1.1.1, 10.0.0.7"}}, xff, "10.0.0.2"},
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"junk, 10.0.0.7"}}, xff, "10.0.0.2"},
		{"[::1]:80", http.Header{"X-Forwarded-For": {"2001:db8::5"}}, xff, "2001:db8::5"},
		// QA M1: a front proxy that appends to X-Forwarded-For (Caddy,
		// HAProxy) passes the client's own X-Real-IP through untouched:
		// with X-Forwarded-For chosen, X-Real-IP is never read.
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"1.2.3.4"}, "X-Real-Ip": {"10.9.9.9"}}, xff, "1.2.3.4"},
		{"10.0.0.2:1", http.Header{"X-Real-Ip": {"203.0.113.9"}}, xff, "10.0.0.2"},
		// With X-Real-IP chosen (nginx's proxy_set_header X-Real-IP
		// $remote_addr), X-Forwarded-For is never read: nginx without
		// $proxy_add_x_forwarded_for passes the client's own through.
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"1.2.3.4"}, "X-Real-Ip": {"203.0.113.9"}}, xri, "203.0.113.9"},
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"1.2.3.4"}}, xri, "10.0.0.2"},
		{"10.0.0.2:1", http.Header{"X-Real-Ip": {" 203.0.113.9 "}}, xri, "203.0.113.9"},
		{"10.0.0.2:1", http.Header{"X-Real-Ip": {"not an ip"}}, xri, "10.0.0.2"},
		{"10.0.0.2:1", http.Header{"X-Real-Ip": {"203.0.113.9, 6.6.6.6"}}, xri, "10.0.0.2"},
		{"10.0.0.2:1", http.Header{"X-Real-Ip": {"6.6.6.6", "203.0.113.9"}}, xri, "10.0.0.2"}, // two: which is the proxy's?
		{"[::1]:80", http.Header{"X-Real-Ip": {"2001:db8::5"}}, xri, "2001:db8::5"},
	}
	for _, c := range cases {
		if got := Client(c.remote, c.h, trusted, c.field); got != c.want {
			t.Errorf("Client(%q, %v, %s) = %q, want %q", c.remote, c.h, c.field, got, c.want)
		}
	}
	h := http.Header{"X-Forwarded-For": {"6.6.6.6, 203.0.113.9"}, "X-Real-Ip": {"203.0.113.9"}}
	for _, f := range []config.ClientIPHeader{xff, xri} {
		if n := testing.AllocsPerRun(100, func() { Client("10.0.0.2:1", h, trusted, f) }); n != 0 {
			t.Errorf("Client(%s) allocates %v times", f, n)
		}
	}
}
