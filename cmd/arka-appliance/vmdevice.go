package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/devices"
	"github.com/arkaweb/arka/appliance/fat16"
	"github.com/arkaweb/arka/appliance/settings"
)

// vmDevice is the name under which `arka-appliance vm` pins the key of
// the VM it runs (devices.PinFile): a VM's key is made at its first boot,
// and each `vm` boots a fresh copy of the image, so the pin is replaced at
// every start. It is not the VM's hostname, so that a real device built
// with the same hostname keeps its own pin.
const vmDevice = "arka-vm"

// consoleKeyRE finds the key arka-init logs at boot ("device key SHA256 HEX").
var consoleKeyRE = regexp.MustCompile(`device key SHA256 ([0-9a-f]{64})`)

// consoleKey returns the device key's fingerprint (hex) from a console
// log, or "" when it is not there (yet).
func consoleKey(console string) string {
	if m := consoleKeyRE.FindStringSubmatch(console); m != nil {
		return m[1]
	}
	return ""
}

// imageHostname returns the hostname in the settings file of the image at
// path (settings.txt on its boot partition), or "arka", the builder's
// default, when it cannot be read.
func imageHostname(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "arka"
	}
	defer f.Close()
	s, err := image.OpenSections(f)
	if err != nil {
		return "arka"
	}
	off, n, err := fat16.Extents(s.Boot, "/"+settings.FileName)
	if err != nil {
		return "arka"
	}
	b := make([]byte, n)
	if _, err := s.Boot.ReadAt(b, off); err != nil {
		return "arka"
	}
	if set, _ := settings.Parse(settings.FileName, b); set.Hostname != "" {
		return set.Hostname
	}
	return "arka"
}

// vmCommands writes the deploy, status and update commands for a VM whose
// HTTPS API (guest 8443) is on 127.0.0.1:apiPort and Arka (guest 80) on
// 127.0.0.1:arkaPort: the device named vmDevice (its pinned key), with
// the password of hostname, the name the image was built for.
func vmCommands(w io.Writer, board, hostname string, apiPort, arkaPort int) error {
	pw, err := devices.PasswordFile(hostname)
	if err != nil {
		return err
	}
	dev := fmt.Sprintf("--host 127.0.0.1:%d --name %s --password-file %s", apiPort, vmDevice, shellQuote(pw))
	fmt.Fprintf(w, "  deploy        go run ./cmd/arka-appliance deploy %s mysite\n", dev)
	fmt.Fprintf(w, "  status        go run ./cmd/arka-appliance status %s\n", dev)
	fmt.Fprintf(w, "  update        go run ./cmd/arka-appliance update %s --hostname %s --board %s --check-url http://127.0.0.1:%d/\n", dev, hostname, board, arkaPort)
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pinVM pins fp (hex), the key the VM's own console shows, as vmDevice's,
// replacing the pin of an earlier VM; unpinVM removes it (at the start of
// a VM, before its key is known).
func pinVM(fp string) (string, error) {
	p, err := devices.PinFile(vmDevice)
	if err != nil {
		return "", err
	}
	return p, devices.WriteFile(p, []byte(fp+"\n"))
}

func unpinVM() error {
	p, err := devices.PinFile(vmDevice)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
