package fastcgi

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

func TestHeaderEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", -1},
		{"\n", 1},
		{"\r\n", 2},
		{"\r\nbody", 2},
		{"A: b\r\n\r\nbody", 8},
		{"A: b\n\nbody", 6},
		{"A: b\r\nC: d\r\n", -1},
		{"A: b\r\nC: d\r\n\r", -1},
		{"A: b\n\r\nx", 7},
		{"A: b", -1},
	} {
		if got := headerEnd([]byte(tc.in)); got != tc.want {
			t.Errorf("headerEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestParseCGIHeader(t *testing.T) {
	type field struct{ name, value string }
	for _, tc := range []struct {
		in       string
		status   int
		location bool
		fields   []field
		err      bool
	}{
		{in: "X-Powered-By: PHP/8.2\r\nContent-type: text/html; charset=UTF-8\r\n\r\n",
			fields: []field{{"X-Powered-By", "PHP/8.2"}, {"Content-Type", "text/html; charset=UTF-8"}}},
		{in: "Status: 404 Not Found\r\n\r\n", status: 404},
		{in: "status:301\nlocation: /x\n\n", status: 301, location: true, fields: []field{{"Location", "/x"}}},
		{in: "Location: https://example.org/\r\n\r\n", location: true, fields: []field{{"Location", "https://example.org/"}}},
		{in: "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n", fields: []field{{"Set-Cookie", "a=1"}, {"Set-Cookie", "b=2"}}},
		{in: "X-Empty:\r\nX-Sp:   padded \t\r\n\r\n", fields: []field{{"X-Empty", ""}, {"X-Sp", "padded"}}},
		{in: "x-custom-thing: Ünïcode ok\r\n\r\n", fields: []field{{"X-Custom-Thing", "Ünïcode ok"}}},
		{in: "\r\n"},
		{in: "Status: 200\r\nStatus: 404\r\n\r\n", err: true},
		{in: "Status: 99\r\n\r\n", err: true},
		{in: "Status: 100 Continue\r\n\r\n", err: true},
		{in: "Status: abc\r\n\r\n", err: true},
		{in: "Status: 2000\r\n\r\n", err: true},
		{in: "Status: 999\r\n\r\n", err: true}, // RFC 9110 section 15: 100 to 599
		{in: "Status: 600\r\n\r\n", err: true},
		{in: "Status: 599\r\n\r\n", status: 599},
		{in: "No colon here\r\n\r\n", err: true},
		{in: ": empty name\r\n\r\n", err: true},
		{in: "Bad Name: x\r\n\r\n", err: true},
		{in: "A: b\r\n folded\r\n\r\n", err: true},
		{in: "A: nul\x00byte\r\n\r\n", err: true},
		{in: "A: bare\rcr\r\n\r\n", err: true},
	} {
		var got []field
		res, err := parseCGIHeader([]byte(tc.in), func(name string, v []byte, _ bool) { got = append(got, field{name, string(v)}) })
		if (err != nil) != tc.err {
			t.Errorf("%q: err %v", tc.in, err)
			continue
		}
		if tc.err {
			continue
		}
		if res.status != tc.status || res.location != tc.location {
			t.Errorf("%q: status %d location %v", tc.in, res.status, res.location)
		}
		if len(got) != len(tc.fields) {
			t.Errorf("%q: fields %q", tc.in, got)
			continue
		}
		for i := range got {
			if got[i] != tc.fields[i] {
				t.Errorf("%q: field %d = %q, want %q", tc.in, i, got[i], tc.fields[i])
			}
		}
	}
}

func TestSetField(t *testing.T) {
	h := http.Header{}
	var vals []string
	setField(h, "Set-Cookie", "a=1", nil, &vals)
	setField(h, "X-One", "1", nil, &vals)
	setField(h, "Set-Cookie", "b=2", nil, &vals)
	setField(h, "Transfer-Encoding", "chunked", nil, &vals)
	setField(h, "Connection", "close", nil, &vals)
	setField(h, "X-Two", "2", nil, &vals)
	if got := h["Set-Cookie"]; len(got) != 2 || got[0] != "a=1" || got[1] != "b=2" {
		t.Errorf("Set-Cookie %q", got)
	}
	if h.Get("X-One") != "1" || h.Get("X-Two") != "2" {
		t.Errorf("shared backing array clobbered a value: %v", h)
	}
	if _, ok := h["Transfer-Encoding"]; ok {
		t.Error("hop-by-hop field passed")
	}
	if _, ok := h["Connection"]; ok {
		t.Error("hop-by-hop field passed")
	}
	if n, rep := canonicalName([]byte("content-TYPE")); n != "Content-Type" || !rep {
		t.Error("canonicalName Content-Type")
	}
	if n, rep := canonicalName([]byte("x-foo-bar")); n != "X-Foo-Bar" || rep {
		t.Error("canonicalName X-Foo-Bar")
	}
	var c internCache
	a, b := c.value([]byte("PHP/8.2"), true), c.value([]byte("PHP/8.2"), true)
	if a != "PHP/8.2" || b != a || c.value([]byte("PHP/8.3"), true) != "PHP/8.3" || c.value([]byte("x"), false) != "x" {
		t.Error("internCache")
	}
	// A repeating value comes with one shared one-value slice, which a
	// second value for the same field does not write into.
	_, one1 := c.field([]byte("text/html"), true)
	_, one2 := c.field([]byte("text/html"), true)
	if len(one1) != 1 || cap(one1) != 1 || &one1[0] != &one2[0] || one1[0] != "text/html" {
		t.Errorf("internCache field: %q %q", one1, one2)
	}
	if _, none := c.field([]byte("a=1"), false); none != nil {
		t.Error("internCache field: a slice for a value that does not repeat")
	}
	h2 := http.Header{}
	var vals2 []string
	setField(h2, "Content-Type", "text/html", one1, &vals2)
	setField(h2, "Content-Type", "text/plain", nil, &vals2)
	if one1[0] != "text/html" || len(h2["Content-Type"]) != 2 {
		t.Errorf("second value: shared slice %q, header %q", one1, h2["Content-Type"])
	}
}

// FuzzCGIHeader: any script output either fails cleanly or yields a header
// that is safe to send: token names, values without CR, LF or NUL, a final
// status, and a body start inside the input.
func FuzzCGIHeader(f *testing.F) {
	f.Add([]byte("Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\nbody"))
	f.Add([]byte("Location: /x\n\n"))
	f.Add([]byte("Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n"))
	f.Add([]byte("\r\n\r\n"))
	f.Add([]byte("A: b\r\n c\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := headerEnd(data)
		if n < 0 {
			return
		}
		if n > len(data) {
			t.Fatalf("header end %d past %d bytes", n, len(data))
		}
		block := data[:n]
		res, err := parseCGIHeader(block, func(name string, v []byte, _ bool) {
			if !isToken([]byte(name)) {
				t.Fatalf("name %q is not a token", name)
			}
			if bytes.ContainsAny(v, "\r\n\x00") {
				t.Fatalf("value %q has CR, LF or NUL", v)
			}
			if name != http.CanonicalHeaderKey(name) {
				t.Fatalf("name %q not canonical", name)
			}
			if strings.EqualFold(name, "Status") {
				t.Fatal("Status passed as a field")
			}
		})
		if err != nil {
			return
		}
		if res.status != 0 && (res.status < 200 || res.status > 599) {
			t.Fatalf("status %d", res.status)
		}
		h := http.Header{}
		var vals []string
		parseCGIHeader(block, func(name string, v []byte, _ bool) { setField(h, name, string(v), nil, &vals) })
		for k, vs := range h {
			if hopByHop[k] {
				t.Fatalf("hop-by-hop %s passed", k)
			}
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n") {
					t.Fatalf("%s: %q", k, v)
				}
			}
		}
	})
}
