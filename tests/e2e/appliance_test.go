// Package e2e builds Arka appliance images and boots them under QEMU: the
// amd64 image through UEFI (OVMF + systemd-boot), the arm64 Raspberry Pi
// image on QEMU's raspi3b with the kernel loaded directly.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/build/vm"
	"github.com/arkaweb/arka/appliance/fat16"
	"github.com/arkaweb/arka/appliance/partition"
)

// bootTimeout bounds one boot under TCG emulation (about 15-40 s here).
const bootTimeout = 4 * time.Minute

func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func buildImage(t *testing.T, board string) (img, pwFile, sbomHash string) {
	t.Helper()
	root := moduleRoot(t)
	bd, err := image.LoadBoard(board)
	if err != nil {
		t.Fatal(err)
	}
	if err := image.CheckTools(bd); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	img = filepath.Join(dir, "arka-"+board+".img")
	start := time.Now()
	sum, err := image.Build(image.Config{
		Board:           bd,
		Output:          img,
		ModuleDir:       root,
		Version:         "e2e-test",
		SourceDateEpoch: 1764441516,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %s: boot FAT %.1f MiB, root %.1f MiB", board, time.Since(start).Round(time.Millisecond), float64(sum.BootUsed)/(1<<20), float64(sum.RootUsed)/(1<<20))
	return img, sum.PasswordFile, sum.SBOMHash
}

func boot(t *testing.T, o vm.Options) *vm.VM {
	t.Helper()
	if err := vm.Available(o.Board); err != nil {
		t.Skipf("QEMU cannot run here: %v", err)
	}
	o.Dir = t.TempDir()
	v, err := vm.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		v.Stop()
		if t.Failed() {
			t.Logf("console log tail (%s):\n%s", v.SerialLog, v.SerialTail(6000))
		}
	})
	return v
}

var (
	plain    = &http.Client{Timeout: 3 * time.Second}
	insecure = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
)

// waitHTTP polls url until it answers 200, QEMU exits or the bound passes;
// it returns the time from QEMU's start to the first answer.
func waitHTTP(t *testing.T, v *vm.VM, url string) time.Duration {
	t.Helper()
	deadline := time.Now().Add(bootTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-v.Done():
			t.Fatalf("QEMU exited early: %v", v.Err())
		default:
		}
		resp, err := plain.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(v.Started)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s did not answer within %s", url, bootTimeout)
	return 0
}

// logMilestones logs the console lines that show where boot time went.
func logMilestones(t *testing.T, v *vm.VM) {
	b, _ := os.ReadFile(v.SerialLog)
	re := regexp.MustCompile(`(?m)^.*(Linux version|Run /gokrazy/init|arka-init: Arka|crng init done|perm: partition grown|now listening on 10\.0\.2\.15).*$`)
	for _, m := range re.FindAllString(string(b), -1) {
		t.Logf("  console: %.120s", m)
	}
}

func get(t *testing.T, c *http.Client, url, user, pw string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pw)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	var resp *http.Response
	for i := 0; i < 20; i++ { // services may still be starting
		resp, err = c.Do(req)
		if err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAmd64Appliance boots the amd64 image on a disk larger than the image
// and checks the default site over HTTP and HTTPS, the status page, the
// password on gokrazy's UI, and /perm: mounted read-write and grown to the
// disk.
func TestAmd64Appliance(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU: skipped with -short")
	}
	img, pwFile, sbomHash := buildImage(t, "amd64")
	pwb, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	pw := strings.TrimSpace(string(pwb))
	const disk = 3 << 30 // the image is 1.2 GB
	v := boot(t, vm.Options{Board: "amd64", Image: img, DiskSize: disk})
	base := func(port int) string { return fmt.Sprintf("127.0.0.1:%d", v.Ports[port]) }

	took := waitHTTP(t, v, "http://"+base(80)+"/")
	t.Logf("boot to first HTTP response: %s", took.Round(100*time.Millisecond))
	logMilestones(t, v)

	code, body := get(t, plain, "http://"+base(80)+"/", "", "", nil)
	if code != 200 || !strings.Contains(body, "Your Arka is working") || !strings.Contains(body, `href="/status"`) {
		t.Errorf("GET / over HTTP: %d %q", code, body)
	}
	code, body = get(t, insecure, "https://"+base(443)+"/", "", "", nil)
	if code != 200 || !strings.Contains(body, "Your Arka is working") {
		t.Errorf("GET / over HTTPS: %d %q", code, body)
	}
	code, body = get(t, plain, "http://"+base(80)+"/status", "", "", map[string]string{"Accept": "application/json"})
	var status struct {
		Version string `json:"version"`
		Board   struct {
			Model string `json:"model"`
			Kind  string `json:"kind"`
		} `json:"board"`
	}
	if err := json.Unmarshal([]byte(body), &status); code != 200 || err != nil || status.Version != "e2e-test" || status.Board.Kind != "qemu" {
		t.Errorf("GET /status: %d (%v), want 200 with Arka's version and a QEMU board:\n%.800s", code, err, body)
	}
	t.Logf("status page: Arka %s on %q (%s)", status.Version, status.Board.Model, status.Board.Kind)
	if code, body := get(t, plain, "http://"+base(80)+"/status", "", "", nil); code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("GET /status as HTML: %d %.200s", code, body)
	}

	// gokrazy's UI: only with the password.
	ui := "http://" + base(8080) + "/"
	if code, _ := get(t, plain, ui, "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("gokrazy UI without password: %d, want 401", code)
	}
	if code, _ := get(t, plain, ui, "gokrazy", pw+"x", nil); code != http.StatusUnauthorized {
		t.Errorf("gokrazy UI with a wrong password: %d, want 401", code)
	}
	code, body = get(t, plain, ui, "gokrazy", pw, map[string]string{"Accept": "application/json"})
	if code != 200 {
		t.Fatalf("gokrazy UI with the password: %d %.300s", code, body)
	}
	var st struct {
		BuildTimestamp string
		SBOMHash       string
		PermDev        string
		PermTotal      int64
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("gokrazy status JSON: %v\n%.300s", err, body)
	}
	if st.BuildTimestamp != time.Unix(1764441516, 0).UTC().Format(time.RFC3339) {
		t.Errorf("BuildTimestamp %q", st.BuildTimestamp)
	}
	if st.SBOMHash != sbomHash {
		t.Errorf("SBOMHash %q, want the build's %q", st.SBOMHash, sbomHash)
	}
	// perm = disk - 1104 MiB (boot, roots, GPT); ext4 overhead takes a little.
	wantPerm := int64(disk - 1104<<20)
	if st.PermDev != "/dev/vda4" || st.PermTotal < wantPerm*95/100 || st.PermTotal > wantPerm {
		t.Errorf("perm: %s with %d bytes, want /dev/vda4 with about %d (the disk minus the fixed partitions)", st.PermDev, st.PermTotal, wantPerm)
	}
	log, _ := os.ReadFile(v.SerialLog)
	if !regexp.MustCompile(`arka-init: perm: /dev/vda4 ext4 rw \d+ bytes`).Match(log) {
		t.Errorf("console log does not show /perm mounted read-write:\n%s", v.SerialTail(3000))
	}
	if !strings.Contains(string(log), "arka: sites /etc/arka/sites, state /perm/arka/state") {
		t.Errorf("Arka does not keep its state on /perm")
	}
	if strings.Contains(string(log), pw) {
		t.Errorf("the password appears in the console log")
	}

	// The boot partition as the next issue's updates will use it: gokrazy's
	// init must find and edit cmdline.txt and gokrazy.conf in place.
	for _, path := range []string{"/update/testboot", "/update/switch", "/poweroff"} {
		if code, body := post(t, "http://"+base(8080)+path, pw); code != 200 {
			t.Fatalf("POST %s: %d %s", path, code, body)
		}
	}
	select {
	case <-v.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("the VM did not power off")
	}
	checkBootEdits(t, v.Disk)
}

func post(t *testing.T, url, pw string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, nil)
	req.SetBasicAuth("gokrazy", pw)
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// checkBootEdits reads the boot FAT of a powered-off disk the way gokrazy's
// init does: after testboot and switch, both files must carry the testboot
// flag inside their recorded size, point root= at partition 3, and the
// systemd-boot entry must keep its linux line.
func checkBootEdits(t *testing.T, disk string) {
	t.Helper()
	f, err := os.Open(disk)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := partition.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := tab.Entry(partition.Boot)
	boot := io.NewSectionReader(f, p1.Offset(), p1.Size())
	for _, name := range []string{"/cmdline.txt", "/loader/entries/gokrazy.conf"} {
		off, n, err := fat16.Extents(boot, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b := make([]byte, n)
		boot.ReadAt(b, off)
		if !bytes.Contains(b, []byte("/PARTNROFF=2 ")) || !bytes.Contains(b, []byte(" gokrazy.try_boot_inactive=1\n")) {
			t.Errorf("%s after testboot and switch: %q", name, b)
		}
		if strings.HasSuffix(name, ".conf") && !bytes.Contains(b, []byte("\rlinux /vmlinuz\roptions ")) {
			t.Errorf("%s lost its linux line: %q", name, b)
		}
	}
}

// putOnPerm writes a file (and its directories) into the perm ext4 file
// system of an image with debugfs (e2fsprogs).
func putOnPerm(t *testing.T, img, path, content string) {
	t.Helper()
	debugfs, err := exec.LookPath("debugfs")
	if err != nil {
		debugfs = "/usr/sbin/debugfs"
	}
	src := filepath.Join(t.TempDir(), "content")
	os.WriteFile(src, []byte(content), 0o644)
	var cmds []string
	dirs := strings.Split(path, "/")
	for i := 1; i < len(dirs); i++ {
		cmds = append(cmds, "mkdir "+strings.Join(dirs[:i], "/"))
	}
	cmds = append(cmds, "write "+src+" "+path)
	script := filepath.Join(t.TempDir(), "debugfs.cmd")
	os.WriteFile(script, []byte(strings.Join(cmds, "\n")+"\n"), 0o644)
	dev := fmt.Sprintf("%s?offset=%d", img, int64(partition.PermStart)*partition.SectorSize)
	if out, err := exec.Command(debugfs, "-w", "-f", script, dev).CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v\n%s", err, out)
	}
}

// TestArm64Appliance boots the Raspberry Pi image's kernel and root file
// system on QEMU's raspi3b and fetches the site: the arm64 binaries and
// root file system work, and content in /perm/arka/www replaces the baked
// page.
func TestArm64Appliance(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU: skipped with -short")
	}
	img, pwFile, _ := buildImage(t, "rpi")
	// Content on /perm overrides the page baked into the image.
	const page = "<h1>served from /perm/arka/www</h1>\n"
	putOnPerm(t, img, "arka/www/index.html", page)
	bd, _ := image.LoadBoard("rpi")
	kdir, err := image.ModuleDir("go", bd.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	v := boot(t, vm.Options{Board: "rpi", Image: img, KernelDir: kdir, DiskSize: 2 << 30})
	took := waitHTTP(t, v, fmt.Sprintf("http://127.0.0.1:%d/", v.Ports[80]))
	t.Logf("raspi3b: boot to first HTTP response: %s", took.Round(100*time.Millisecond))
	logMilestones(t, v)
	code, body := get(t, plain, fmt.Sprintf("http://127.0.0.1:%d/", v.Ports[80]), "", "", nil)
	if code != 200 || body != page {
		t.Errorf("GET /: %d %q, want the page from /perm/arka/www", code, body)
	}
	// The activity LED: driven (the state's "led" names it) when the guest's
	// kernel has one, else a clean "no LED"; either way the state is shown.
	code, body = get(t, plain, fmt.Sprintf("http://127.0.0.1:%d/status", v.Ports[80]), "", "", map[string]string{"Accept": "application/json"})
	var st struct {
		State struct {
			State string `json:"state"`
			LED   string `json:"led"`
		} `json:"state"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || st.State.State != "serving" ||
		(st.State.LED != "" && st.State.LED != "ACT" && st.State.LED != "led0") {
		t.Errorf("GET /status: %d (%v), want state serving and an LED name or none:\n%.600s", code, err, body)
	}
	t.Logf("raspi3b: state %q, activity LED %q", st.State.State, st.State.LED)
	// Arka's own log (gokrazy keeps it) says which: driven, or no LED.
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	want := "led=none"
	if st.State.LED != "" {
		want = `led="` + st.State.LED + " (default trigger"
	}
	if err := streamContains(fmt.Sprintf("http://127.0.0.1:%d/log?path=/user/arka&stream=stderr", v.Ports[8080]),
		"gokrazy", strings.TrimSpace(string(pw)), want, 20*time.Second); err != nil {
		t.Errorf("arka's log (gokrazy /log?path=/user/arka): %v", err)
	}
	log, _ := os.ReadFile(v.SerialLog)
	if !strings.Contains(string(log), `model "Raspberry Pi 3 Model B"`) {
		t.Errorf("gokrazy did not detect the Pi model")
	}
	if !regexp.MustCompile(`arka-init: perm: /dev/mmcblk0p4 ext4 rw \d+ bytes`).Match(log) {
		t.Errorf("/perm is not mounted read-write")
	}
	// The Pi has no real-time clock: arka-init moves the clock to the build
	// time, so Arka's self-signed certificate is not dated 1970.
	if !strings.Contains(string(log), "arka-init: clock: was behind the build time") {
		t.Errorf("arka-init did not move the 1970 clock forward")
	}
	resp, err := insecure.Get(fmt.Sprintf("https://127.0.0.1:%d/", v.Ports[443]))
	if err != nil {
		t.Fatalf("HTTPS: %v", err)
	}
	resp.Body.Close()
	if nb := resp.TLS.PeerCertificates[0].NotBefore; nb.Year() < 2025 {
		t.Errorf("certificate valid from %s: generated with the 1970 clock", nb)
	}
}

// streamContains reads a gokrazy log stream (it never ends by itself) until a
// line contains want, or fails after d with what it read.
func streamContains(url, user, pw, want string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(user, pw)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var seen strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			return nil
		}
		if seen.Len() < 4000 {
			seen.WriteString(sc.Text() + "\n")
		}
	}
	return fmt.Errorf("no %q in the log (%v); it had:\n%s", want, sc.Err(), seen.String())
}
