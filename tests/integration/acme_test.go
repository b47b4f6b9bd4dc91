package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/tests/integration/harness"
	"github.com/arkaweb/arka/tests/pebbletest"
)

// The real binary gets certificates from Pebble (Let's Encrypt's test CA,
// in this test process): arka -t says which names get them, curl verifies
// the chain against Pebble's root, and SIGHUP with a new name gets that
// one too.
func TestACMEWithPebble(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	dir := t.TempDir()
	httpAddr, httpsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	port := func(a string) int {
		_, p, _ := net.SplitHostPort(a)
		n, _ := strconv.Atoi(p)
		return n
	}
	ca := pebbletest.Start(t, pebbletest.Options{HTTPPort: port(httpAddr), TLSPort: port(httpsAddr)})
	os.MkdirAll(filepath.Join(dir, "www"), 0o755)
	os.WriteFile(filepath.Join(dir, "www", "index.html"), []byte("real certificate\n"), 0o644)
	site := func(names string) string {
		return fmt.Sprintf(`server_names = [%s]
listen = [%q]
[tls]
listen = [%q]
ca = %q
ca_root = %q
[[routes]]
path = "/"
handler = { type = "static", root = "www" }
`, names, httpAddr, httpsAddr, ca.DirectoryURL, ca.APIRootFile)
	}
	f := filepath.Join(dir, "site.toml")
	os.WriteFile(f, []byte(site(`"www.arka-pebble.net", "pi.local"`)), 0o644)
	code, out := harness.Run(t, "-t", "-c", f)
	if code != 0 || !strings.Contains(out, "www.arka-pebble.net: ACME from "+ca.DirectoryURL) ||
		!strings.Contains(out, "pi.local: self-signed (*.local is a local or reserved name)") {
		t.Fatalf("arka -t: %d\n%s", code, out)
	}
	p := harness.Start(t, nil, []string{"-c", f, "-state", filepath.Join(dir, "state")}, httpAddr, httpsAddr)
	get := func(name string) (string, error) {
		cmd := exec.Command("curl", "-sS", "--max-time", "5", "--cacert", ca.RootFile,
			"--resolve", name+":"+strconv.Itoa(port(httpsAddr))+":127.0.0.1",
			"https://"+name+":"+strconv.Itoa(port(httpsAddr))+"/")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	wait := func(name string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := get(name)
			if err == nil && out == "real certificate\n" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: curl never verified the certificate: %v %s\n%s", name, err, out, p.Output())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	wait("www.arka-pebble.net")
	// Plain HTTP is redirected to HTTPS.
	loc := harness.Curl(t, "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", "-H", "Host: www.arka-pebble.net", "http://"+httpAddr+"/x?y")
	if want := fmt.Sprintf("301 https://www.arka-pebble.net:%d/x?y", port(httpsAddr)); loc != want {
		t.Errorf("plain request: %q, want %q", loc, want)
	}
	os.WriteFile(f, []byte(site(`"www.arka-pebble.net", "blog.arka-pebble.net"`)), 0o644)
	p.Signal(syscall.SIGHUP)
	p.WaitOutput(t, "configuration reloaded")
	wait("blog.arka-pebble.net")
	if n := strings.Count(p.Output(), `msg="certificate obtained" `); n != 2 {
		t.Errorf("%d certificates obtained, want 2:\n%s", n, p.Output())
	}
}
