package realip

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestClient(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	cases := []struct {
		remote string
		h      http.Header
		want   string
	}{
		{"192.0.2.1:5000", nil, "192.0.2.1"},
		{"[2001:db8::1]:5000", nil, "2001:db8::1"},
		{"192.0.2.1:5000", http.Header{"X-Real-Ip": {"203.0.113.9"}}, "192.0.2.1"}, // untrusted peer: ignored
		{"10.0.0.2:1", http.Header{"X-Real-Ip": {"203.0.113.9"}}, "203.0.113.9"},
		{"10.0.0.2:1", http.Header{"X-Real-Ip": {"not an ip"}}, "10.0.0.2"},
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"6.6.6.6, 203.0.113.9, 10.0.0.7"}}, "203.0.113.9"},
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"6.6.6.6", "203.0.113.9"}}, "203.0.113.9"},
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"10.1.1.1, 10.0.0.7"}}, "10.0.0.2"},
		{"10.0.0.2:1", http.Header{"X-Forwarded-For": {"junk, 10.0.0.7"}}, "10.0.0.2"},
		{"[::1]:80", http.Header{"X-Forwarded-For": {"2001:db8::5"}}, "2001:db8::5"},
	}
	for _, c := range cases {
		if got := Client(c.remote, c.h, trusted); got != c.want {
			t.Errorf("Client(%q, %v) = %q, want %q", c.remote, c.h, got, c.want)
		}
	}
	h := http.Header{"X-Forwarded-For": {"6.6.6.6, 203.0.113.9"}}
	if n := testing.AllocsPerRun(100, func() { Client("10.0.0.2:1", h, trusted) }); n != 0 {
		t.Errorf("Client allocates %v times", n)
	}
}
