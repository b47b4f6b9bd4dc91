package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/arkaweb/arka/appliance/devices"
	"github.com/arkaweb/arka/config"
)

// buildPasswordFile picks the device password file for a build: the one
// given, else the device's file in the user's configuration directory
// (appliance/devices), which `make clean` does not delete. created says
// the build is about to generate a new password.
func buildPasswordFile(given, hostname string) (file string, created bool, err error) {
	file = given
	if file == "" {
		if file, err = devices.PasswordFile(hostname); err != nil {
			return "", false, err
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return "", false, err
		}
	}
	_, err = os.Stat(file)
	return file, errors.Is(err, fs.ErrNotExist), nil
}

func printNewPassword(w io.Writer, hostname, file string) {
	fmt.Fprintf(w, "\nNew device password for %q, kept in\n  %s\n", hostname, file)
	fmt.Fprintln(w, "Updates and deploys need it; keep a copy (`make clean` does not delete it).")
	fmt.Fprintf(w, "If a device named %q is already running, it keeps the password it was built with:\n", hostname)
	fmt.Fprintln(w, "copy that file from the machine that built its image (same path here), or write this new image to its card.")
}

// siteFS checks a site directory for --site and returns it as the image's
// site (placed at /etc/arka/ on the device), or nil for the default site.
func siteFS(dir string) (fs.FS, error) {
	if dir == "" {
		return nil, nil
	}
	if _, err := config.Load(filepath.Join(dir, "sites")); err != nil {
		return nil, fmt.Errorf("--site %s: the site has mistakes:\n%v", dir, err)
	}
	return os.DirFS(dir), nil
}

// devicePassword reads the password of the device at host: from file if
// given, else from the device's file (by --name, else the name in host).
func devicePassword(host, name, file string) (pw, path string, err error) {
	if file == "" && name == "" {
		if name, err = devices.Name(host); err != nil {
			return "", "", err
		}
	}
	return devices.ReadPassword(name, file)
}
