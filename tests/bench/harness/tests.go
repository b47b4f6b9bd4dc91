package harness

import (
	"fmt"
	"slices"
	"strings"
)

// BrowserAcceptEncoding is what Chrome and Firefox send.
const BrowserAcceptEncoding = "gzip, deflate, br, zstd"

// Load generators.
const (
	H2load = "h2load" // HTTP/2 over TLS (ALPN h2), one stream per connection at a time
	Wrk    = "wrk"    // HTTP/1.1, plain or over TLS
)

// Test is one request type measured against every server.
type Test struct {
	Name  string
	Title string
	Tool  string // H2load or Wrk
	TLS   bool
	Path  string
	// AcceptEncoding is sent when not empty; Compressed then expects the
	// response in one of the codings offered.
	AcceptEncoding string
	Compressed     bool
	// NewConn asks for a new connection (and TLS handshake) per request:
	// "Connection: close" on every request.
	NewConn bool
	// Handler is the Arka handler type the test needs: "static", "proxy"
	// or "fastcgi". PHP tests add the php-fpm pool to the server's CPU
	// and memory; proxy tests report the upstream's CPU separately.
	Handler string
	// Body returns the expected decoded body.
	Body func(*Content) []byte
}

// PHP reports whether the test runs PHP.
func (t *Test) PHP() bool { return t.Handler == "fastcgi" }

// Proxy reports whether the test goes through the upstream.
func (t *Test) Proxy() bool { return t.Handler == "proxy" }

// Protocol is the HTTP version and transport the test uses.
func (t *Test) Protocol() string {
	switch {
	case t.Tool == H2load:
		return "h2"
	case t.TLS:
		return "h1+tls"
	}
	return "h1"
}

// AllTests lists the tests, in the order they run and are reported.
var AllTests = []*Test{
	{Name: "small-h2", Title: "small page (1.3 KB), HTTP/2", Tool: H2load, TLS: true, Path: PagePath, Handler: "static",
		Body: func(c *Content) []byte { return c.Page }},
	{Name: "small-h1", Title: "small page (1.3 KB), HTTP/1.1 over TLS", Tool: Wrk, TLS: true, Path: PagePath, Handler: "static",
		Body: func(c *Content) []byte { return c.Page }},
	{Name: "small-br-h2", Title: "small page compressed, HTTP/2", Tool: H2load, TLS: true, Path: PagePath, AcceptEncoding: BrowserAcceptEncoding, Compressed: true, Handler: "static",
		Body: func(c *Content) []byte { return c.Page }},
	{Name: "small-br-h1", Title: "small page compressed, HTTP/1.1 over TLS", Tool: Wrk, TLS: true, Path: PagePath, AcceptEncoding: BrowserAcceptEncoding, Compressed: true, Handler: "static",
		Body: func(c *Content) []byte { return c.Page }},
	{Name: "script-br-h2", Title: "285 KB script compressed, HTTP/2", Tool: H2load, TLS: true, Path: ScriptPath, AcceptEncoding: BrowserAcceptEncoding, Compressed: true, Handler: "static",
		Body: func(c *Content) []byte { return c.Script }},
	{Name: "1mb-h2", Title: "1 MB file, HTTP/2", Tool: H2load, TLS: true, Path: BinaryPath, Handler: "static",
		Body: func(c *Content) []byte { return c.Binary }},
	{Name: "newconn-tls", Title: "new TLS connection per request (small page; wrk resumes TLS sessions)", Tool: Wrk, TLS: true, Path: PagePath, NewConn: true, Handler: "static",
		Body: func(c *Content) []byte { return c.Page }},
	{Name: "proxy-small-http", Title: "proxy, small answer, plain HTTP/1.1", Tool: Wrk, Path: "/proxy" + SmallPath, Handler: "proxy",
		Body: func(c *Content) []byte { return c.Small }},
	{Name: "proxy-30k-http", Title: "proxy, 30 KB page, plain HTTP/1.1", Tool: Wrk, Path: "/proxy" + BigPath, Handler: "proxy",
		Body: func(c *Content) []byte { return c.Big }},
	{Name: "proxy-small-tls", Title: "proxy, small answer, HTTP/1.1 over TLS", Tool: Wrk, TLS: true, Path: "/proxy" + SmallPath, Handler: "proxy",
		Body: func(c *Content) []byte { return c.Small }},
	{Name: "proxy-30k-tls", Title: "proxy, 30 KB page, HTTP/1.1 over TLS", Tool: Wrk, TLS: true, Path: "/proxy" + BigPath, Handler: "proxy",
		Body: func(c *Content) []byte { return c.Big }},
	{Name: "proxy-30k-h2", Title: "proxy, 30 KB page, HTTP/2", Tool: H2load, TLS: true, Path: "/proxy" + BigPath, Handler: "proxy",
		Body: func(c *Content) []byte { return c.Big }},
	{Name: "php-tiny", Title: "PHP, tiny script, HTTP/1.1 over TLS", Tool: Wrk, TLS: true, Path: PHPTinyPath, Handler: "fastcgi",
		Body: func(c *Content) []byte { return c.PHPTiny }},
	{Name: "php-page", Title: "PHP, 25 KB page, HTTP/1.1 over TLS", Tool: Wrk, TLS: true, Path: PHPPagePath, Handler: "fastcgi",
		Body: func(c *Content) []byte { return c.PHPPage }},
	{Name: "php-page-br", Title: "PHP, 25 KB page compressed, HTTP/1.1 over TLS", Tool: Wrk, TLS: true, Path: PHPPagePath, AcceptEncoding: BrowserAcceptEncoding, Compressed: true, Handler: "fastcgi",
		Body: func(c *Content) []byte { return c.PHPPage }},
}

// SelectTests picks tests by name or by group: "all", "static", "proxy",
// "php", or a name prefix ending in "*" ("small-*").
func SelectTests(list []string) ([]*Test, error) {
	if len(list) == 0 {
		list = []string{"all"}
	}
	var out []*Test
	add := func(t *Test) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, name := range list {
		n := 0
		for _, t := range AllTests {
			ok := false
			switch {
			case name == "all":
				ok = true
			case name == "static" || name == "proxy":
				ok = t.Handler == name
			case name == "php":
				ok = t.PHP()
			case strings.HasSuffix(name, "*"):
				ok = strings.HasPrefix(t.Name, strings.TrimSuffix(name, "*"))
			default:
				ok = t.Name == name
			}
			if ok {
				add(t)
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("no test matches %q (tests: %s; groups: all, static, proxy, php, prefix*)", name, testNames())
		}
	}
	slices.SortFunc(out, func(a, b *Test) int { return slices.Index(AllTests, a) - slices.Index(AllTests, b) })
	return out, nil
}

func testNames() string {
	var n []string
	for _, t := range AllTests {
		n = append(n, t.Name)
	}
	return strings.Join(n, ", ")
}
