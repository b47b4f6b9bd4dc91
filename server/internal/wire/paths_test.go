package wire

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"syscall"
	"testing"
)

func TestEncodedSlashAt(t *testing.T) {
	for in, want := range map[string]int{
		"/a/b":          -1,
		"/caf%C3%A9":    -1,
		"/a%2Fb":        2,
		"/a%2fb":        2,
		"/%C3%A9/x%2Fy": 5,  // offsets in the decoded path
		"/a%252Fb":      -1, // "%25" then "2Fb": an encoded percent sign
	} {
		u := &url.URL{}
		if err := SetPath(u, in); err != nil {
			t.Fatal(err)
		}
		if got := EncodedSlashAt(u); got != want {
			t.Errorf("EncodedSlashAt(%q) = %d, want %d", in, got, want)
		}
		if got := HasEncodedSlash(u); got != (want >= 0) {
			t.Errorf("HasEncodedSlash(%q) = %v", in, got)
		}
		if want >= 0 && u.Path[want] != '/' {
			t.Errorf("%q: offset %d of %q is not the slash", in, want, u.Path)
		}
	}
}

func TestClientPath(t *testing.T) {
	for _, in := range []string{"/a/b", "/a%2F%2Fb", "/caf%c3%a9", "/%7Euser", "/a%3Bb"} {
		u := &url.URL{}
		SetPath(u, in)
		if got := ClientPath(u); got != in {
			t.Errorf("ClientPath(%q) = %q", in, got)
		}
	}
}

func TestCachingField(t *testing.T) {
	for name, want := range map[string]bool{
		"Cache-Control": true, "Expires": true, "Pragma": true, "Cdn-Cache-Control": true, "Surrogate-Control": true,
		"X-Frame-Options": false, "Vary": false, "Etag": false,
	} {
		if CachingField(name) != want {
			t.Errorf("CachingField(%q) = %v", name, !want)
		}
	}
}

func TestClientGone(t *testing.T) {
	for err, want := range map[error]bool{
		io.ErrUnexpectedEOF:                          true,
		fmt.Errorf("read: %w", syscall.ECONNRESET):   true,
		errors.New("malformed chunked encoding"):     false,
		fmt.Errorf("x: %w", errors.New("too large")): false,
	} {
		if ClientGone(err) != want {
			t.Errorf("ClientGone(%v) = %v", err, !want)
		}
	}
}

// TestValidHost: the table agrees with RFC 3986's character classes for
// every byte, and ports and IPv6 literals are checked.
func TestValidHost(t *testing.T) {
	const punct = "-._~!$&'()*+,;=:[]%"
	for c := 0; c < 256; c++ {
		if c == ':' {
			continue // a port separator: "a:b" has a port that is not digits
		}
		want := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(punct, byte(c)) >= 0
		if got := ValidHost(string([]byte{'a', byte(c), 'b'})); got != want {
			t.Errorf("byte %#x: %v, want %v", c, got, want)
		}
	}
	for h, want := range map[string]bool{
		"127.0.0.1:8443": true, "bench.local": true, "[::1]:443": true, "::1": false,
		"x:80a": false, "user@host": false, "a b": false, "": true,
		":80": false, ":": false, "[::1]": true, "h:": true,
	} {
		if got := ValidHost(h); got != want {
			t.Errorf("ValidHost(%q) = %v, want %v", h, got, want)
		}
	}
}
