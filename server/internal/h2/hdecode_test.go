package h2_test

import (
	"strings"
	"testing"

	"golang.org/x/net/http2"
)

// TestHeaderBlockChecks: header blocks are decoded by the engine itself
// (hdecode.go), with the checks of RFC 9113 sections 8.2.1 and 8.3 that
// x/net's Framer made: each malformed block is a PROTOCOL_ERROR (the
// connection goes away, as before) and never reaches the handler, and a
// well-formed one split over CONTINUATION frames is served.
func TestHeaderBlockChecks(t *testing.T) {
	addr, _ := start(t, echo)
	req := func(extra ...[2]string) [][2]string {
		f := [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a.example"}, {":path", "/p"}}
		return append(f, extra...)
	}
	for _, tc := range []struct {
		name   string
		fields [][2]string
	}{
		{"upper-case name", req([2]string{"X-Upper", "1"})},
		{"name with a space", req([2]string{"x bad", "1"})},
		{"value with a newline", req([2]string{"x-v", "a\nb"})},
		{"value with a leading space", req([2]string{"x-v", " b"})},
		{"value with a trailing tab", req([2]string{"x-v", "b\t"})},
		{"pseudo after regular", append(req([2]string{"x-a", "1"}), [2]string{":method", "GET"})},
		{"unknown pseudo", req([2]string{":foo", "1"})},
		{"repeated pseudo", req([2]string{":path", "/q"})},
		{"response pseudo in a request", req([2]string{":status", "200"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, code := rawRequest(t, addr, tc.fields)
			if code != http2.ErrCodeProtocol || status != "" || body != "" {
				t.Errorf("got status %q body %q code %v, want PROTOCOL_ERROR and no answer", status, body, code)
			}
		})
	}
	// A valid block of 70 fields (more than the decoder's reused slice
	// keeps), 21 KB, so a HEADERS and a CONTINUATION frame, is served.
	var many [][2]string
	for i := range 70 {
		many = append(many, [2]string{"x-f" + string(rune('a'+i%26)) + string(rune('a'+i/26)), strings.Repeat("v", 300)})
	}
	status, _, code := rawRequest(t, addr, req(many...))
	if status != "200" || code != 0 {
		t.Errorf("valid block: status %q code %v, want 200", status, code)
	}
}
