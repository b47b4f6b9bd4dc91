package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/build/vm"
	"github.com/arkaweb/arka/appliance/partition"
	"github.com/arkaweb/arka/server/status"
)

// onPerm runs debugfs commands on the perm partition of a powered-off disk
// (paths relative to /perm).
func onPerm(t *testing.T, disk string, cmds ...string) {
	t.Helper()
	debugfs, err := exec.LookPath("debugfs")
	if err != nil {
		debugfs = "/usr/sbin/debugfs"
	}
	script := filepath.Join(t.TempDir(), "debugfs.cmd")
	os.WriteFile(script, []byte(strings.Join(cmds, "\n")+"\n"), 0o644)
	dev := fmt.Sprintf("%s?offset=%d", disk, int64(partition.PermStart)*partition.SectorSize)
	if out, err := exec.Command(debugfs, "-w", "-f", script, dev).CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v\n%s", err, out)
	}
}

// permFree returns the bytes of the perm partition of disk that an
// ordinary writer may still use (free blocks less the reserved ones).
func permFree(t *testing.T, disk string) int64 {
	t.Helper()
	dumpe2fs, err := exec.LookPath("dumpe2fs")
	if err != nil {
		dumpe2fs = "/usr/sbin/dumpe2fs"
	}
	dev := fmt.Sprintf("%s?offset=%d", disk, int64(partition.PermStart)*partition.SectorSize)
	out, err := exec.Command(dumpe2fs, "-h", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("dumpe2fs: %v\n%s", err, out)
	}
	field := func(name string) int64 {
		m := regexp.MustCompile(`(?m)^` + name + `:\s+(\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("dumpe2fs: no %q in\n%s", name, out)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n
	}
	return (field("Free blocks") - field("Reserved block count")) * field("Block size")
}

// validCert returns a PEM certificate for "arka" (its key is not used:
// the test pairs it with a key that does not load).
func validCert(t *testing.T) string {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "arka"}, DNSNames: []string{"arka"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestAmd64Heals: the appliance degrades instead of dying, on one image
// booted twice.
//
// First boot: the site on /perm names a key that does not load, and /perm
// is nearly full. Plain HTTP serves the site, HTTPS a self-signed
// certificate, the status page names the site file's line; an update's
// preflight is refused in one line with nothing written.
//
// Second boot, after the site file got a mistake (and /perm room again):
// the last configuration that loaded keeps serving the site, and the
// status page shows the mistake at file:line:col.
func TestAmd64Heals(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU: skipped with -short")
	}
	if err := vm.Available("amd64"); err != nil {
		t.Skipf("QEMU cannot run here: %v", err)
	}
	img, pwFile, _ := buildImage(t, "amd64")
	pwb, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	pw := strings.TrimSpace(string(pwb))

	const page = "<h1>the site on /perm</h1>\n"
	site := `default = true
server_names = ["arka"]
listen = [":80"]
[tls]
listen = [":443"]
cert = "/perm/arka/tls/cert.pem"
key = "/perm/arka/tls/key.pem"
[[routes]]
path = "/status"
handler = { type = "status", allow = ["10.0.0.0/8", "127.0.0.0/8"] }
[[routes]]
path = "/"
handler = { type = "static", root = "/perm/arka/www" }
`
	putOnPerm(t, img, "arka/www/index.html", page)
	putOnPerm(t, img, "arka/sites/default.toml", site)
	putOnPerm(t, img, "arka/tls/cert.pem", validCert(t))
	putOnPerm(t, img, "arka/tls/key.pem", "-----BEGIN EC PRIVATE KEY-----\nbm90IGEga2V5\n-----END EC PRIVATE KEY-----\n")
	// Leave /perm 2 MiB: less than an update needs to record its trial.
	filler := filepath.Join(t.TempDir(), "filler")
	// Not zeros: debugfs would store those as a hole.
	if err := os.WriteFile(filler, bytes.Repeat([]byte{0xA5}, int(permFree(t, img)-2<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	onPerm(t, img, "write "+filler+" filler")
	t.Logf("/perm left with %.1f MiB", float64(permFree(t, img))/(1<<20))

	v := boot(t, vm.Options{Board: "amd64", Image: img}) // the image's size: /perm does not grow
	port := func(p int) string { return fmt.Sprintf("127.0.0.1:%d", v.Ports[p]) }
	took := waitHTTP(t, v, "http://"+port(80)+"/")
	t.Logf("booted: first HTTP response after %s", took.Round(100*time.Millisecond))

	// A key that does not load: plain HTTP serves, HTTPS with a
	// self-signed certificate, the problem on the status page.
	if code, body := get(t, plain, "http://"+port(80)+"/", "", "", nil); code != 200 || body != page {
		t.Errorf("plain HTTP: %d %q", code, body)
	}
	c, err := tls.Dial("tcp", port(443), &tls.Config{InsecureSkipVerify: true, ServerName: "arka"})
	if err != nil {
		t.Fatalf("TLS: %v", err)
	}
	if org := c.ConnectionState().PeerCertificates[0].Subject.Organization; len(org) == 0 || org[0] != "Arka self-signed" {
		t.Errorf("HTTPS serves %v, want Arka's self-signed certificate", c.ConnectionState().PeerCertificates[0].Subject)
	}
	c.Close()
	if code, body := get(t, insecure, "https://"+port(443)+"/", "", "", nil); code != 200 || body != page {
		t.Errorf("HTTPS: %d %q", code, body)
	}
	snap := statusOf(t, port(80))
	// (The site file is named as Arka was given it: through arka-init's
	// link to the active site, /tmp/arka/active/sites.)
	if len(snap.Problems) != 1 || !strings.Contains(snap.Problems[0], "/sites/default.toml:7:7: cannot load key /perm/arka/tls/key.pem for certificate /perm/arka/tls/cert.pem: failed to parse private key") ||
		!strings.Contains(snap.Problems[0], "self-signed") || snap.Serving != status.ServingAsWritten {
		t.Errorf("status page: serving %q, problems %q", snap.Serving, snap.Problems)
	}

	// /perm nearly full: the update is refused before anything is written.
	ui := port(8080)
	code, body := postJSON(t, "http://"+ui+"/arka/update/preflight", pw, `{"to":{"board":"amd64","version":"v2"},"root_size":27000000}`)
	if code != 507 || !strings.Contains(body, "/perm has") || strings.Count(strings.TrimSpace(body), "\n") != 0 {
		t.Errorf("preflight with /perm full: %d %q", code, body)
	}
	t.Logf("preflight: %d %s", code, strings.TrimSpace(body))
	d := &device{t: t, v: v, pw: pw, ui: ui}
	if st := d.updateStatus(); st.Last != nil || st.NextBoot != 2 || st.Arka == nil || st.Arka.Starts != 1 {
		t.Errorf("device after the refused update: %+v", st)
	}

	// Power off; give the site file a mistake (and /perm its room).
	if code, body := post(t, "http://"+ui+"/poweroff", pw); code != 200 {
		t.Fatalf("POST /poweroff: %d %s", code, body)
	}
	select {
	case <-v.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("QEMU still runs 2 minutes after the power-off")
	}
	disk := v.Disk
	onPerm(t, disk, "rm filler", "rm arka/sites/default.toml")
	putOnPerm(t, disk, "arka/sites/default.toml", strings.Replace(site, "listen = [\":80\"]\n", "listen = [\":80\"]\nlisten_everywhere = true\n", 1))

	v = boot(t, vm.Options{Board: "amd64", Image: disk})
	took = waitHTTP(t, v, "http://"+port2(v, 80)+"/")
	t.Logf("booted again: first HTTP response after %s", took.Round(100*time.Millisecond))
	if code, body := get(t, plain, "http://"+port2(v, 80)+"/", "", "", nil); code != 200 || body != page {
		t.Errorf("the last good site: %d %q", code, body)
	}
	snap = statusOf(t, port2(v, 80))
	if snap.Serving != status.ServingLastGood || len(snap.Problems) == 0 ||
		!strings.Contains(snap.Problems[0], "/sites/default.toml:4:1: ") || !strings.Contains(snap.Problems[0], "listen_everywhere") {
		t.Errorf("status page: serving %q, problems %q", snap.Serving, snap.Problems)
	}
	_, html := get(t, plain, "http://"+port2(v, 80)+"/status", "", "", nil)
	if !strings.Contains(html, "Serving the last configuration that loaded") || !strings.Contains(html, "default.toml:4:1") {
		t.Errorf("the status page's HTML does not show the mistake")
	}
}

func port2(v *vm.VM, p int) string { return fmt.Sprintf("127.0.0.1:%d", v.Ports[p]) }

// statusOf is Arka's status page (JSON) on addr.
func statusOf(t *testing.T, addr string) statusPage {
	t.Helper()
	code, body := get(t, plain, "http://"+addr+"/status", "", "", map[string]string{"Accept": "application/json"})
	var s statusPage
	if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil {
		t.Fatalf("status page: %d %v\n%.300s", code, err, body)
	}
	return s
}

// postJSON posts a JSON body with the web UI password.
func postJSON(t *testing.T, url, pw, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.SetBasicAuth("gokrazy", pw)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// statusPage is the part of the status page's JSON (status.Snapshot) these
// tests read.
type statusPage struct {
	Serving  string   `json:"serving"`
	Problems []string `json:"problems"`
}
