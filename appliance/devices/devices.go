// Package devices keeps what a build machine knows about each appliance,
// one directory per device name, outside the build tree so that
// `make clean` cannot delete it:
//
//	$XDG_CONFIG_HOME/arka/devices/<name>/gokr-pw.txt   the device password (0600)
//	$XDG_CONFIG_HOME/arka/devices/<name>/device-cert.sha256
//	                                                    the pinned certificate of the device's
//	                                                    update API (trust on first use, like SSH's known_hosts)
//
// ($XDG_CONFIG_HOME defaults to ~/.config on Linux, ~/Library/Application
// Support on macOS, %AppData% on Windows: os.UserConfigDir.) ARKA_DEVICES
// overrides the whole directory (tests use it).
package devices

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/arkaweb/arka/internal/atomicfile"
)

// Dir returns the directory holding one subdirectory per device.
func Dir() (string, error) {
	if d := os.Getenv("ARKA_DEVICES"); d != "" {
		return d, nil
	}
	c, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory for the device passwords: %v (set ARKA_DEVICES or XDG_CONFIG_HOME)", err)
	}
	return filepath.Join(c, "arka", "devices"), nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Name returns the device name for a --host value: "arka", "arka.local",
// "arka.local:8443" and "ARKA" all name the device "arka". An address has
// no name: the error says to give the name (--name).
func Name(host string) (string, error) {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(h, ".")), ".local")
	if _, err := netip.ParseAddr(h); err == nil {
		return "", fmt.Errorf("%s is an address: give the device's name too (--name NAME, the hostname it was built with) so its password can be found", host)
	}
	if i := strings.IndexByte(h, '.'); i > 0 {
		h = h[:i] // garden.example.net: the device "garden"
	}
	if !nameRE.MatchString(h) {
		return "", fmt.Errorf("%q is not a device name (lower-case letters, digits, hyphens)", h)
	}
	return h, nil
}

// PasswordFile returns the password file of the named device.
func PasswordFile(name string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name, "gokr-pw.txt"), nil
}

// PinFile returns the file holding the pinned certificate fingerprint of
// the named device.
func PinFile(name string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name, "device-cert.sha256"), nil
}

// ReadPassword reads the named device's password (or the file given
// instead), saying how to recover when the file is missing.
func ReadPassword(name, file string) (pw, path string, err error) {
	if file == "" {
		if file, err = PasswordFile(name); err != nil {
			return "", "", err
		}
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return "", file, fmt.Errorf("no password for device %q on this machine (%s does not exist).\n"+
			"  The machine that built its image has it: copy that file here (same path), or give it with --password-file.\n"+
			"  Without it, write a new image to the card (arka-appliance flash): the new image carries a new password", name, file)
	}
	if err != nil {
		return "", file, err
	}
	pw = strings.TrimSpace(string(b))
	if pw == "" {
		return "", file, fmt.Errorf("%s is empty", file)
	}
	return pw, file, nil
}

// WriteFile writes data to path atomically with mode 0600, creating the
// device directory (0700): see package atomicfile.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// CreateFile writes data to path unless path exists, atomically and
// exclusively (O_EXCL semantics): path appears complete or not at all, and
// of two callers at once exactly one creates it. created is false if path
// already existed (data was not written).
func CreateFile(path string, data []byte) (created bool, err error) {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// writeTemp writes data (0600, synced) to a new temporary file next to
// path, creating the directory (0700).
func writeTemp(path string, data []byte) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
