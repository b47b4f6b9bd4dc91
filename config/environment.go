package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// CheckEnvironment checks what validated sites need from the machine they
// run on: static, FastCGI and error-page roots are directories, a static
// fallback file and the error pages exist, a proxy's tls_ca file holds
// certificates (read once, into Proxy.TLSRoots and ACME.CARootCerts),
// access-log files can be opened for appending, and the
// php-fpm binary is an executable file (fpm = "auto" is looked up here, setting
// PHP.FPMPath). It returns every problem as Errors located at the key.
//
// Load does none of this: it reads the site files and nothing else (no
// other file, no DNS), so a configuration is valid or not wherever it is
// checked, and a listen host name is resolved only when it is bound.
// `arka -t`, start and reload run CheckEnvironment after Load; the TLS
// certificates are loaded (once) when the server builds the sites.
func CheckEnvironment(sites []*Site) error {
	var errs Errors
	ca := caFiles{}
	for _, s := range sites {
		v := &validator{file: s.File, pos: s.pos}
		for i := range s.Routes {
			r := &s.Routes[i]
			at := fmt.Sprintf("routes[%d].handler", r.index)
			switch h := r.Handler.(type) {
			case *Static:
				if v.dirExists(at, "root", h.Root) && h.Fallback != "" {
					if fi, err := os.Stat(filepath.Join(h.Root, h.Fallback)); err != nil || !fi.Mode().IsRegular() {
						v.errAt(at+".fallback", "fallback %q: no such file under root %s", h.Fallback, h.Root)
					}
				}
			case *FastCGI:
				v.dirExists(at, "root", h.Root)
			case *Proxy:
				if h.TLSCA != "" {
					// Read here, once; the proxy uses the pool.
					h.TLSRoots = nil
					certs, err := ca.load(h.TLSCA)
					if err != nil {
						v.errAt(at+".tls_ca", "tls_ca: %v", err)
					} else {
						h.TLSRoots = x509.NewCertPool()
						for _, c := range certs {
							h.TLSRoots.AddCert(c)
						}
					}
				}
			}
		}
		if e := s.Errors; e.Root != "" && v.dirExists("errors", "root", e.Root) {
			for _, key := range sortedKeys(e.Pages) {
				name := e.Pages[key]
				if fi, err := os.Stat(filepath.Join(e.Root, name)); err != nil || !fi.Mode().IsRegular() {
					v.errAt(errorPageKey(key), "error page %q: no such file under root %s", name, e.Root)
				}
			}
		}
		v.acmeEnvironment(s, ca)
		if s.Log.Enabled && s.Log.Path != "" && s.Log.Path != "-" {
			if err := writable(s.Log.Path); err != nil {
				v.errAtValue("log.path", "log path %s: %v", s.Log.Path, err)
			}
		}
		errs = append(errs, v.errs...)
	}
	if p := PHPOf(sites); p != nil {
		if err := p.findFPM(); err != nil {
			errs = append(errs, &Error{File: p.file, Line: p.fpmAt[0], Col: p.fpmAt[1], Msg: err.Error()})
		}
		// Sites whose php table is the one in force (identical to it) get
		// the same binary.
		for _, s := range sites {
			if s.PHP != nil && s.PHP != p {
				s.PHP.FPMPath = p.FPMPath
			}
		}
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool {
			if errs[i].File != errs[j].File {
				return errs[i].File < errs[j].File
			}
			return errs[i].Line < errs[j].Line
		})
		return errs
	}
	return nil
}

// findFPM resolves fpm = "auto" and checks the binary.
func (p *PHP) findFPM() error {
	if p.FPM == "auto" {
		path, err := FindFPM()
		if err != nil {
			return fmt.Errorf("fpm = \"auto\": %v", err)
		}
		p.FPMPath = path
		return nil
	}
	fi, err := os.Stat(p.FPMPath)
	switch {
	case err != nil:
		return fmt.Errorf("fpm %q: %s", p.FPM, errText(err))
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return fmt.Errorf("fpm %q is not an executable file", p.FPM)
	}
	return nil
}

// dirExists reports whether p is a directory, else records why not.
func (v *validator) dirExists(path, key, p string) bool {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		v.errAt(path+"."+key, "%s %q: %s", key, p, errText(err))
		return false
	case !fi.IsDir():
		v.errAt(path+"."+key, "%s %q is not a directory", key, p)
		return false
	}
	return true
}

// writable reports why a log file could not be opened for appending: the
// file itself if it exists, else its directory.
func writable(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return errors.New("is a directory")
		}
		return unix.Access(path, unix.W_OK)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %s: %v", dir, errText(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("directory %s: %v", dir, err)
	}
	return nil
}
