package config

import "testing"

// ParseUpstream: unbalanced brackets, an all-numeric name that is no IPv4
// address and surrounding spaces are mistakes or trimmed, never an address
// other than the one written; the scheme is case-insensitive (RFC 3986
// section 3.1).
func TestParseUpstreamEdges(t *testing.T) {
	for _, c := range []struct {
		in, addr string
		tls      bool
	}{
		{"http://[::1]", "[::1]:80", false},
		{"http://[::1]:8080", "[::1]:8080", false},
		{"HTTP://127.0.0.1:8080", "127.0.0.1:8080", false},
		{"Https://app.example", "app.example:443", true},
		{" http://127.0.0.1:9 ", "127.0.0.1:9", false},
	} {
		u, err := ParseUpstream(c.in)
		if err != nil || u.Address != c.addr || u.TLS != c.tls {
			t.Errorf("%q: %+v %v, want %s tls %v", c.in, u, err, c.addr, c.tls)
		}
		if u.Name != "" && u.Name[0] == ' ' {
			t.Errorf("%q: name %q keeps its spaces", c.in, u.Name)
		}
	}
	for _, in := range []string{"http://[::1", "http://::1]", "[::1:80", "http://999.1.1.1:80", "10.0.0.300:80", "http://1.2.3:80", "http://[example.com]"} {
		if u, err := ParseUpstream(in); err == nil {
			t.Errorf("%q: accepted as %+v", in, u)
		}
	}
}
