package static_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
)

// deniedEnv names, in the environment of the unprivileged child that
// TestPermissionDenied starts when run as root, the directory holding the
// tree it checks.
const deniedEnv = "ARKA_STATIC_DENIED_DIR"

// nobody is the user and group the child runs as when the test runs as root.
const nobody = 65534

// Files and directories of the denied tree: readable ones (0644, 0755)
// and ones Arka must not be able to read (0600 or 0700 of root when the
// test runs as root; 000 when it runs as an ordinary user, whose files
// 000 denies to their owner too).
var (
	deniedReadable = map[string][]byte{
		"index.html":          indexHTML,
		"app.js":              appJS,
		"app.js.gz":           compress(nil, "gzip", appJS),
		"big.txt":             bytes.Repeat([]byte("a large readable page\n"), 20000), // 440 KB
		"private/index.html":  []byte("private index\n"),
		"private/page.html":   []byte("private page\n"),
		"searchonly/file.txt": []byte("in a directory that can be searched, not read\n"),
	}
	deniedFiles = map[string][]byte{
		"secret.txt":             []byte("secret\n"),
		"secret-big.bin":         bigBin, // above the cache's in-memory size: never read while describing it
		"app.js.br":              compress(nil, "br", appJS),
		"app.js.zst":             compress(nil, "zstd", appJS),
		"big.txt.br":             bigBin[:300<<10], // unreadable sibling above the in-memory size
		".hidden":                []byte("hidden\n"),
		"open/inside-secret.txt": []byte("secret inside a readable directory\n"),
	}
	deniedDirs = []string{"private"}
	searchDirs = []string{"searchonly"} // searchable, not readable (0711 / 0100)
)

// TestPermissionDenied (QA M2): a file, index file or directory on the
// path that Arka may not read answers 403 Forbidden and is logged once
// (path and errno text), like nginx's open() "…" failed (13: Permission
// denied); a missing file stays 404, as do dot files and links leading
// out of root whatever their modes, and an unreadable precompressed
// sibling leaves the file itself served. Root reads everything, so as
// root the checks run in a child with uid and gid 65534 (nobody).
func TestPermissionDenied(t *testing.T) {
	if dir := os.Getenv(deniedEnv); dir != "" {
		if os.Geteuid() == 0 {
			t.Fatal("the child still runs as root")
		}
		checkDenied(t, dir)
		return
	}
	dir := deniedTree(t)
	if os.Geteuid() != 0 {
		restrict(t, dir, 0, 0, 0o100)
		checkDenied(t, dir)
		return
	}
	restrict(t, dir, 0o600, 0o700, 0o711)
	asNobody(t, dir)
}

// deniedTree writes the tree under a new directory that every user can
// reach (t.TempDir's is private to its owner), removed at the end.
func deniedTree(t *testing.T) string {
	dir, err := os.MkdirTemp("", "arka-static-denied-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(dir)
	})
	os.Chmod(dir, 0o755)
	www := filepath.Join(dir, "www")
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	write := func(files map[string][]byte) {
		for name, data := range files {
			p := filepath.Join(www, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(p, mtime, mtime) // siblings as fresh as their files
		}
	}
	write(deniedReadable)
	write(deniedFiles)
	os.WriteFile(filepath.Join(dir, "outside.txt"), []byte("outside\n"), 0o600)
	os.Symlink(filepath.Join(dir, "outside.txt"), filepath.Join(www, "link-out.txt"))
	os.Mkdir(filepath.Join(dir, "tmp"), 0o777)
	os.Chmod(filepath.Join(dir, "tmp"), 0o1777)
	return dir
}

// restrict gives the denied files, directories and search-only
// directories their modes; directories get 0755 back when the test ends.
func restrict(t *testing.T, dir string, file, dirMode, search os.FileMode) {
	www := filepath.Join(dir, "www")
	for name := range deniedFiles {
		if err := os.Chmod(filepath.Join(www, name), file); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "outside.txt"), file)
	for _, d := range deniedDirs {
		os.Chmod(filepath.Join(www, d), dirMode)
	}
	for _, d := range searchDirs {
		os.Chmod(filepath.Join(www, d), search)
	}
}

// asNobody runs this test again in a copy of the test binary (the build
// directory is private to root) as uid and gid 65534, without
// supplementary groups, and fails with its output when it fails.
func asNobody(t *testing.T, dir string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "static.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	src.Close()
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	cmd := exec.Command(bin, "-test.run=^TestPermissionDenied$", "-test.v")
	cmd.Dir = tmp
	cmd.Env = []string{deniedEnv + "=" + dir, "TMPDIR=" + tmp, "HOME=" + tmp, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		// The process never started: this root cannot change its user
		// (a user namespace without 65534 mapped, no CAP_SETUID).
		t.Skipf("cannot run a child as uid %d to see permission errors (root reads every file): %v", nobody, err)
	}
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestPermissionDenied")) {
		t.Fatalf("as uid %d: %v\n%s", nobody, err, out)
	}
	t.Logf("as uid %d:\n%s", nobody, out)
}

// deniedSite serves dir/www on both listeners; browse lists directories
// without an index file.
func deniedSite(dir string, browse bool) string {
	return fmt.Sprintf(`
default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = %q, browse = %v }
`, filepath.Join(dir, "www"), browse)
}

func checkDenied(t *testing.T, dir string) {
	www := filepath.Join(dir, "www")
	if b, err := os.ReadFile(filepath.Join(www, "index.html")); err != nil || !bytes.Equal(b, indexHTML) {
		t.Fatalf("the readable part of the tree cannot be read as uid %d: %v", os.Geteuid(), err)
	}
	if _, err := os.ReadFile(filepath.Join(www, "secret.txt")); err == nil {
		t.Fatalf("secret.txt is readable as uid %d: this test would prove nothing", os.Geteuid())
	}
	e := servertest.Start(t, deniedSite(dir, false))
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for path, want := range map[string]int{
			"/index.html":             200,
			"/secret.txt":             403, // 0600, another owner
			"/secret-big.bin":         403, // the same above the in-memory size
			"/private/":               403, // its index file is in a 0700 directory
			"/private/page.html":      403,
			"/private/nothere.html":   403, // cannot be told from a denied file, as with nginx
			"/open/inside-secret.txt": 403,
			// os.Root opens each directory on the path, which needs read
			// permission, not only search (golang/go#81605; nginx serves
			// it): a mistake too, now told.
			"/searchonly/file.txt": 403,
			"/nothere.txt":         404,
			"/secret.txt/x":        404, // ENOTDIR
			"/.hidden":             404, // dot files are not served, whatever their mode
			"/link-out.txt":        404, // out of root, whatever its mode
		} {
			resp, body := c.Get(t, path)
			if resp.StatusCode != want {
				t.Errorf("GET %s: %d, want %d (%d bytes: %.60q)", path, resp.StatusCode, want, len(body), body)
			}
		}
		// Unreadable siblings are passed over: the file is served, or
		// a readable sibling.
		for _, ae := range []string{"br", "zstd", "br, zstd", "br, gzip", "zstd, gzip"} {
			resp, body := c.Get(t, "/app.js", "Accept-Encoding: "+ae)
			ce := resp.Header.Get("Content-Encoding")
			if resp.StatusCode != 200 || !bytes.Equal(decode(t, ce, body), appJS) {
				t.Errorf("GET /app.js, Accept-Encoding %s: %d, Content-Encoding %q, %d bytes", ae, resp.StatusCode, ce, len(body))
			}
			if strings.Contains(ae, "gzip") && ce != "gzip" {
				t.Errorf("GET /app.js, Accept-Encoding %s: Content-Encoding %q, want the readable gzip sibling", ae, ce)
			}
		}
		resp, body := c.Get(t, "/big.txt", "Accept-Encoding: br")
		if ce := resp.Header.Get("Content-Encoding"); resp.StatusCode != 200 || !bytes.Equal(decode(t, ce, body), deniedReadable["big.txt"]) {
			t.Errorf("GET /big.txt, Accept-Encoding br: %d, Content-Encoding %q, %d bytes", resp.StatusCode, ce, len(body))
		}
	})

	// One line per path, naming it and the errno text, however often it
	// is asked for (three clients above).
	log := e.Log()
	for _, name := range []string{"secret.txt", "secret-big.bin", "private/index.html", "private/page.html", "open/inside-secret.txt", "app.js.br", "big.txt.br"} {
		p := filepath.Join(www, name)
		n := 0
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, p+" ") || strings.HasSuffix(l, p) || strings.Contains(l, p+`"`) {
				n++
				if !strings.Contains(l, "permission denied") {
					t.Errorf("log line for %s without the errno text: %s", p, l)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d log lines, want 1:\n%s", p, n, log)
		}
	}
	for _, name := range []string{"nothere.txt", ".hidden", "outside.txt", "index.html"} {
		if strings.Contains(log, filepath.Join(www, name)) || strings.Contains(log, filepath.Join(dir, name)) {
			t.Errorf("%s logged:\n%s", name, log)
		}
	}

	// A client asking for many distinct denied paths cannot flood the log.
	c := e.Clients()[0]
	before := strings.Count(e.Log(), "\n")
	for i := range 300 {
		if resp, _ := c.Get(t, fmt.Sprintf("/private/flood-%d.html", i)); resp.StatusCode != 403 {
			t.Fatalf("flood %d: %d", i, resp.StatusCode)
		}
	}
	if n := strings.Count(e.Log(), "\n") - before; n > 150 {
		t.Errorf("300 distinct denied paths: %d log lines", n)
	}

	// With browse: a directory whose index file Arka may not look at is
	// not listed either (reading it fails the same way): 403, not 404.
	b := servertest.Start(t, deniedSite(dir, true))
	b.Each(t, func(t *testing.T, c *servertest.Client) {
		for path, want := range map[string]int{
			"/":            200,
			"/searchonly/": 403,
			"/private/":    403,
		} {
			if resp, _ := c.Get(t, path); resp.StatusCode != want {
				t.Errorf("browse: GET %s: %d, want %d", path, resp.StatusCode, want)
			}
		}
	})
	if p := filepath.Join(www, "searchonly", "index.html"); strings.Count(b.Log(), p) != 1 {
		t.Errorf("browse: want one log line naming %s:\n%s", p, b.Log())
	}
}
