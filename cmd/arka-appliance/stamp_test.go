package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSourceStamp: without --version and SOURCE_DATE_EPOCH, `go run
// ./cmd/arka-appliance build` or `update` stamps the image as `make image`
// does (QA L8: it said "Arka dev"): the version is `git describe --tags
// --always --dirty` of the source tree, the build time its last commit's
// while the tree is clean; outside a git checkout "dev" and now (0).
func TestSourceStamp(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org",
			"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if v, epoch := sourceStamp(dir); v != "dev" || epoch != 0 {
		t.Errorf("outside a checkout: %q %d, want dev 0", v, epoch)
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(dir, "a"), []byte("1\n"), 0o644)
	git("add", "a")
	git("commit", "-q", "-m", "one")
	git("tag", "v1.2.3")
	ct, _ := strconv.ParseInt(git("log", "-1", "--format=%ct"), 10, 64)
	if v, epoch := sourceStamp(dir); v != "v1.2.3" || epoch != ct {
		t.Errorf("clean at a tag: %q %d, want v1.2.3 %d", v, epoch, ct)
	}
	os.WriteFile(filepath.Join(dir, "a"), []byte("2\n"), 0o644)
	if v, epoch := sourceStamp(dir); v != "v1.2.3-dirty" || epoch != 0 {
		t.Errorf("dirty: %q %d, want v1.2.3-dirty 0", v, epoch)
	}
	var b buildFlags
	b.register(flag.NewFlagSet("build", flag.ContinueOnError))
	if b.version != "" {
		t.Errorf("--version defaults to %q, want it computed (empty)", b.version)
	}
}
