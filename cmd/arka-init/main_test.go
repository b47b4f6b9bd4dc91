package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRewriteSites moves the baked site's document root to /perm/arka/www,
// as arka-init does when only /perm/arka/www exists.
func TestRewriteSites(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "baked"), filepath.Join(dir, "run")
	os.MkdirAll(from, 0o755)
	os.WriteFile(filepath.Join(from, "default.toml"), []byte("[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"/etc/arka/www\" }\n"), 0o644)
	os.WriteFile(filepath.Join(from, "README"), []byte("not a site"), 0o644)
	if err := rewriteSites(from, to, bakedWWW, "/perm/arka/www"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(to, "default.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `root = "/perm/arka/www"`) || strings.Contains(string(b), bakedWWW) {
		t.Errorf("rewritten site: %s", b)
	}
	if _, err := os.Stat(filepath.Join(to, "README")); err == nil {
		t.Error("copied a file that is not a site file")
	}
}

func TestWritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := writable(dir); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("probe left behind: %v", ents)
	}
}

// TestHealthTargets reads the image's default site as arka-init does on a
// trial boot: Arka must answer on port 80 and, with TLS, on 443.
func TestHealthTargets(t *testing.T) {
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	os.MkdirAll(www, 0o755)
	if err := rewriteSites(filepath.Join("..", "..", "images", "site", "sites"), filepath.Join(dir, "sites"), bakedWWW, www); err != nil {
		t.Fatal(err)
	}
	got, err := healthTargets(filepath.Join(dir, "sites"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Addr != "127.0.0.1:80" || got[0].TLS || got[1].Addr != "127.0.0.1:443" || !got[1].TLS {
		t.Errorf("targets %+v", got)
	}
	os.WriteFile(filepath.Join(dir, "sites", "default.toml"), []byte("listen = [\":80\"]\nbogus = 1\n"), 0o644)
	if _, err := healthTargets(filepath.Join(dir, "sites")); err == nil || !strings.Contains(err.Error(), "default.toml:2:1") {
		t.Errorf("broken site: %v", err)
	}
}
