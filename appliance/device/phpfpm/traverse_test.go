package phpfpm

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/tests/testkit"
)

// TestDataDirPermissions (QA A14): as root, Arka opens only directories of
// its own state directory (Dir's parent) to the workers' user, and logs
// each change; a private directory above it (like /root) is never
// changed: php-fpm is refused with the directory at fault and what to do.
func TestDataDirPermissions(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the workers' user is only changed as root")
	}
	top := tempDir(t)
	priv := filepath.Join(top, "priv") // stands for /root
	if err := os.MkdirAll(filepath.Join(priv, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(priv, 0o700)
	state := filepath.Join(priv, "home", "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	log := &testkit.LogBuffer{}
	c := Config{FPM: "/nonexistent/php-fpm", Dir: filepath.Join(state, "php"), UID: NobodyID, GID: NobodyID}
	_, err := New(c, slog.New(slog.NewTextHandler(log, nil)))
	for _, d := range []string{priv, filepath.Join(priv, "home")} {
		if fi, _ := os.Stat(d); fi.Mode().Perm() != 0o700 {
			t.Errorf("%s changed to %v", d, fi.Mode().Perm())
		}
	}
	if err == nil || !strings.Contains(err.Error(), filepath.Join(priv, "home")) || !strings.Contains(err.Error(), "data_dir") {
		t.Errorf("blocked data directory: err = %v, want the directory at fault and data_dir", err)
	}

	// Reachable from above: the state directory (Arka's) is opened, o+x
	// only, and the change is logged.
	os.Chmod(priv, 0o755)
	os.Chmod(filepath.Join(priv, "home"), 0o755)
	log = &testkit.LogBuffer{}
	if _, err := New(c, slog.New(slog.NewTextHandler(log, nil))); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(state); fi.Mode().Perm() != 0o701 {
		t.Errorf("state directory %v, want 0701", fi.Mode().Perm())
	}
	if !strings.Contains(log.String(), state) {
		t.Errorf("the permission change of %s is not logged:\n%s", state, log.String())
	}
}
