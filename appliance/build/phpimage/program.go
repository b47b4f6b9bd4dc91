package phpimage

import (
	"fmt"
	"os"
	"path/filepath"
)

// ProgramOptions select one program of a Debian package.
type ProgramOptions struct {
	Arch     string // Debian architecture: "amd64" or "arm64"
	Package  string // e.g. "wpasupplicant"
	Path     string // the program's path in the package, e.g. "/sbin/wpa_supplicant"
	CacheDir string // shared with Collect
	Logf     func(format string, args ...any)
}

// CollectProgram puts one program of a Debian package into an image the
// way Collect does php-fpm: the program, every shared library it needs
// (DT_NEEDED, recursively, from the library packages it depends on) and
// the dynamic loader. The appliance carries wpa_supplicant this way.
// Result.Needed lists each ELF file's needs; Result.FPM is empty.
func CollectProgram(o ProgramOptions) (*Result, error) {
	b, err := newBuilder(Options{Arch: o.Arch, CacheDir: o.CacheDir, Logf: o.Logf})
	if err != nil {
		return nil, err
	}
	if err := b.fetch([]string{o.Package}); err != nil {
		return nil, err
	}
	host := filepath.Join(b.trees[o.Package], filepath.FromSlash(o.Path))
	if _, err := os.Stat(host); err != nil {
		return nil, fmt.Errorf("phpimage: %s has no %s", o.Package, o.Path)
	}
	res := &Result{Packages: map[string]string{}, Needed: map[string][]string{}}
	used := map[string]bool{o.Package: true}
	if err := b.place(res, []elfFile{{o.Path, host, o.Package}}, used, []string{o.Package, "libraries", "dynamic loader"}); err != nil {
		return nil, err
	}
	for p := range used {
		res.Packages[p] = b.info[p].version
	}
	return res, nil
}
