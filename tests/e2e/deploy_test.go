package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/build/vm"
	"github.com/arkaweb/arka/appliance/fat16"
	"github.com/arkaweb/arka/appliance/partition"
	"github.com/arkaweb/arka/server/status"
)

// TestAmd64DeployAndSettings builds an image with the command a person
// uses (a baked site, Wi-Fi settings, a hostname), edits its settings.txt
// as a person would (with a mistake), and on one VM checks: the baked site
// serves; the console shows the hostname, the mistake and "no wireless
// interface" and the static address it set instead of DHCP; the password
// lives in the user's configuration directory, outside the build directory
// (the Makefile's clean recipe cannot lose it); a deployed site wins over
// the baked one without a failed request; only changed files travel; a
// broken site is refused with file:line:col and the old one keeps serving;
// --rollback; a changed device key, and another machine answering with the
// device's name, are refused by update, deploy and status; after a reboot
// the deployed site serves again.
func TestAmd64DeployAndSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU: skipped with -short")
	}
	if err := vm.Available("amd64"); err != nil {
		t.Skipf("QEMU cannot run here: %v", err)
	}
	bd, err := image.LoadBoard("amd64")
	if err != nil {
		t.Fatal(err)
	}
	if err := image.CheckTools(bd); err != nil {
		t.Skip(err)
	}
	root := moduleRoot(t)
	dir := t.TempDir()
	cli := filepath.Join(dir, "arka-appliance")
	gob := exec.Command("go", "build", "-o", cli, "./cmd/arka-appliance")
	gob.Dir = root
	if out, err := gob.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The passwords' default place, the user's configuration directory
	// (XDG_CONFIG_HOME here, inherited by the CLI runs), not ARKA_DEVICES.
	t.Setenv("ARKA_DEVICES", "") // empty: not set (appliance/devices)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	devices := filepath.Join(dir, "config", "arka", "devices")

	site := func(name string, files map[string]string) string {
		d := filepath.Join(dir, name)
		for p, c := range files {
			os.MkdirAll(filepath.Join(d, filepath.Dir(p)), 0o755)
			if err := os.WriteFile(filepath.Join(d, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	const siteToml = "listen = [\":80\"]\n\n[[routes]]\npath = \"/status\"\nhandler = { type = \"status\" }\n\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"../www\" }\n"
	baked := site("baked", map[string]string{"sites/main.toml": siteToml, "www/index.html": "baked site\n"})
	passFile := filepath.Join(dir, "wifi-pass")
	os.WriteFile(passFile, []byte("correct horse battery\n"), 0o600)

	out := filepath.Join(dir, "images", "out")
	start := time.Now()
	cmd := exec.Command(cli, "build", "--board", "amd64", "-o", filepath.Join(out, "arka-amd64.img"), "--version", "e2e-deploy",
		"--hostname", "garden", "--site", baked, "--wifi-country", "DE", "--wifi-ssid", "Home", "--wifi-passphrase-file", passFile)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1764441516")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	t.Logf("built with the CLI in %s", time.Since(start).Round(100*time.Millisecond))
	pwFile := filepath.Join(devices, "garden", "gokr-pw.txt")
	if !strings.Contains(string(b), "New device password for \"garden\", kept in\n  "+pwFile) {
		t.Errorf("the build did not say where the new password is:\n%s", b)
	}
	if st, err := os.Stat(pwFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v %v", st, err)
	}
	// make clean (the Makefile's own recipe, run in this test's directory,
	// whose images/out the build wrote): the build directory goes, the
	// password stays.
	img := filepath.Join(dir, "arka-amd64.img")
	if err := os.Rename(filepath.Join(out, "arka-amd64.img"), img); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(out, "*pw*")); len(m) > 0 {
		t.Errorf("password files in the build directory: %v", m)
	}
	if b, err := exec.Command("make", "-C", dir, "-f", filepath.Join(root, "Makefile"), "clean").CombinedOutput(); err != nil {
		t.Fatalf("make clean: %v\n%s", err, b)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("make clean left %s (%v)", out, err)
	}
	pwb, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	pw := strings.TrimSpace(string(pwb))

	// A person edits settings.txt on the card: a mistake in the time zone.
	// QEMU's user network without DHCP: the address its DHCP server would
	// give, set statically.
	editSettings(t, img, "hostname = \"garden\"\ntimezone = \"Mars/Olympus\"\ndns = [\"10.0.2.3\"]\n\n[wifi]\ncountry = \"DE\"\n\n[[wifi.networks]]\nssid = \"Home\"\npassphrase = \"correct horse battery\"\n\n[ipv4]\naddress = \"10.0.2.15/24\"\ngateway = \"10.0.2.2\"\n")

	v := boot(t, vm.Options{Board: "amd64", Image: img, DiskSize: 3 << 30, GuestPorts: []int{80, 443, 8080, 8443}})
	arka := fmt.Sprintf("127.0.0.1:%d", v.Ports[80])
	ui := fmt.Sprintf("127.0.0.1:%d", v.Ports[8080])
	api := fmt.Sprintf("127.0.0.1:%d", v.Ports[8443]) // HTTPS, the device's own key
	took := waitHTTP(t, v, "http://"+arka+"/")
	t.Logf("boot to first HTTP response: %s", took.Round(100*time.Millisecond))
	if _, body := get(t, plain, "http://"+arka+"/", "", "", nil); body != "baked site\n" {
		t.Errorf("GET / = %q, want the baked site", body)
	}
	console := v.SerialTail(1 << 20)
	for _, want := range []string{
		`arka-init: settings: settings.txt:2:1: timezone "Mars/Olympus" is not a time zone name`,
		"arka-init: settings: hostname garden (garden.local on the LAN)",
		"arka-init: wifi: no wireless interface on this machine: the 1 network(s) in settings.txt are not used",
		"arka-init: settings: IPv4 address 10.0.2.15/24 on eth0, gateway 10.0.2.2",
		"arka-init: settings: not starting DHCP on eth0 (static IPv4 address)",
	} {
		if !strings.Contains(console, want) {
			t.Errorf("console lacks %q", want)
		}
	}
	if strings.Contains(console, "correct horse") {
		t.Errorf("the Wi-Fi passphrase appears on the console")
	}
	code, body := get(t, plain, "http://"+ui+"/", "gokrazy", pw, map[string]string{"Accept": "application/json"})
	if code != 200 || !strings.Contains(body, `"Hostname":"garden"`) {
		t.Errorf("gokrazy status: %d %.300s", code, body)
	}
	// The status page shows the settings file's state and the site.
	appliance := func() status.Appliance {
		t.Helper()
		code, body := get(t, plain, "http://"+arka+"/status", "", "", map[string]string{"Accept": "application/json"})
		var st struct {
			Appliance *status.Appliance `json:"appliance"`
		}
		if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || st.Appliance == nil {
			t.Fatalf("status page: %d %v, no appliance section:\n%.500s", code, err, body)
		}
		return *st.Appliance
	}
	ap := appliance()
	if ap.Hostname != "garden" || len(ap.Settings.Errors) != 1 || !strings.Contains(ap.Settings.Errors[0], `settings.txt:2:1: timezone "Mars/Olympus"`) ||
		ap.Deploy.Generation != 0 || !strings.Contains(ap.Settings.WiFi, "no wireless interface") {
		t.Errorf("status page, appliance: %+v", ap)
	}
	if _, body := get(t, plain, "http://"+arka+"/status", "", "", nil); !strings.Contains(body, "Mars/Olympus") || !strings.Contains(body, "baked into the image") {
		t.Errorf("the status page's HTML does not show the settings mistake and the baked site")
	}

	deploy := func(args ...string) cliResult {
		t.Helper()
		r := runCLI(t, cli, append([]string{"deploy", "--host", api, "--name", "garden"}, args...)...)
		t.Logf("deploy %v (exit %d, %s):\n%s%s", args, r.code, r.took.Round(100*time.Millisecond), r.stderr, r.stdout)
		return r
	}
	page := func() string {
		_, body := get(t, plain, "http://"+arka+"/", "", "", nil)
		return body
	}
	mine := site("mine", map[string]string{"sites/main.toml": siteToml, "www/index.html": "deployed v1\n", "www/big.txt": strings.Repeat("arka ", 50000)})
	// Off a terminal, a device whose key nobody vouched for is refused
	// (QA A13); --fingerprint with the key the console shows pins it.
	pinFile := filepath.Join(devices, "garden", "device-cert.sha256")
	if r := deploy(mine); r.code == 0 || !strings.Contains(r.stderr, "--fingerprint SHA256:") {
		t.Errorf("first deploy off a terminal without --fingerprint: exit %d, want a refusal", r.code)
	}
	if _, err := os.Stat(pinFile); !os.IsNotExist(err) {
		t.Errorf("pinned without a confirmation: %v", err)
	}
	fp := regexp.MustCompile(`device key SHA256 ([0-9a-f]{64})`).FindStringSubmatch(v.SerialTail(1 << 20))
	if fp == nil {
		t.Fatalf("the console does not show the device key")
	}
	r := deploy("--fingerprint", "SHA256:"+fp[1], mine)
	if r.code != 0 || !strings.Contains(r.stdout, "Generation 1 is live") {
		t.Fatalf("first deploy failed")
	}
	pin, err := os.ReadFile(pinFile)
	if err != nil || strings.TrimSpace(string(pin)) != fp[1] {
		t.Fatalf("the first HTTPS connection did not pin the device's key: %v %q", err, pin)
	}
	if got := page(); got != "deployed v1\n" {
		t.Fatalf("after the deploy GET / = %q", got)
	}
	if ap := appliance(); ap.Deploy.Generation != 1 || ap.Deploy.Files != 3 || !strings.Contains(ap.Deploy.From, "@") {
		t.Errorf("status page after the deploy: %+v", ap.Deploy)
	}

	// Second deploy: one changed file travels, and requests during the
	// switch all succeed.
	os.WriteFile(filepath.Join(mine, "www", "index.html"), []byte("deployed v2\n"), 0o644)
	var failed, total atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-stop:
				return
			default:
			}
			total.Add(1)
			resp, err := c.Get("http://" + arka + "/")
			if err != nil {
				failed.Add(1)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failed.Add(1)
			}
		}
	}()
	r = deploy(mine)
	close(stop)
	wg.Wait()
	if r.code != 0 || !strings.Contains(r.stderr, "sending 1 changed files") || !strings.Contains(r.stdout, "Generation 2 is live") {
		t.Errorf("second deploy: want one changed file sent and generation 2")
	}
	if got := page(); got != "deployed v2\n" {
		t.Errorf("after the second deploy GET / = %q", got)
	}
	t.Logf("requests during the deploy: %d, failed: %d", total.Load(), failed.Load())
	if failed.Load() > 0 || total.Load() == 0 {
		t.Errorf("%d of %d requests failed during the deploy", failed.Load(), total.Load())
	}

	// A broken site: refused with the file and line, the old site stays.
	os.WriteFile(filepath.Join(mine, "sites", "main.toml"), []byte(siteToml+"\n[compression]\nlevel = \"max\"\nfast = true\n"), 0o644)
	os.WriteFile(filepath.Join(mine, "www", "index.html"), []byte("broken v3\n"), 0o644)
	r = deploy(mine)
	if r.code == 0 || !regexp.MustCompile(regexp.QuoteMeta(filepath.Join(mine, "sites", "main.toml"))+`:12:1: .*compression\.level`).MatchString(r.stderr) {
		t.Errorf("broken deploy: want a non-zero exit and DIR/sites/main.toml:12:1 naming compression.level")
	}
	if got := page(); got != "deployed v2\n" {
		t.Errorf("after the refused deploy GET / = %q, want v2", got)
	}
	if ap := appliance(); ap.Deploy.Generation != 2 || !strings.Contains(ap.Deploy.LastError, "deploy refused: sites/main.toml:") {
		t.Errorf("status page after the refused deploy: %+v", ap.Deploy)
	}

	// Rollback: generation 1 again.
	if r := deploy("--rollback"); r.code != 0 || !strings.Contains(r.stdout, "rolled back from generation 2 to generation 1") {
		t.Errorf("rollback failed")
	}
	if got := page(); got != "deployed v1\n" {
		t.Errorf("after the rollback GET / = %q, want v1", got)
	}
	if ap := appliance(); ap.Deploy.Generation != 1 {
		t.Errorf("status page after the rollback: generation %d, want 1", ap.Deploy.Generation)
	}

	// A site on the device's own update/deploy port is refused by the
	// check, at its listen entry (it would pass `arka -t` elsewhere).
	clash := site("clash", map[string]string{"sites/main.toml": siteToml, "www/index.html": "clash\n",
		"sites/second.toml": "server_names = [\"app.example\"]\nlisten = [\":8443\"]\n\n[[routes]]\npath = \"/\"\nhandler = { type = \"respond\", body = \"second\" }\n"})
	if r := deploy(clash); r.code == 0 || !strings.Contains(r.stderr, filepath.Join(clash, "sites", "second.toml")+":2:11: port 8443 is the device's update/deploy API") {
		t.Errorf("a site on port 8443: want it refused at second.toml:2:11")
	}
	if got := page(); got != "deployed v1\n" {
		t.Errorf("after the refused deploy GET / = %q, want v1", got)
	}

	// Arka stopped (through gokrazy's UI, as in its restart backoff): a
	// deploy that passes the check is made current and served when Arka
	// starts again.
	gokrazyForm := func(path string) {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Timeout: 10 * time.Second, Jar: jar}
		req, _ := http.NewRequest("GET", "http://"+ui+"/status?path=/user/arka", nil)
		req.SetBasicAuth("gokrazy", pw)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		u, _ := url.Parse("http://" + ui + "/")
		var token string
		for _, ck := range jar.Cookies(u) {
			if ck.Name == "gokrazy_xsrf" {
				token = ck.Value
			}
		}
		req, _ = http.NewRequest("POST", "http://"+ui+path, strings.NewReader(url.Values{"path": {"/user/arka"}, "xsrftoken": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("gokrazy", pw)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err = c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			t.Fatalf("gokrazy %s: %s", path, resp.Status)
		}
	}
	gokrazyForm("/stop")
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := plain.Get("http://" + arka + "/"); err != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	fixed := site("fixed", map[string]string{"sites/main.toml": siteToml, "www/index.html": "deployed v4\n"})
	if r := deploy(fixed); r.code != 0 || !strings.Contains(r.stdout, "Generation 3 is current") || !strings.Contains(r.stdout, "not served yet") {
		t.Errorf("deploy while Arka is stopped: want generation 3 current, not served yet")
	}
	gokrazyForm("/restart")
	waitHTTP(t, v, "http://"+arka+"/")
	if got := page(); got != "deployed v4\n" {
		t.Errorf("after Arka started again GET / = %q, want v4", got)
	}
	if r := deploy("--rollback"); r.code != 0 || !strings.Contains(r.stdout, "rolled back from generation 3 to generation 1") {
		t.Errorf("rollback to generation 1 failed")
	}
	if got := page(); got != "deployed v1\n" {
		t.Errorf("after the second rollback GET / = %q, want v1", got)
	}

	// The update client (and deploy) refuse a device whose key changed,
	// and say how to accept it.
	os.WriteFile(pinFile, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	for _, args := range [][]string{{"status", "--host", api, "--name", "garden"}, {"deploy", "--host", api, "--name", "garden", mine}} {
		r := runCLI(t, cli, args...)
		if r.code == 0 || !strings.Contains(r.stderr, `the certificate of device "garden" changed`) || !strings.Contains(r.stderr, "deleting "+pinFile) {
			t.Errorf("%s with a changed key: exit %d\n%s", args[0], r.code, r.stderr)
		}
	}
	os.WriteFile(pinFile, pin, 0o600)
	if r := runCLI(t, cli, "status", "--host", api, "--name", "garden"); r.code != 0 {
		t.Errorf("status over HTTPS with the right pin: exit %d\n%s", r.code, r.stderr)
	}
	// Another machine answering for "garden" (a reflashed card, or someone
	// in between) with its own certificate: update, deploy and status are
	// refused before any request, so neither the password nor an image
	// reaches it.
	var impostorRequests atomic.Int64
	impostor := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { impostorRequests.Add(1) }))
	impostor.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	impostor.StartTLS()
	defer impostor.Close()
	other := strings.TrimPrefix(impostor.URL, "https://")
	for _, args := range [][]string{
		{"update", "--host", other, "--name", "garden", "--image", img, "--check-url", "-"},
		{"deploy", "--host", other, "--name", "garden", mine},
		{"status", "--host", other, "--name", "garden"},
	} {
		r := runCLI(t, cli, args...)
		if r.code == 0 || !strings.Contains(r.stderr, `the certificate of device "garden" changed`) || !strings.Contains(r.stderr, "nothing was sent") {
			t.Errorf("%s to another machine with the device's name: exit %d\n%s", args[0], r.code, r.stderr)
		}
	}
	if n := impostorRequests.Load(); n != 0 {
		t.Errorf("the other machine received %d requests", n)
	}
	if b, _ := os.ReadFile(pinFile); string(b) != string(pin) {
		t.Errorf("the pin changed after talking to another machine: %q", b)
	}

	// A new device password (the device reboots to use it); after the
	// reboot the deployed generation serves again, not the baked site.
	boots := strings.Count(v.SerialTail(1<<22), "arka-init: Arka ")
	rebooted := time.Now()
	r = runCLI(t, cli, "password", "--host", api, "--name", "garden")
	t.Logf("password (exit %d, %s):\n%s%s", r.code, r.took.Round(100*time.Millisecond), r.stderr, r.stdout)
	if r.code != 0 {
		t.Fatalf("password rotation failed")
	}
	if strings.Count(v.SerialTail(1<<22), "arka-init: Arka ") == boots {
		t.Fatal("the device did not reboot for its new password")
	}
	newPw, err := os.ReadFile(pwFile)
	if err != nil || strings.TrimSpace(string(newPw)) == pw {
		t.Fatalf("the password file was not replaced: %v", err)
	}
	if old, err := os.ReadFile(pwFile + ".old"); err != nil || strings.TrimSpace(string(old)) != pw {
		t.Errorf("the old password is not kept next to the new one: %v", err)
	}
	if code, _ := get(t, plain, "http://"+ui+"/", "gokrazy", pw, nil); code != http.StatusUnauthorized {
		t.Errorf("the old password still works after the rotation: %d", code)
	}
	if code, _ := get(t, plain, "http://"+ui+"/", "gokrazy", strings.TrimSpace(string(newPw)), nil); code != 200 {
		t.Errorf("the new password does not work: %d", code)
	}
	waitHTTP(t, v, "http://"+arka+"/")
	t.Logf("reboot to Arka answering: %s", time.Since(rebooted).Round(100*time.Millisecond))
	if got := page(); got != "deployed v1\n" {
		t.Errorf("after the reboot GET / = %q, want the deployed generation 1", got)
	}
	if !strings.Contains(v.SerialTail(1<<20), "arka-init: deploy: serving generation 1") {
		t.Errorf("the console does not say which generation serves")
	}
}

// editSettings replaces settings.txt in an image's boot FAT in place (the
// new text padded with spaces to the old size), as an edit on a computer
// would change it.
func editSettings(t *testing.T, img, text string) {
	t.Helper()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := partition.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := tab.Entry(partition.Boot)
	off, n, err := fat16.Extents(io.NewSectionReader(f, p1.Offset(), p1.Size()), "/settings.txt")
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(text)) > n {
		t.Fatalf("new settings (%d bytes) longer than the file (%d)", len(text), n)
	}
	text += strings.Repeat(" ", int(n)-len(text))
	if _, err := f.WriteAt([]byte(text), p1.Offset()+off); err != nil {
		t.Fatal(err)
	}
}
