package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/arkaweb/arka/tests/testkit"
)

func TestACMEEligible(t *testing.T) {
	for name, want := range map[string]bool{
		"example.net.au":   true,
		"www.arka-web.org": true,
		"a.b.c.de":         true,
		"192.168.1.5":      false,
		"::1":              false,
		"localhost":        false,
		"pi.localhost":     false,
		"nas":              false,
		"pi.local":         false,
		"router.lan":       false,
		"db.internal":      false,
		"pi.home.arpa":     false,
		"home.arpa":        false,
		"site.test":        false,
		"a.example":        false,
		"example.org":      false,
		"www.example.com":  false,
		"*.arka-web.org":   false,
		"arka-web.local":   false,
		"localdomain":      false,
		"x.localdomain":    false,
		"local.arka.org":   true, // "local" as a label, not the suffix
	} {
		got, why := ACMEEligible(name)
		if got != want || (!got && why == "") {
			t.Errorf("ACMEEligible(%q) = %v, %q; want %v", name, got, why, want)
		}
	}
}

// load writes a site file (with a www directory beside it) and loads it.
func loadACME(t *testing.T, files ...string) ([]*Site, error) {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "www"), 0o755)
	cert, _ := testkit.WriteCert(t, dir)
	os.Rename(cert, filepath.Join(dir, "root.pem"))
	os.WriteFile(filepath.Join(dir, "notpem.pem"), []byte("hello"), 0o644)
	var paths []string
	for i, src := range files {
		p := filepath.Join(dir, string(rune('a'+i))+".toml")
		src += "\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n"
		os.WriteFile(p, []byte(src), 0o644)
		paths = append(paths, p)
	}
	sites, err := LoadFiles(paths)
	if err != nil {
		return nil, err
	}
	return sites, CheckEnvironment(sites)
}

func TestACMEResolved(t *testing.T) {
	sites, err := loadACME(t,
		`server_names = ["www.arka-web.org", "pi.local", "arka-web.org", "*.arka-web.org"]
listen = ["127.0.0.1:18080"]
[tls]
listen = ["127.0.0.1:18443"]
ca = "staging"
[global]
acme = { email = "ops@arka-web.org", ca_root = "root.pem" }`,
		`server_names = ["blog.arka-web.org"]
listen = ["127.0.0.1:18080"]
redirect_https = false
hsts = "max-age=63072000; includeSubDomains; preload"
[tls]
listen = ["127.0.0.1:18443"]
email = "blog@arka-web.org"`,
		`server_names = ["shop.arka-web.org"]
listen = ["127.0.0.1:18080"]
[tls]
listen = ["127.0.0.1:18443"]
acme = false`,
		`server_names = ["nas.lan"]
listen = ["127.0.0.1:18080"]
[tls]
listen = ["127.0.0.1:18443"]`)
	if err != nil {
		t.Fatal(err)
	}
	a := sites[0].ACME
	if a == nil || !reflect.DeepEqual(a.Names, []string{"www.arka-web.org", "arka-web.org"}) ||
		a.CA != LetsEncryptStaging || a.Email != "ops@arka-web.org" || !strings.HasSuffix(a.CARoot, "root.pem") {
		t.Errorf("site a: %+v", a)
	}
	if !sites[0].RedirectHTTPSEnabled() {
		t.Error("site a: an ACME site redirects to HTTPS by default")
	}
	b := sites[1].ACME
	if b == nil || b.CA != LetsEncryptProduction || b.Email != "blog@arka-web.org" || !strings.HasSuffix(b.CARoot, "root.pem") {
		t.Errorf("site b: %+v", b)
	}
	if sites[1].RedirectHTTPSEnabled() {
		t.Error("site b: redirect_https = false was not kept")
	}
	if sites[2].ACME != nil || sites[2].RedirectHTTPSEnabled() {
		t.Errorf("site c (acme = false): %+v", sites[2].ACME)
	}
	if sites[3].ACME != nil {
		t.Errorf("site d (nas.lan): %+v", sites[3].ACME)
	}
	plan := CertificatePlan(sites[0])
	if len(plan) != 4 || !plan[0].ACME || plan[1].ACME || !strings.Contains(plan[1].Why, ".local") ||
		plan[3].ACME || !strings.Contains(plan[3].Why, "DNS-01") {
		t.Errorf("plan: %+v", plan)
	}
}

func TestACMEErrors(t *testing.T) {
	base := "server_names = [\"www.arka-web.org\"]\nlisten = [\"127.0.0.1:18080\"]\n"
	for _, tc := range []struct{ src, want string }{
		{base + "[tls]\nlisten = [\"127.0.0.1:18443\"]\nemail = \"not an address\"", ":5:1: email \"not an address\" is not an email address"},
		{base + "[tls]\nlisten = [\"127.0.0.1:18443\"]\nemail = \"me@localhost\"", ":5:1: email \"me@localhost\": the CA needs a reachable address"},
		{base + "[tls]\nlisten = [\"127.0.0.1:18443\"]\nca = \"http://ca.arka-web.org/dir\"", ":5:1: ca \"http://ca.arka-web.org/dir\": ACME is spoken over https only"},
		{base + "[tls]\nlisten = [\"127.0.0.1:18443\"]\nca = \"letsencrypt-prod\"", ":5:1: ca \"letsencrypt-prod\": use \"production\", \"staging\""},
		{base + "[tls]\nlisten = [\"127.0.0.1:18443\"]\nca_root = \"missing.pem\"", ":5:1: ca_root: cannot read "},
		{base + "[tls]\nlisten = [\"127.0.0.1:18443\"]\nca_root = \"notpem.pem\"", "notpem.pem holds no PEM certificate"},
		{"server_names = [\"pi.local\"]\n[tls]\nlisten = [\"127.0.0.1:18443\"]\nacme = true", ":4:1: acme = true, but no server name can get a certificate"},
		{base + "[tls]\nlisten = [\"127.0.0.1:18443\"]\nacme = false\nemail = \"a@arka-web.org\"", ":6:1: email is an ACME setting, and this site gets no certificate from a CA"},
		{base + "redirect_https = true", ":3:1: redirect_https = true needs HTTPS"},
		{base + "hsts = \"max-age=600\"", ":3:1: hsts is sent over HTTPS only"},
		{base + "hsts = \"maxage=600\"\n[tls]\nlisten = [\"127.0.0.1:18443\"]", ":3:8: hsts \"maxage=600\": unknown directive"},
		{base + "hsts = \"includeSubDomains\"\n[tls]\nlisten = [\"127.0.0.1:18443\"]", "max-age is required"},
		{base + "hsts = \"max-age=600; max-age=0\"\n[tls]\nlisten = [\"127.0.0.1:18443\"]", ":3:8: hsts \"max-age=600; max-age=0\": max-age appears twice"},
		{base + "hsts = \"max-age=600; preload; Preload\"\n[tls]\nlisten = [\"127.0.0.1:18443\"]", "Preload appears twice"},
		{base + "[tls]\nlisten = [\"127.0.0.1:18443\"]\n[global]\nacme = { ca = \"ftp://x.arka-web.org\" }", ":6:"},
	} {
		_, err := loadACME(t, tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %q", tc.src, err, tc.want)
		}
	}
}
