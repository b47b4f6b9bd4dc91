package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/config"
)

// Every problem of the machine is reported at once: a certificate that
// cannot be loaded is listed with the other environment errors, not only
// when it is the sole one.
func TestCheckEnvironmentListsCertificate(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "www"), 0o755)
	file := filepath.Join(dir, "site.toml")
	src := `listen = ["127.0.0.1:1"]
server_names = ["a.test"]
[tls]
listen = ["127.0.0.1:2"]
cert = "nocert.pem"
key = "nokey.pem"
[log]
enabled = true
path = "/proc/nope/x.log"
[errors]
root = "nonexist"
pages = { "404" = "404.html" }
[[routes]]
path = "/p/"
handler = { type = "proxy", upstreams = ["https://127.0.0.1:9"], tls_ca = "noca.pem" }
[[routes]]
path = "/php/"
handler = { type = "fastcgi", root = "nodir", address = "127.0.0.1:9000" }
[[routes]]
path = "/"
handler = { type = "static", root = "www", fallback = "/missing.html" }
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sites, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	err = checkEnvironment(sites)
	if err == nil {
		t.Fatal("no error")
	}
	got := errorLines(err)
	for _, want := range []string{"tls_ca", `root "`, "fallback", "log path", "cannot load certificate"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n < 6 {
		t.Errorf("%d errors, want 6:\n%s", n, got)
	}
}
