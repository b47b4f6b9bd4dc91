package main

import (
	"bytes"
	"embed"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/arkaweb/arka/config"
)

//go:embed demo/site.toml demo/www
var demoFS embed.FS

// demoSite unpacks the embedded demo site into stateDir/demo/www (rewriting
// files only when their content changed, so mtimes and ETags stay stable)
// and returns its site configuration.
func demoSite(stateDir string) ([]*config.Site, error) {
	www := filepath.Join(stateDir, "demo", "www")
	err := fs.WalkDir(demoFS, "demo/www", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(www, strings.TrimPrefix(p, "demo/www"))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := demoFS.ReadFile(p)
		if err != nil {
			return err
		}
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
			return nil
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return nil, err
	}
	tmpl, err := demoFS.ReadFile("demo/site.toml")
	if err != nil {
		return nil, err
	}
	src := strings.ReplaceAll(string(tmpl), "{{WWW}}", www)
	site, err := config.Parse("(embedded demo site)", []byte(src))
	if err != nil {
		return nil, err
	}
	return []*config.Site{site}, nil
}
