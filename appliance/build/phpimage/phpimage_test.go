package phpimage

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/build/image"
)

// cacheDir is the build's download cache (git-ignored), shared with
// `make image PHP=1` so tests and builds download each package once.
func cacheDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "images", "out", "debs")
}

func collect(t *testing.T, arch string) *Result {
	t.Helper()
	if testing.Short() {
		t.Skip("downloads Debian packages: skipped with -short")
	}
	if err := CheckTools(); err != nil {
		t.Skip(err)
	}
	start := time.Now()
	res, err := Collect(Options{Arch: arch, CacheDir: cacheDir(t), Logf: t.Logf})
	if err != nil {
		if strings.Contains(err.Error(), "dpkg --add-architecture") {
			t.Skipf("apt does not know %s packages here: %v", arch, err)
		}
		t.Fatal(err)
	}
	var total int64
	for _, p := range res.Parts {
		t.Logf("%-30s %3d files %6.1f MiB", p.Name, p.Files, float64(p.Bytes)/(1<<20))
		total += p.Bytes
	}
	t.Logf("%s: %d files, %.1f MiB uncompressed, from %d packages, in %s", arch, len(res.Files), float64(total)/(1<<20), len(res.Packages), time.Since(start).Round(time.Millisecond))
	return res
}

// Every library that php-fpm, its extensions and those libraries need is
// in the file list, in a directory the loader searches, and the loader is
// at the path php-fpm names: checked from the ELF headers, so it works
// for a foreign architecture (no ldd).
func checkClosure(t *testing.T, arch string, res *Result) {
	t.Helper()
	triplet, _ := Triplet(arch)
	files := map[string]image.File{}
	for _, f := range res.Files {
		files[f.Path] = f
	}
	if _, ok := files[res.FPM]; !ok {
		t.Fatalf("no %s", res.FPM)
	}
	wantInterp := map[string]string{"amd64": "/lib64/ld-linux-x86-64.so.2", "arm64": "/lib/ld-linux-aarch64.so.1"}[arch]
	if res.Interp != wantInterp {
		t.Errorf("PT_INTERP %q, want %q", res.Interp, wantInterp)
	}
	if f, ok := files[res.Interp]; !ok || f.Source == "" {
		t.Errorf("the dynamic loader %s is not in the image", res.Interp)
	}
	for elfPath, needed := range res.Needed {
		for _, so := range needed {
			found := false
			for _, dir := range []string{"/lib/" + triplet, "/usr/lib/" + triplet, "/lib", "/usr/lib"} {
				if _, ok := files[path.Join(dir, so)]; ok {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s needs %s, which is not in the image", elfPath, so)
			}
		}
	}
	for _, ext := range DefaultExtensions {
		if _, ok := res.Needed["/usr/lib/php/20220829/"+ext+".so"]; !ok {
			t.Errorf("extension %s missing", ext)
		}
	}
	for _, f := range res.Files {
		if f.Source != "" {
			if _, err := os.Stat(f.Source); err != nil {
				t.Errorf("%s: %v", f.Path, err)
			}
		}
	}
}

func TestArm64(t *testing.T) {
	res := collect(t, "arm64")
	checkClosure(t, "arm64", res)
}

// The amd64 files run here: in a chroot holding nothing else, php-fpm
// starts and lists the extensions conf.d loads.
func TestAmd64RunsInChroot(t *testing.T) {
	res := collect(t, "amd64")
	checkClosure(t, "amd64", res)
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "tmp"), 0o1777) // opcache's lock file; a tmpfs on the device
	for _, f := range res.Files {
		dst := filepath.Join(root, f.Path)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		switch {
		case f.Mode&fs.ModeDir != 0:
			os.MkdirAll(dst, 0o755)
		case f.Mode&fs.ModeSymlink != 0:
			os.Symlink(string(f.Data), dst)
		case f.Source != "":
			b, err := os.ReadFile(f.Source)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(dst, b, f.Mode.Perm())
		default:
			os.WriteFile(dst, f.Data, f.Mode.Perm())
		}
	}
	ini := filepath.Join(root, "php.ini")
	os.WriteFile(ini, []byte("date.timezone = Europe/Berlin\n"), 0o644)
	out, err := exec.Command("chroot", root, res.FPM, "-c", "/php.ini", "-m").CombinedOutput()
	if err != nil {
		t.Fatalf("php-fpm -m in a chroot: %v\n%s", err, out)
	}
	for _, m := range []string{"Zend OPcache", "mbstring", "pdo_sqlite", "sqlite3", "PDO", "json", "ctype", "fileinfo"} {
		if !strings.Contains(string(out), "\n"+m+"\n") {
			t.Errorf("php-fpm -m lacks %s:\n%s", m, out)
		}
	}
	if strings.Contains(string(out), "Warning") {
		t.Errorf("php-fpm -m warns:\n%s", out)
	}
}
