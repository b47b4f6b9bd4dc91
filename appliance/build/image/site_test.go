package image

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/images"
)

// TestDefaultSiteValid loads the site baked into every image with Arka's
// own configuration loader, its document root moved from /etc/arka/www
// to a copy on this machine (as arka-init does for /perm/arka/www).
func TestDefaultSiteValid(t *testing.T) {
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	sites := filepath.Join(dir, "sites")
	if err := os.CopyFS(dir, mustSub(t, images.Site, "site")); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(sites, "*.toml"))
	if len(files) == 0 {
		t.Fatal("no site files in images/site/sites")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if !strings.Contains(string(b), `"/etc/arka/www"`) {
			t.Errorf("%s does not serve /etc/arka/www", f)
		}
		os.WriteFile(f, []byte(strings.ReplaceAll(string(b), `"/etc/arka/www"`, `"`+www+`"`)), 0o644)
	}
	got, err := config.Load(sites)
	if err == nil {
		err = config.CheckEnvironment(got)
	}
	if err != nil {
		t.Fatalf("the default site does not load: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("%d sites", len(got))
	}
}

func mustSub(t *testing.T, f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}
