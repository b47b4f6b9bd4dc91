package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKernelRelease reads the release of both boards' kernels as uname -r
// would print it.
func TestKernelRelease(t *testing.T) {
	for board, want := range map[string]string{"amd64": "7.1.2", "rpi": "6.12.47-v8"} {
		b, err := LoadBoard(board)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := ModuleDir("go", b.Kernel)
		if err != nil {
			t.Skipf("kernel module not available: %v", err)
		}
		img, err := os.ReadFile(filepath.Join(dir, "vmlinuz"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := KernelRelease(img); err != nil || got != want {
			t.Errorf("%s: KernelRelease = %q, %v; want %q", board, got, err, want)
		}
	}
	if _, err := KernelRelease([]byte("not a kernel")); err == nil {
		t.Error("no error for a file that is not a kernel")
	}
}

// TestKernelModulesMismatch: a kernel package whose modules are for
// another release than its image is refused in one line; the same with
// omit_modules builds without them; matching modules are shipped.
func TestKernelModulesMismatch(t *testing.T) {
	dir := t.TempDir()
	hdr := make([]byte, 0x400)
	copy(hdr[0x202:], "HdrS")
	hdr[0x20E] = 0x00 // kernel_version at 0x200+0x100
	hdr[0x20F] = 0x01
	copy(hdr[0x300:], "7.1.2 (builder@host) #1 SMP\x00")
	os.WriteFile(filepath.Join(dir, "vmlinuz"), hdr, 0o644)
	os.MkdirAll(filepath.Join(dir, "lib", "modules", "7.1.3"), 0o755)
	b := &Board{Name: "amd64", Kernel: Module{Module: "example.org/kernel", Version: "v1"}}
	_, err := checkKernelModules(b, dir)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "vmlinuz is Linux 7.1.2 but its modules are for 7.1.3") {
		t.Errorf("mismatch: %v", err)
	}
	b.Kernel.OmitModules = true
	if ship, err := checkKernelModules(b, dir); err != nil || ship {
		t.Errorf("omit_modules: ship %v, %v", ship, err)
	}
	b.Kernel.OmitModules = false
	os.Rename(filepath.Join(dir, "lib", "modules", "7.1.3"), filepath.Join(dir, "lib", "modules", "7.1.2"))
	if ship, err := checkKernelModules(b, dir); err != nil || !ship {
		t.Errorf("matching modules: ship %v, %v", ship, err)
	}
}

// TestBuildRefusesMismatch: the real amd64 kernel package (vmlinuz 7.1.2,
// modules for 7.1.3) without omit_modules: Build refuses in one line and
// writes neither the image nor the password file.
func TestBuildRefusesMismatch(t *testing.T) {
	b, err := LoadBoard("amd64")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckTools(b); err != nil {
		t.Skip(err)
	}
	b.Kernel.OmitModules = false
	dir := t.TempDir()
	out, pw := filepath.Join(dir, "arka.img"), filepath.Join(dir, "pw.txt")
	_, err = Build(Config{Board: b, Output: out, PasswordFile: pw, ModuleDir: filepath.Join("..", "..", "..")})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "vmlinuz is Linux 7.1.2 but its modules are for 7.1.3") {
		t.Fatalf("Build: %v", err)
	}
	for _, f := range []string{out, pw} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s written by a refused build", f)
		}
	}
}
