package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVMCommands (QA M4): the commands `arka-appliance vm` prints reach
// the VM as printed: its HTTPS API on the forwarded port, the password of
// the hostname the image was built for, and the key its console showed
// pinned under vmDevice, so no question is asked and a real device of the
// same hostname keeps its own pin.
func TestVMCommands(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ARKA_DEVICES", dir)
	os.MkdirAll(filepath.Join(dir, "arka"), 0o700)
	os.WriteFile(filepath.Join(dir, "arka", "gokr-pw.txt"), []byte("secret\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "arka", "device-cert.sha256"), []byte(strings.Repeat("ab", 32)+"\n"), 0o600) // the real device's
	fp := consoleKey("... https: web UI, update and deploy API on :8443, device key SHA256 " + strings.Repeat("0f", 32) + "\n...")
	if fp != strings.Repeat("0f", 32) {
		t.Fatalf("console key %q", fp)
	}
	if _, err := pinVM(strings.Repeat("11", 32)); err != nil { // an earlier VM's
		t.Fatal(err)
	}
	if err := unpinVM(); err != nil {
		t.Fatal(err)
	}
	pinFile, err := pinVM(fp)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := vmCommands(&out, "amd64", "arka", 40443, 40080); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("commands:\n%s", out.String())
	}
	for _, l := range lines[:2] {
		f := strings.Fields(l)
		i := 0
		for i < len(f) && f[i] != "./cmd/arka-appliance" {
			i++
		}
		if i+2 > len(f) {
			t.Fatalf("not a command: %q", l)
		}
		fs := flag.NewFlagSet(f[i+1], flag.ContinueOnError)
		var d deviceFlags
		d.register(fs)
		if err := fs.Parse(f[i+2:]); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		dev, err := d.device()
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if dev.base != "https://127.0.0.1:40443" || dev.pw != "secret" || dev.name != vmDevice {
			t.Errorf("%q: device %+v", l, dev)
		}
	}
	if !strings.Contains(lines[2], "update --host 127.0.0.1:40443 --name arka-vm --password-file "+filepath.Join(dir, "arka", "gokr-pw.txt")+" --hostname arka --board amd64 --check-url http://127.0.0.1:40080/") {
		t.Errorf("update: %q", lines[2])
	}
	if b, _ := os.ReadFile(pinFile); strings.TrimSpace(string(b)) != fp {
		t.Errorf("VM pin %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "arka", "device-cert.sha256")); strings.TrimSpace(string(b)) != strings.Repeat("ab", 32) {
		t.Errorf("the real device's pin was changed: %q", b)
	}
}
