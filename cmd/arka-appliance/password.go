package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/arkaweb/arka/appliance/deploy"
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
// It checks what `arka -t` checks on the device (config.Load, then
// config.CheckEnvironment), with the site laid out as there: Arka reads it
// through /tmp/arka/active, a link to the site, so a relative path that
// leaves the site directory finds nothing.
func siteFS(dir string) (fs.FS, error) {
	if dir == "" {
		return nil, nil
	}
	if st, err := os.Stat(filepath.Join(dir, "sites")); err != nil || !st.IsDir() {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("--site %s: %v", dir, err)
		}
		return nil, fmt.Errorf("--site: %s has no sites/ directory (a site directory holds its site files in sites/*.toml and the content they point at, e.g. root = \"../www\")", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "arka-site-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	device := filepath.Join(tmp, "tmp", "arka") // the device's /tmp/arka
	active := filepath.Join(device, "active")
	if err := os.MkdirAll(device, 0o755); err != nil {
		return nil, err
	}
	if err := os.Symlink(abs, active); err != nil {
		return nil, err
	}
	// Names under the temporary layout are shown as the user knows them.
	here := func(s string) string {
		s = strings.ReplaceAll(s, active, filepath.Clean(dir))
		return strings.ReplaceAll(s, device, "/tmp/arka")
	}
	sites, err := config.Load(filepath.Join(active, "sites"))
	if err == nil {
		err = config.CheckEnvironment(sites)
		// A path outside the site (absolute, or the php-fpm binary) is
		// on the device, not here: only what lies in the site's layout
		// is judged.
		var ce config.Errors
		if errors.As(err, &ce) {
			var keep config.Errors
			for _, e := range ce {
				if strings.Contains(e.Msg, tmp) {
					keep = append(keep, e)
				}
			}
			err = nil
			if len(keep) > 0 {
				err = keep
			}
		}
	}
	if err != nil {
		var ce config.Errors
		if errors.As(err, &ce) {
			var lines []string
			for _, e := range ce {
				lines = append(lines, here(e.Error()))
			}
			return nil, fmt.Errorf("--site %s: the site has mistakes (as the device would check it):\n%s", dir, strings.Join(lines, "\n"))
		}
		return nil, fmt.Errorf("--site %s: %s", dir, here(err.Error()))
	}
	return os.DirFS(dir), nil
}

// cmdPassword gives a device a new password: generated here, kept next to
// the old one until the device uses it, sent over the authenticated API,
// then the device reboots (gokrazy reads its password at boot) and the
// new one is checked.
func cmdPassword(args []string) error {
	fs := flag.NewFlagSet("password", flag.ExitOnError)
	var d deviceFlags
	d.register(fs)
	noReboot := fs.Bool("no-reboot", false, "do not reboot the device now: the new password takes effect at its next boot")
	fs.Parse(args)
	c, oldFile, err := d.client()
	if err != nil {
		return fmt.Errorf("password: %v", err)
	}
	raw := make([]byte, 15)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	pw := strings.ToLower(base32.StdEncoding.EncodeToString(raw))
	newFile := oldFile + ".new"
	if err := devices.WriteFile(newFile, []byte(pw+"\n")); err != nil {
		return err
	}
	ctx := context.Background()
	body, _ := json.Marshal(map[string]string{"password": pw})
	if err := apiCall(ctx, c, "POST", "/arka/password", body); err != nil {
		var unknown *unknownOutcomeError
		if !errors.As(err, &unknown) {
			// The device answered: it refused, nothing changed.
			os.Remove(newFile)
			return fmt.Errorf("password: %s: %v; it keeps its password, still in %s", d.host, err, oldFile)
		}
		return fmt.Errorf("password: %s: %v.\n"+
			"  It is not known whether the device took the new password. Until it reboots, the old one (%s) is valid.\n"+
			"  The new one is kept in %s: after the device's next reboot, if \"arka-appliance status --host %s\" is refused,\n"+
			"  the device uses the new one: move %s over %s. Or run this command again once the device answers",
			d.host, err, oldFile, newFile, d.host, newFile, oldFile)
	}
	if *noReboot {
		fmt.Printf("%s has its new password; it takes effect at its next boot. Until then the old one works.\n", d.host)
		fmt.Printf("After that reboot, move %s over %s.\n", newFile, oldFile)
		return nil
	}
	fmt.Fprintf(os.Stderr, "Rebooting %s so that it uses the new password...\n", d.host)
	if err := apiCall(ctx, c, "POST", "/reboot", nil); err != nil {
		return fmt.Errorf("password: reboot: %v.\n  %s has the new password from its next boot (kept in %s); until then the old one (%s) is valid.\n  After that reboot, move %s over %s", err, d.host, newFile, oldFile, newFile, oldFile)
	}
	nc := *c
	nc.Password = pw
	deadline := time.Now().Add(5 * time.Minute)
	time.Sleep(3 * time.Second)
	for {
		_, err := nc.State(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("password: %s did not answer with the new password within 5 minutes (%v); it is in %s, the old one in %s", d.host, err, newFile, oldFile)
		}
		time.Sleep(2 * time.Second)
	}
	if err := os.Rename(oldFile, oldFile+".old"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(newFile, oldFile); err != nil {
		return err
	}
	fmt.Printf("%s uses its new password, kept in %s (the old one is in %s.old).\n", d.host, oldFile, oldFile)
	fmt.Println("Other machines that update or deploy to it need a copy of that file.")
	return nil
}

// unknownOutcomeError is a request whose answer never came: the device
// may or may not have acted on it.
type unknownOutcomeError struct{ err error }

func (e *unknownOutcomeError) Error() string { return e.err.Error() }
func (e *unknownOutcomeError) Unwrap() error { return e.err }

// apiCall sends one request to the device's web UI API and checks for 200,
// within the client's request timeout. An error without an answer from the
// device is an *unknownOutcomeError.
func apiCall(ctx context.Context, c *deploy.Client, method, path string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.RequestTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.SetBasicAuth("gokrazy", c.Password)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", c.RequestTimeout())
		}
		var op *net.OpError
		var changed *devices.CertChangedError
		if (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &changed) {
			return err // nothing reached the device
		}
		return &unknownOutcomeError{err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusUnauthorized:
		return errors.New("the device refused the password")
	case http.StatusNotFound:
		return errors.New("this device's software cannot change its password; update it first")
	}
	return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
}
