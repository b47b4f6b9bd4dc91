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
	_, err := Load(f)
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
	if len(o.AllowNets) != 2 || o.AllowNets[1].Bits() != 128 || len(o.DenyNets) != 1 || *o.Compression {
		t.Errorf("options: %+v", o)
	}
	if o.Headers.Set["X-Frame-Options"] != "DENY" || len(o.Headers.Add["Link"]) != 2 || o.Headers.Remove[0] != "Server" {
		t.Errorf("headers: %+v", o.Headers)
	}
	if o.BasicAuth.RealmOrDefault() != "family" || o.BasicAuth.Users["alice"] != hashOfSecret {
		t.Errorf("basic_auth: %+v", o.BasicAuth)
	}
	if len(s.TrustedNets) != 1 || o.Empty() {
		t.Errorf("trusted: %v", s.TrustedNets)
	}
}

func TestRouteOptionsErrors(t *testing.T) {
	route := "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n"
	cases := []struct{ name, src, want string }{
		{"plaintext password", route + "basic_auth = { users = { bob = \"hunter2\" } }\n",
			`:4:26: user "bob": expected a bcrypt hash`},
		{"no users", route + "basic_auth = { realm = \"x\" }\n", `:4:1: basic_auth needs at least one user`},
		{"quote in realm", route + "basic_auth = { realm = \"a\\\"b\", users = { a = \"" + hashOfSecret + "\" } }\n", `realm "a\"b" must not contain quotes`},
		{"colon in user", route + "basic_auth = { users = { \"a:b\" = \"" + hashOfSecret + "\" } }\n", `user name "a:b" must not`},
		{"bad network", route + "allow = [\"10.0.0.0/33\"]\n", `:4:10: allow: "10.0.0.0/33" is not a network`},
		{"bad deny", route + "deny = [\"x\"]\n", `:4:9: deny: "x" is not an IP address or network`},
		{"bad header name", route + "headers = { set = { \"X A\" = \"1\" } }\n", `:4:13: header name "X A" is not a valid field name`},
		{"header injection", route + "headers = { add = { X-A = \"a\\r\\nSet-Cookie: x=1\" } }\n", `:4:13: header X-A: value "a\r\nSet-Cookie: x=1" has a control character`},
		{"unknown option", route + "header = { }\n", `:4:1: unknown key "routes.header" (did you mean "headers"?)`},
		{"unknown header op", route + "headers = { replace = { A = \"b\" } }\n", `unknown key "routes.headers.replace"`},
		{"compression not a bool", route + "compression = \"no\"\n", `compression: expected true or false`},
		{"bad site trusted_proxies", "trusted_proxies = [\"proxy\"]\n" + route, `:1:20: trusted_proxies: "proxy" is not an IP address`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { locatedErr(t, c.src, c.want) })
	}
}
