package phpimage

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func collectSupplicant(t *testing.T, arch string) *Result {
	t.Helper()
	if testing.Short() {
		t.Skip("downloads Debian packages: skipped with -short")
	}
	if err := CheckTools(); err != nil {
		t.Skip(err)
	}
	res, err := CollectProgram(ProgramOptions{Arch: arch, Package: "wpasupplicant", Path: "/sbin/wpa_supplicant", CacheDir: cacheDir(t), Logf: t.Logf})
	if err != nil {
		if strings.Contains(err.Error(), "dpkg --add-architecture") {
			t.Skipf("apt does not know %s packages here: %v", arch, err)
		}
		t.Fatal(err)
	}
	for _, p := range res.Parts {
		t.Logf("%-20s %3d files %6.1f MiB", p.Name, p.Files, float64(p.Bytes)/(1<<20))
	}
	// Every library every ELF file needs is in the file list.
	triplet, _ := Triplet(arch)
	files := map[string]bool{}
	for _, f := range res.Files {
		files[f.Path] = true
	}
	if !files["/sbin/wpa_supplicant"] || !files[res.Interp] {
		t.Fatalf("wpa_supplicant or the loader %q missing", res.Interp)
	}
	for elf, needed := range res.Needed {
		for _, so := range needed {
			if !files[path.Join("/lib", triplet, so)] && !files[path.Join("/usr/lib", triplet, so)] && !files[path.Join("/lib", so)] && !files[path.Join("/usr/lib", so)] {
				t.Errorf("%s needs %s, which is not in the image", elf, so)
			}
		}
	}
	return res
}

func TestSupplicantArm64(t *testing.T) {
	collectSupplicant(t, "arm64")
}

// wpa_supplicant from the amd64 packages runs in a chroot holding nothing
// else: the library closure is complete.
func TestSupplicantRunsInChroot(t *testing.T) {
	res := collectSupplicant(t, "amd64")
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	root := t.TempDir()
	for _, f := range res.Files {
		dst := filepath.Join(root, f.Path)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		switch {
		case f.Mode&fs.ModeDir != 0:
			os.MkdirAll(dst, 0o755)
		case f.Source != "":
			b, err := os.ReadFile(f.Source)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(dst, b, f.Mode.Perm())
		}
	}
	out, err := exec.Command("chroot", root, "/sbin/wpa_supplicant", "-v").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "wpa_supplicant v2.") {
		t.Fatalf("wpa_supplicant -v in a chroot: %v\n%s", err, out)
	}
	t.Logf("%s", regexp.MustCompile(`wpa_supplicant v[^\n]*`).FindString(string(out)))
}
