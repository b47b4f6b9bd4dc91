package server_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

// BREACH: responses made per request that set a cookie are not compressed
// unless the route says compression = true; precompressed files are.
func TestNoCompressionOfResponsesSettingCookies(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "x")
	os.WriteFile(filepath.Join(root, "app.js"), []byte(strings.Repeat("var a = 1;\n", 200)), 0o644)
	os.WriteFile(filepath.Join(root, "app.js.gz"), []byte("pretend gzip"), 0o644)
	page := strings.Repeat("<p>csrf token and reflected input</p>\n", 50)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Query().Get("cookie") != "" {
			w.Header().Add("Set-Cookie", "session=secret; HttpOnly")
		}
		w.Write([]byte(page))
	}))
	defer up.Close()
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
headers = { add = { Set-Cookie = "seen=1" } }
[[routes]]
path = "/app/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
[[routes]]
path = "/forced/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
compression = true
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, body := c.Get(t, "/app/?cookie=1", "Accept-Encoding: gzip, zstd")
		if resp.Header.Get("Content-Encoding") != "" || string(body) != page || resp.Header.Get("Set-Cookie") == "" {
			t.Errorf("cookie response compressed: %v", resp.Header)
		}
		resp, _ = c.Get(t, "/app/", "Accept-Encoding: gzip, zstd")
		if resp.Header.Get("Content-Encoding") != "zstd" {
			t.Errorf("response without cookie not compressed: %v", resp.Header)
		}
		resp, _ = c.Get(t, "/forced/?cookie=1", "Accept-Encoding: gzip, zstd")
		if resp.Header.Get("Content-Encoding") != "zstd" || resp.Header.Get("Set-Cookie") == "" {
			t.Errorf("compression = true: %v", resp.Header)
		}
		resp, body = c.Get(t, "/app.js", "Accept-Encoding: gzip")
		if resp.Header.Get("Content-Encoding") != "gzip" || string(body) != "pretend gzip" || resp.Header.Get("Set-Cookie") != "seen=1" {
			t.Errorf("precompressed file: %v %q", resp.Header, body)
		}
	})
}
