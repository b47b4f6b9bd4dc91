package main

import (
	"path/filepath"
	"testing"
)

// TestSamePath: the last good copy belongs to the -c path however it is
// spelled (relative, "./", a trailing slash, absolute), and not to another.
func TestSamePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	abs := filepath.Join(dir, "ap", "sites")
	for _, p := range []string{"ap/sites", "./ap/sites", "ap/sites/", "ap/./sites", abs, abs + "/"} {
		if !samePath(p, "ap/sites") || !samePath(abs, p) {
			t.Errorf("%q is not the same -c path as ap/sites (%s)", p, abs)
		}
	}
	for _, p := range []string{"ap", "sites", "/ap/sites", "ap/sites2"} {
		if samePath(p, "ap/sites") {
			t.Errorf("%q is the same -c path as ap/sites", p)
		}
	}
}
