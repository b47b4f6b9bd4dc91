package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWrite(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	for i, data := range []string{"first\n", "second, longer\n", ""} {
		perm := os.FileMode(0o644)
		if i == 1 {
			perm = 0o600
		}
		if err := Write(p, []byte(data), perm); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != data {
			t.Fatalf("write %d: read %q, %v; want %q", i, b, err, data)
		}
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != perm {
			t.Errorf("write %d: mode %v, want %v (despite the umask)", i, fi.Mode().Perm(), perm)
		}
	}
	// No temporary file is left beside it.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want 1: %v", len(ents), ents)
	}
	// A directory that does not exist: an error, nothing written.
	if err := Write(filepath.Join(dir, "no", "such"), []byte("x"), 0o644); err == nil {
		t.Error("no error for a missing directory")
	}
	// A failed write leaves the old content.
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	if os.Geteuid() != 0 { // root writes anyway
		if err := Write(p, []byte("lost"), 0o644); err == nil {
			t.Error("no error writing into a read-only directory")
		}
		if b, _ := os.ReadFile(p); string(b) != "" {
			t.Errorf("after a failed write: %q", b)
		}
	}
}
