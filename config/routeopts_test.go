package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// locatedErr loads src (WWW replaced by a directory that exists) and checks
// that the error starts with the file name and contains want.
func locatedErr(t *testing.T, src, want string) {
	t.Helper()
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "www"), 0o755)
	f := filepath.Join(root, "site.toml")
	os.WriteFile(f, []byte(strings.ReplaceAll(src, "WWW", "www")), 0o644)
	_, err := loadChecked(f)
	if err == nil {
		t.Fatalf("no error for\n%s", src)
	}
	if !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), f+":") {
		t.Errorf("error %q\nwant it to start with %s: and contain %q", err, f, want)
	}
}

func loadOK(t *testing.T, src string) *Site {
	t.Helper()
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "www"), 0o755)
	f := filepath.Join(root, "site.toml")
	os.WriteFile(f, []byte(strings.ReplaceAll(src, "WWW", "www")), 0o644)
	sites, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return sites[0]
}

const hashOfSecret = "$2a$04$0ToYF0RvOYbeiSqMfF/1p.FA3SShw.l8ciLGcHKPa1i6gHvEs9gKG"

func TestRouteOptionsDecode(t *testing.T) {
	s := loadOK(t, `trusted_proxies = ["10.0.0.1"]
[[routes]]
path = "/"
handler = { type = "static", root = "WWW" }
allow = ["192.168.0.0/16", "::1"]
deny = ["192.168.1.1"]
compression = false
headers = { set = { X-Frame-Options = "DENY" }, add = { Link = ["</a>; rel=preload", "</b>; rel=preload"] }, remove = ["Server"] }
basic_auth = { realm = "family", users = { alice = "`+hashOfSecret+`" } }
`)
	o := s.Routes[0].Options
	if len(o.Allow) != 2 || o.Allow[1].Bits() != 128 || len(o.Deny) != 1 || *o.Compression {
		t.Errorf("options: %+v", o)
	}
	if o.Headers.Set["X-Frame-Options"] != "DENY" || len(o.Headers.Add["Link"]) != 2 || o.Headers.Remove[0] != "Server" {
		t.Errorf("headers: %+v", o.Headers)
	}
	if o.BasicAuth.Realm != "family" || o.BasicAuth.Users["alice"] != hashOfSecret {
		t.Errorf("basic_auth: %+v", o.BasicAuth)
	}
	if len(s.TrustedProxies) != 1 || o.Empty() {
		t.Errorf("trusted: %v", s.TrustedProxies)
	}
}

func TestRouteOptionsErrors(t *testing.T) {
	route := "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n"
	cases := []struct{ name, src, want string }{
		{"plaintext password", route + "basic_auth = { users = { bob = \"hunter2\" } }\n",
			`:4:26: user "bob": expected a bcrypt hash`},
		{"no users", route + "basic_auth = { realm = \"x\" }\n", `:4:14: basic_auth needs at least one user`},
		{"quote in realm", route + "basic_auth = { realm = \"a\\\"b\", users = { a = \"" + hashOfSecret + "\" } }\n", `realm "a\"b" must not contain quotes`},
		{"colon in user", route + "basic_auth = { users = { \"a:b\" = \"" + hashOfSecret + "\" } }\n", `user name "a:b" must not`},
		{"bad network", route + "allow = [\"10.0.0.0/33\"]\n", `:4:10: allow: "10.0.0.0/33" is not a network`},
		{"empty allow", route + "allow = []\n", `:4:1: allow = [] lists no client`},
		{"framing field set", route + "headers = { set = { Content-Length = \"5\" } }\n", `:4:21: header Content-Length frames the message`},
		{"framing field add", route + "headers = { add = { transfer-encoding = \"chunked\" } }\n", `:4:21: header transfer-encoding frames the message`},
		{"framing field removed", route + "headers = { remove = [\"Connection\"] }\n", `header Connection frames the message`},
		{"framing field in static headers", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\", headers = { Content-Length = \"1\" } }\n", `header Content-Length frames the message`},
		{"bad deny", route + "deny = [\"x\"]\n", `:4:9: deny: "x" is not an IP address or network`},
		{"bad header name", route + "headers = { set = { \"X A\" = \"1\" } }\n", `:4:21: header name "X A" is not a valid field name`},
		{"header injection", route + "headers = { add = { X-A = \"a\\r\\nSet-Cookie: x=1\" } }\n", `:4:27: header X-A: value "a\r\nSet-Cookie: x=1" has a control character`},
		{"unknown option", route + "header = { }\n", `:4:1: unknown key "routes.header" (did you mean "headers"?)`},
		{"unknown header op", route + "headers = { replace = { A = \"b\" } }\n", `unknown key "routes.headers.replace"`},
		{"compression not a bool", route + "compression = \"no\"\n", `compression: expected true or false`},
		{"bad site trusted_proxies", "trusted_proxies = [\"proxy\"]\n" + route, `:1:20: trusted_proxies: "proxy" is not an IP address`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { locatedErr(t, c.src, c.want) })
	}
}

// www to apex is a two-line site file.
func TestTwoLineRedirectSite(t *testing.T) {
	s := loadOK(t, `server_names = ["www.example.org"]
routes = [{ path = "/", handler = { type = "redirect", to = "https://example.org{uri}", status = 301 } }]
`)
	r, _ := s.Routes[0].Handler.(*Redirect)
	if r == nil || r.Status != 301 || len(r.Parts) != 2 || r.Parts[1].Kind != PhURI || s.Listen[0] != (ListenAddr{Port: 80}) {
		t.Errorf("%+v %+v", s, r)
	}
}

func TestRedirectRespondErrors(t *testing.T) {
	at := func(h string) string { return "[[routes]]\npath = \"/\"\nhandler = " + h + "\n" }
	cases := []struct{ name, src, want string }{
		{"unknown placeholder", at(`{ type = "redirect", to = "/x{request_uri}" }`), `:3:32: redirect target "/x{request_uri}": unknown placeholder {request_uri}`},
		{"unbalanced", at(`{ type = "redirect", to = "/x{path" }`), `unbalanced { }`},
		{"bad status", at(`{ type = "redirect", to = "/x", status = 200 }`), `:3:43: redirect status 200: use 301, 302, 303, 307 or 308`},
		{"no target", at(`{ type = "redirect" }`), `:3:1: redirect needs a target`},
		{"scheme-relative", at(`{ type = "redirect", to = "//evil.example{uri}" }`), `is scheme-relative`},
		{"not a URL", at(`{ type = "redirect", to = "example.org{uri}" }`), `must be a path ("/new{path}") or an http:// or https:// URL`},
		{"host first", at(`{ type = "redirect", to = "{host}/x" }`), `must start with a path, a URL`},
		{"control char", at(`{ type = "redirect", to = "/a\nb" }`), `must not contain spaces, control characters`},
		{"respond status", at(`{ type = "respond", status = 99 }`), `:3:31: respond status 99: use 200 to 599`},
		{"respond redirection", at(`{ type = "respond", status = 301 }`), `respond status 301 is a redirection: use handler = { type = "redirect"`},
		{"respond 204 body", at(`{ type = "respond", status = 204, body = "x" }`), `a 204 response has no body`},
		{"respond unknown key", at(`{ type = "respond", stauts = 404 }`), `unknown key "routes.handler.stauts" (did you mean "status"?)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { locatedErr(t, c.src, c.want) })
	}
}

func TestErrorPagesErrors(t *testing.T) {
	route := "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n"
	cases := []struct{ name, src, want string }{
		{"bad status", "[errors]\nroot = \"WWW\"\npages = { \"600\" = \"x.html\" }\n" + route, `:3:11: error page key "600": use a status from 400 to 599`},
		{"missing file", "[errors]\nroot = \"WWW\"\npages = { \"404\" = \"nope.html\" }\n" + route, `:3:11: error page "nope.html": no such file under root`},
		{"outside root", "[errors]\nroot = \"WWW\"\npages = { \"5xx\" = \"../x.html\" }\n" + route, `error page "../x.html" must be a file name under root`},
		{"missing root", "[errors]\nroot = \"nope\"\npages = { \"404\" = \"x.html\" }\n" + route, `:2:1: root "`},
		{"intercept alone", "[errors]\nintercept_errors = true\n" + route, `intercept_errors needs pages`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { locatedErr(t, c.src, c.want) })
	}
}

func TestProxyTLSErrors(t *testing.T) {
	at := func(h string) string { return "[[routes]]\npath = \"/\"\nhandler = " + h + "\n" }
	cases := []struct{ name, src, want string }{
		{"unreadable CA", at(`{ type = "proxy", upstreams = ["https://10.0.0.5"], tls_ca = "nope.pem" }`), `:3:63: tls_ca: cannot read `},
		{"CA not PEM", at(`{ type = "proxy", upstreams = ["https://10.0.0.5"], tls_ca = "site.toml" }`), `holds no PEM certificate`},
		{"tls keys without https upstream", at(`{ type = "proxy", upstreams = ["10.0.0.5:80"], tls_server_name = "a.lan" }`), `:3:58: tls_server_name applies to https:// upstreams, and this route has none`},
		{"bad server name", at(`{ type = "proxy", upstreams = ["https://10.0.0.5"], tls_server_name = "a b" }`), `tls_server_name "a b" is not a host name`},
	}
	for _, c := range cases[:4] {
		t.Run(c.name, func(t *testing.T) { locatedErr(t, c.src, c.want) })
	}
	s := loadOK(t, at(`{ type = "proxy", upstreams = ["https://pve.lan", "http://10.0.0.6"] }`))
	if a, err := ParseUpstream(s.Routes[0].Handler.(*Proxy).Upstreams[0]); err != nil || !a.TLS || a.Address != "pve.lan:443" {
		t.Errorf("https upstream: %+v %v", a, err)
	}
}

func TestTLSMinVersionErrors(t *testing.T) {
	locatedErr(t, "[tls]\nlisten = [\":8443\"]\nmin_version = \"1.1\"\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n", `:3:1: min_version "1.1": use "1.2" or "1.3"`)
}

// client_ip_header names the one field a trusted proxy's client is read
// from (QA M1): X-Forwarded-For by default, X-Real-IP when written, in any
// case (field names are case-insensitive, RFC 9110 section 5.1).
func TestClientIPHeader(t *testing.T) {
	route := "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n"
	proxy := "[[routes]]\npath = \"/app/\"\nhandler = { type = \"proxy\", upstreams = [\"127.0.0.1:8080\"], trusted_proxies = [\"10.0.0.1\"] }\n"
	for src, want := range map[string]ClientIPHeader{
		"trusted_proxies = [\"10.0.0.1\"]\n" + route:                                         ClientIPXForwardedFor,
		"trusted_proxies = [\"10.0.0.1\"]\nclient_ip_header = \"X-Forwarded-For\"\n" + route: ClientIPXForwardedFor,
		"trusted_proxies = [\"10.0.0.1\"]\nclient_ip_header = \"X-Real-IP\"\n" + route:       ClientIPXRealIP,
		"trusted_proxies = [\"10.0.0.1\"]\nclient_ip_header = \"x-real-ip\"\n" + route:       ClientIPXRealIP,
		"client_ip_header = \"X-Real-IP\"\n" + proxy:                                         ClientIPXRealIP, // a proxy route's trusted_proxies
		route: ClientIPXForwardedFor,
	} {
		if got := loadOK(t, src).ClientIPHeader; got != want {
			t.Errorf("%s: client_ip_header %v, want %v", src, got, want)
		}
	}
	if got := ClientIPXRealIP.String(); got != "X-Real-IP" {
		t.Errorf("String() = %q", got)
	}
	cases := []struct{ name, src, want string }{
		{"unknown field", "trusted_proxies = [\"10.0.0.1\"]\nclient_ip_header = \"X-Client-IP\"\n" + route,
			`:2:21: client_ip_header: "X-Client-IP": expected "X-Forwarded-For" or "X-Real-IP"`},
		{"not a string", "trusted_proxies = [\"10.0.0.1\"]\nclient_ip_header = [\"X-Real-IP\"]\n" + route,
			`:2:20: client_ip_header: expected a string, got an array`},
		{"no trusted proxy", "client_ip_header = \"X-Real-IP\"\n" + route,
			`:1:1: client_ip_header is only read from trusted_proxies`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { locatedErr(t, c.src, c.want) })
	}
}
