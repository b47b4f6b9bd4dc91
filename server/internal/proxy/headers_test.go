package proxy

import "testing"

func TestFirstForwarded(t *testing.T) {
	for _, c := range []struct{ in, proto, host string }{
		{`for=1.2.3.4;proto=https;host=a.example`, "https", "a.example"},
		{`For="[::1]:80" ; Proto=HTTPS ; Host="a.example:8443", for=5.6.7.8;proto=http`, "HTTPS", "a.example:8443"},
		{`for=1.2.3.4, proto=https`, "", ""},
		{`host="a\"b";proto=http`, "http", `a"b`},
		{`proto="https`, "", ""},
		{`garbage`, "", ""},
	} {
		if p, h := firstForwarded([]string{c.in}); p != c.proto || h != c.host {
			t.Errorf("%q: %q %q, want %q %q", c.in, p, h, c.proto, c.host)
		}
	}
}
