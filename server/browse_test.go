package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

func TestDirectoryListing(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "www")
	files := filepath.Join(root, "files")
	os.MkdirAll(filepath.Join(files, "sub dir"), 0o755)
	os.WriteFile(filepath.Join(files, "<img src=x onerror=\"alert(1)\">.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(files, "a b&c.txt"), make([]byte, 3000), 0o644)
	os.WriteFile(filepath.Join(files, ".env"), []byte("SECRET=1"), 0o644)
	os.WriteFile(filepath.Join(dir, "outside.txt"), []byte("outside"), 0o644)
	os.Symlink(filepath.Join(dir, "outside.txt"), filepath.Join(files, "escape.txt"))
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
[[routes]]
path = "/files/"
handler = { type = "static", root = "`+root+`", browse = true }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, body := c.Get(t, "/files/")
		b := string(body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("listing: %d %v", resp.StatusCode, resp.Header)
		}
		for _, want := range []string{
			`<meta name="viewport" content="width=device-width, initial-scale=1">`,
			`<title>Index of /files/</title>`,
			`&lt;img src=x onerror=&#34;alert(1)&#34;&gt;.txt</a>`,
			`href="./a%20b&amp;c.txt">a b&amp;c.txt</a>`,
			`href="./sub%20dir/">sub dir/</a>`,
			`2.9 KiB`,
			`href="../"`,
		} {
			if !strings.Contains(b, want) {
				t.Errorf("listing lacks %s:\n%s", want, b)
			}
		}
		for _, bad := range []string{"<img", ".env", "escape.txt"} {
			if strings.Contains(b, bad) {
				t.Errorf("listing has %q:\n%s", bad, b)
			}
		}
		if strings.Index(b, "sub dir/") > strings.Index(b, "a b&amp;c.txt") {
			t.Error("directories are not listed first")
		}
		resp, body = c.Do(t, "HEAD", "/files/sub%20dir/")
		if resp.StatusCode != 200 || len(body) != 0 {
			t.Errorf("HEAD listing: %d %q", resp.StatusCode, body)
		}
	})
	e2 := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
`)
	e2.Each(t, func(t *testing.T, c *servertest.Client) {
		if resp, _ := c.Get(t, "/files/"); resp.StatusCode != 403 {
			t.Errorf("without browse: %d, want 403", resp.StatusCode)
		}
	})
}
