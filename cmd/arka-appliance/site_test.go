package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSiteChecksTheEnvironment: build --site refuses what `arka -t` on
// the device refuses (a root that does not exist once the site sits
// behind /tmp/arka/active), with file:line:col, and names a directory
// without sites/.
func TestSiteChecksTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("www/index.html", "hi")
	write("sites/a.toml", "listen = [\":80\"]\n\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"../www\" }\n")
	if _, err := siteFS(dir); err != nil {
		t.Fatalf("a good site: %v", err)
	}
	// Next to the site directory on this machine, but not on the device.
	if err := os.MkdirAll(filepath.Join(filepath.Dir(dir), "nowhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(filepath.Join(filepath.Dir(dir), "nowhere"))
	write("sites/a.toml", "listen = [\":80\"]\n\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"../../nowhere\" }\n")
	_, err := siteFS(dir)
	want := filepath.Join(dir, "sites", "a.toml") + ":5:"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "/tmp/arka/nowhere") {
		t.Errorf("a root outside the site: %v, want %s…", err, want)
	}
	write("sites/a.toml", "listen = [\":80\"]\n\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"../nowhere\" }\n")
	_, err = siteFS(dir)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), filepath.Join(dir, "nowhere")) {
		t.Errorf("a missing root: %v, want %s…", err, want)
	}
	empty := t.TempDir()
	if _, err := siteFS(empty); err == nil || err.Error() != "--site: "+empty+" has no sites/ directory (a site directory holds its site files in sites/*.toml and the content they point at, e.g. root = \"../www\")" {
		t.Errorf("no sites/: %v", err)
	}
}
