package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/config"
)

// arka -t says which names get certificates from the CA and which stay
// self-signed, and why.
func TestPrintCertPlan(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "www"), 0o755)
	f := filepath.Join(dir, "site.toml")
	os.WriteFile(f, []byte(`server_names = ["www.arka-web.org", "10.0.0.2", "pi.local", "*.arka-web.org", "nas"]
listen = ["127.0.0.1:18080"]
[tls]
listen = ["127.0.0.1:18443"]
ca = "staging"
[[routes]]
path = "/"
handler = { type = "static", root = "www" }
`), 0o644)
	sites, err := config.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printCertPlan(&b, sites)
	want := `site.toml: tls: www.arka-web.org: ACME from https://acme-staging-v02.api.letsencrypt.org/directory
site.toml: tls: 10.0.0.2: self-signed (an IP address)
site.toml: tls: pi.local: self-signed (*.local is a local or reserved name)
site.toml: tls: *.arka-web.org: self-signed (a wildcard needs the DNS-01 challenge, which Arka does not do)
site.toml: tls: nas: self-signed (a name without a dot)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
