// Package phpimage puts php-fpm into an appliance image: Debian's packages
// for the image's architecture, downloaded with apt-get download and
// unpacked with dpkg-deb (nothing is compiled), reduced to the php-fpm
// binary, the chosen extensions, the shared libraries they need (found by
// reading each ELF file's DT_NEEDED entries, recursively) and the dynamic
// loader at the path the binary's PT_INTERP names.
//
// Downloads are cached in a directory (images/out/debs by default, which
// git ignores) under the names apt-get gives them, so repeated builds are
// fast and use the same files. A foreign architecture must be known to
// apt first (as root: dpkg --add-architecture arm64 && apt-get update;
// .ci/run does this).
//
// php.ini is not baked: Arka writes it at every start of php-fpm, sized for
// the board it finds itself on (package appliance/device/phpfpm). The image gets
// the conf.d files that load the extensions, as Debian's postinst would
// make them.
package phpimage

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/arkaweb/arka/appliance/build/image"
)

// DefaultVersion is the PHP of Debian 12 (bookworm).
const DefaultVersion = "8.2"

// DefaultExtensions are what a typical small site (a wiki, a gallery, a
// small WordPress) needs beyond PHP's core (which includes json, pcre,
// hash, filter, session, random, zlib and openssl in Debian's build).
// gd is left out: with libgd3 and its image libraries (libjpeg, libpng,
// libwebp, libtiff, libheif, libX11 for libXpm, fontconfig and freetype)
// it adds several times what the rest costs; ask for it with
// Options.Extensions.
var DefaultExtensions = []string{
	"opcache", "pdo", "pdo_sqlite", "sqlite3", "mbstring",
	"ctype", "fileinfo", "iconv", "tokenizer", "posix", "exif", "phar",
}

// extPackage is the Debian package of each extension (php8.2-X), or ""
// for the ones in php8.2-common.
var extPackage = map[string]string{
	"opcache": "opcache", "pdo_sqlite": "sqlite3", "sqlite3": "sqlite3", "mbstring": "mbstring",
	"gd": "gd", "intl": "intl", "curl": "curl", "xml": "xml", "dom": "xml", "simplexml": "xml",
	"xmlreader": "xml", "xmlwriter": "xml", "xsl": "xml", "zip": "zip", "bcmath": "bcmath",
	"gmp": "gmp", "mysqli": "mysql", "pdo_mysql": "mysql", "pgsql": "pgsql", "pdo_pgsql": "pgsql",
	"soap": "soap", "bz2": "bz2", "readline": "readline",
}

// Options select what to put into the image.
type Options struct {
	Arch       string   // Debian architecture: "amd64" or "arm64"
	Version    string   // PHP version, default DefaultVersion
	Extensions []string // default DefaultExtensions
	CacheDir   string   // downloaded .deb files and their unpacked trees; created
	Logf       func(format string, args ...any)
}

// Part is one group of files and its size.
type Part struct {
	Name  string
	Bytes int64
	Files int
}

// Result is what goes into the root file system.
type Result struct {
	Files    []image.File
	FPM      string            // path of php-fpm in the root, e.g. "/usr/sbin/php-fpm8.2"
	Interp   string            // the dynamic loader's path (PT_INTERP)
	Packages map[string]string // package -> version, of the packages files were taken from
	Parts    []Part            // sizes: php-fpm, extensions, libraries, loader (uncompressed)
	Needed   map[string][]string
}

// Triplet is Debian's multiarch directory name for arch.
func Triplet(arch string) (string, error) {
	switch arch {
	case "amd64":
		return "x86_64-linux-gnu", nil
	case "arm64":
		return "aarch64-linux-gnu", nil
	}
	return "", fmt.Errorf("phpimage: no PHP for architecture %q (amd64 or arm64)", arch)
}

func machine(arch string) elf.Machine {
	if arch == "arm64" {
		return elf.EM_AARCH64
	}
	return elf.EM_X86_64
}

// CheckTools reports missing host tools with the Debian package to install.
func CheckTools() error {
	var missing []string
	for _, t := range [][2]string{{"apt-get", "apt"}, {"apt-cache", "apt"}, {"dpkg-deb", "dpkg"}} {
		if _, err := exec.LookPath(t[0]); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", t[0], t[1]))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("phpimage: missing tools: %s", strings.Join(missing, ", "))
	}
	return nil
}

// newBuilder checks what every collection needs (the architecture, the
// tools, the cache directory) and returns a builder for o.
func newBuilder(o Options) (*builder, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	triplet, err := Triplet(o.Arch)
	if err != nil {
		return nil, err
	}
	if err := CheckTools(); err != nil {
		return nil, err
	}
	if o.CacheDir == "" {
		return nil, errors.New("phpimage: no cache directory")
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return nil, err
	}
	return &builder{o: o, triplet: triplet, trees: map[string]string{}, info: map[string]pkgInfo{}}, nil
}

// Collect downloads (or takes from the cache) and unpacks the packages and
// returns the root file system entries for php-fpm.
func Collect(o Options) (*Result, error) {
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if len(o.Extensions) == 0 {
		o.Extensions = DefaultExtensions
	}
	b, err := newBuilder(o)
	if err != nil {
		return nil, err
	}
	php := "php" + o.Version
	b.php = php
	pkgs := []string{php + "-fpm", php + "-common", "tzdata"}
	for _, e := range o.Extensions {
		p, ok := extPackage[e]
		if !ok {
			p = "common"
		}
		pkgs = appendUnique(pkgs, php+"-"+p)
	}
	if err := b.fetch(pkgs); err != nil {
		return nil, err
	}
	return b.assemble(pkgs)
}

func appendUnique(s []string, v ...string) []string {
	for _, x := range v {
		found := false
		for _, y := range s {
			found = found || x == y
		}
		if !found {
			s = append(s, x)
		}
	}
	return s
}

type pkgInfo struct {
	name, version, arch string
	depends             []string // library packages it depends on
}

type builder struct {
	o       Options
	triplet string
	php     string
	trees   map[string]string // package -> unpacked directory
	info    map[string]pkgInfo
}

// archAll are the packages used that are "Architecture: all".
var archAll = map[string]bool{"tzdata": true}

// isLibPackage reports whether a package name is a shared library package
// (the only dependencies followed: the rest are maintainer-script tools).
func isLibPackage(n string) bool {
	return strings.HasPrefix(n, "lib") || n == "zlib1g"
}

// show asks apt for the candidate version and dependencies of packages.
func (b *builder) show(names []string) error {
	var args []string
	for _, n := range names {
		if _, ok := b.info[n]; !ok {
			if archAll[n] {
				args = append(args, n)
			} else {
				args = append(args, n+":"+b.o.Arch)
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	out, err := exec.Command("apt-cache", append([]string{"show", "--no-all-versions"}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		msg := ""
		if errors.As(err, &ee) {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return fmt.Errorf("phpimage: apt-cache show %s: %v: %s\n(for a foreign architecture run, as root: dpkg --add-architecture %s && apt-get update)",
			strings.Join(args, " "), err, msg, b.o.Arch)
	}
	for _, rec := range bytes.Split(out, []byte("\n\n")) {
		var p pkgInfo
		sc := bufio.NewScanner(bytes.NewReader(rec))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ": ")
			if !ok {
				continue
			}
			switch k {
			case "Package":
				p.name = v
			case "Version":
				p.version = v
			case "Architecture":
				p.arch = v
			case "Depends", "Pre-Depends":
				for _, d := range strings.Split(v, ",") {
					alt := strings.TrimSpace(strings.Split(d, "|")[0])
					name := strings.Fields(alt)[0]
					name = strings.TrimSuffix(name, ":any")
					if isLibPackage(name) {
						p.depends = appendUnique(p.depends, name)
					}
				}
			}
		}
		if p.name != "" {
			b.info[p.name] = p
		}
	}
	for _, n := range names {
		if _, ok := b.info[n]; !ok {
			return fmt.Errorf("phpimage: apt knows no package %s for %s", n, b.o.Arch)
		}
	}
	return nil
}

// debName is the file name apt-get download gives a package.
func (p pkgInfo) debName() string {
	return fmt.Sprintf("%s_%s_%s.deb", p.name, strings.ReplaceAll(p.version, ":", "%3a"), p.arch)
}

// fetch downloads the packages missing from the cache and unpacks them.
func (b *builder) fetch(names []string) error {
	if err := b.show(names); err != nil {
		return err
	}
	var missing []string
	for _, n := range names {
		p := b.info[n]
		if _, err := os.Stat(filepath.Join(b.o.CacheDir, p.debName())); err != nil {
			missing = append(missing, n+":"+p.arch+"="+p.version)
		}
	}
	if len(missing) > 0 {
		b.o.Logf("downloading %d Debian packages for %s: %s", len(missing), b.o.Arch, strings.Join(missing, " "))
		cmd := exec.Command("apt-get", append([]string{"download", "-q"}, missing...)...)
		cmd.Dir = b.o.CacheDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("phpimage: apt-get download: %v\n%s", err, out)
		}
	}
	for _, n := range names {
		if _, ok := b.trees[n]; ok {
			continue
		}
		p := b.info[n]
		// Unpacked once per package version, next to the .deb.
		dir := filepath.Join(b.o.CacheDir, "unpacked", strings.TrimSuffix(p.debName(), ".deb"))
		if _, err := os.Stat(dir + ".done"); err != nil {
			os.RemoveAll(dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if out, err := exec.Command("dpkg-deb", "-x", filepath.Join(b.o.CacheDir, p.debName()), dir).CombinedOutput(); err != nil {
				return fmt.Errorf("phpimage: dpkg-deb -x %s: %v\n%s", p.debName(), err, out)
			}
			if err := os.WriteFile(dir+".done", nil, 0o644); err != nil {
				return err
			}
		}
		b.trees[n] = dir
	}
	return nil
}

// libDirs are where the loader looks, in order (Debian's multiarch paths).
func (b *builder) libDirs() []string {
	return []string{"/lib/" + b.triplet, "/usr/lib/" + b.triplet, "/lib", "/usr/lib"}
}

// findLib looks for a soname in the unpacked packages; it returns the
// package, the path in the root and the host file (symlinks followed).
func (b *builder) findLib(soname string) (pkg, rootPath, host string, ok bool) {
	names := make([]string, 0, len(b.trees))
	for n := range b.trees {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, dir := range b.libDirs() {
		for _, n := range names {
			p := filepath.Join(b.trees[n], dir, soname)
			if real, err := resolveIn(b.trees[n], p); err == nil {
				return n, path.Join(dir, soname), real, true
			}
		}
	}
	return "", "", "", false
}

// resolveIn follows symlinks of p inside the tree root (absolute targets
// are relative to root) and returns the regular file.
func resolveIn(root, p string) (string, error) {
	for i := 0; i < 16; i++ {
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if fi.Mode().IsRegular() {
			return p, nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return "", fmt.Errorf("%s is not a file", p)
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(t) {
			p = filepath.Join(root, t)
		} else {
			p = filepath.Join(filepath.Dir(p), t)
		}
	}
	return "", fmt.Errorf("%s: too many symlinks", p)
}

// elfInfo returns an ELF file's DT_NEEDED and PT_INTERP, checking its
// machine.
func elfInfo(p string, want elf.Machine) (needed []string, interp string, err error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	if f.Machine != want {
		return nil, "", fmt.Errorf("%s is for %s, not %s", p, f.Machine, want)
	}
	needed, err = f.ImportedLibraries()
	if err != nil {
		return nil, "", err
	}
	for _, pr := range f.Progs {
		if pr.Type == elf.PT_INTERP {
			b := make([]byte, pr.Filesz)
			if _, err := pr.ReadAt(b, 0); err != nil {
				return nil, "", err
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	return needed, interp, nil
}

// assemble picks the files and resolves their libraries, fetching the
// library packages that provide them.
func (b *builder) assemble(pkgs []string) (*Result, error) {
	res := &Result{Packages: map[string]string{}, Needed: map[string][]string{}}
	fpmPkg := b.php + "-fpm"
	res.FPM = "/usr/sbin/php-fpm" + b.o.Version
	var elves []elfFile
	fpmHost := filepath.Join(b.trees[fpmPkg], res.FPM)
	if _, err := os.Stat(fpmHost); err != nil {
		return nil, fmt.Errorf("phpimage: %s has no %s", fpmPkg, res.FPM)
	}
	elves = append(elves, elfFile{res.FPM, fpmHost, "php-fpm"})
	used := map[string]bool{fpmPkg: true}

	// Extensions: /usr/lib/php/<API>/X.so, and conf.d files loading them.
	api, err := b.extensionDir()
	if err != nil {
		return nil, err
	}
	confd := "/etc/php/" + b.o.Version + "/fpm/conf.d"
	res.Files = append(res.Files, image.File{Path: confd, Mode: fs.ModeDir | 0o755})
	for _, e := range b.o.Extensions {
		p, ok := extPackage[e]
		if !ok {
			p = "common"
		}
		pkg := b.php + "-" + p
		so := path.Join(api, e+".so")
		host := filepath.Join(b.trees[pkg], so)
		if _, err := os.Stat(host); err != nil {
			return nil, fmt.Errorf("phpimage: extension %s: %s has no %s", e, pkg, so)
		}
		elves = append(elves, elfFile{so, host, "extensions"})
		used[pkg] = true
		directive, prio := "extension", "20"
		switch e {
		case "opcache":
			directive, prio = "zend_extension", "10"
		case "pdo":
			prio = "10"
		}
		res.Files = append(res.Files, image.File{Path: path.Join(confd, prio+"-"+e+".ini"),
			Data: []byte(fmt.Sprintf("; %s (%s), placed by arka-appliance\n%s=%s.so\n", e, pkg, directive, e)), Mode: 0o644})
	}

	if err := b.place(res, elves, used, []string{"php-fpm", "extensions", "libraries", "libraries (ICU, for libxml2)", "dynamic loader"}); err != nil {
		return nil, err
	}
	for p := range used {
		res.Packages[p] = b.info[p].version
	}
	// Debian's PHP reads the system's time zone database (not a copy of
	// its own): /usr/share/zoneinfo from tzdata.
	zi := filepath.Join(b.trees["tzdata"], "usr", "share", "zoneinfo")
	tz := Part{Name: "time zone database (tzdata)"}
	err = filepath.WalkDir(zi, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(b.trees["tzdata"], p)
		dst := "/" + filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			res.Files = append(res.Files, image.File{Path: dst, Mode: fs.ModeDir | 0o755})
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			res.Files = append(res.Files, image.File{Path: dst, Data: []byte(t), Mode: fs.ModeSymlink | 0o777})
			tz.Files++
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			res.Files = append(res.Files, image.File{Path: dst, Source: p, Mode: 0o644})
			tz.Bytes += fi.Size()
			tz.Files++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("phpimage: tzdata: %v", err)
	}
	res.Parts = append(res.Parts, tz)
	res.Packages["tzdata"] = b.info["tzdata"].version
	return res, nil
}

// elfFile is an ELF file to place: its path in the root, on the host, and
// the part of the summary it counts in.
type elfFile struct{ rootPath, host, part string }

// place puts elves into res with every shared library they need
// (DT_NEEDED, recursively) and the dynamic loader, fetching the library
// packages that the packages in use depend on as needed. order lists the
// parts in the order res.Parts gets them.
func (b *builder) place(res *Result, elves []elfFile, used map[string]bool, order []string) error {
	// Libraries, breadth first, fetching the library packages that the
	// packages in use depend on until every DT_NEEDED is found.
	want := machine(b.o.Arch)
	placed := map[string]bool{}
	for i := 0; i < len(elves); i++ {
		ef := elves[i]
		needed, interp, err := elfInfo(ef.host, want)
		if err != nil {
			return fmt.Errorf("phpimage: %v", err)
		}
		if interp != "" && res.Interp == "" {
			res.Interp = interp
		}
		res.Needed[ef.rootPath] = needed
		for _, so := range needed {
			for attempt := 0; ; attempt++ {
				pkg, rootPath, host, ok := b.findLib(so)
				if ok {
					used[pkg] = true
					if !placed[rootPath] {
						placed[rootPath] = true
						part := "libraries"
						if strings.HasPrefix(so, "libicu") {
							part = "libraries (ICU, for libxml2)"
						}
						elves = append(elves, elfFile{rootPath, host, part})
					}
					break
				}
				if attempt > 0 || !b.expand(used) {
					return fmt.Errorf("phpimage: %s needs %s, which no library package that %s depends on provides", ef.rootPath, so, strings.Join(sortedKeys(used), ", "))
				}
			}
		}
	}
	if res.Interp == "" {
		return fmt.Errorf("phpimage: %s has no PT_INTERP", elves[0].rootPath)
	}
	// The loader: the file its path names in libc6, as a real file.
	libc := "libc6"
	loaderHost, err := resolveIn(b.trees[libc], filepath.Join(b.trees[libc], res.Interp))
	if err != nil {
		return fmt.Errorf("phpimage: the dynamic loader %s is not in libc6: %v", res.Interp, err)
	}
	parts := map[string]*Part{}
	add := func(part, rootPath, host string) {
		res.Files = append(res.Files, image.File{Path: rootPath, Source: host, Mode: 0o755})
		p := parts[part]
		if p == nil {
			p = &Part{Name: part}
			parts[part] = p
		}
		if fi, err := os.Stat(host); err == nil {
			p.Bytes += fi.Size()
		}
		p.Files++
	}
	for _, ef := range elves {
		if ef.rootPath == res.Interp {
			continue
		}
		mode := ef.part
		add(mode, ef.rootPath, ef.host)
	}
	if !placed[res.Interp] {
		add("dynamic loader", res.Interp, loaderHost)
	}
	for _, n := range order {
		if p := parts[n]; p != nil {
			res.Parts = append(res.Parts, *p)
		}
	}
	return nil
}

// expand fetches the library packages that the packages in use depend on
// and that are not unpacked yet; false means there are none.
func (b *builder) expand(used map[string]bool) bool {
	var next []string
	for p := range used {
		for _, d := range b.info[p].depends {
			if _, ok := b.trees[d]; !ok {
				next = appendUnique(next, d)
			}
		}
	}
	if len(next) == 0 {
		// Widen to the dependencies of every unpacked package.
		for p := range b.trees {
			for _, d := range b.info[p].depends {
				if _, ok := b.trees[d]; !ok {
					next = appendUnique(next, d)
				}
			}
		}
	}
	if len(next) == 0 {
		return false
	}
	sort.Strings(next)
	if err := b.fetch(next); err != nil {
		b.o.Logf("%v", err)
		return false
	}
	return true
}

// extensionDir finds /usr/lib/php/<API date> in php<V>-common.
func (b *builder) extensionDir() (string, error) {
	m, _ := filepath.Glob(filepath.Join(b.trees[b.php+"-common"], "usr", "lib", "php", "20*"))
	if len(m) != 1 {
		return "", fmt.Errorf("phpimage: cannot find the extension directory in %s-common (%v)", b.php, m)
	}
	return "/usr/lib/php/" + filepath.Base(m[0]), nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
