package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// Route options, BREACH and intercept_errors with real PHP: the route's
// headers change PHP's response, a page that sets a cookie is not
// compressed, and PHP's own 500 body is replaced by the site's page.
func TestRouteOptionsWithPHP(t *testing.T) {
	fpm := fpmtest.Start(t, fpmtest.Config{MaxChildren: 2, PHP: map[string]string{"expose_php": "1"}})
	dir := t.TempDir()
	root := filepath.Join(dir, "php")
	page := strings.Repeat("<p>token and input</p>\n", 100)
	fpmtest.WriteFiles(t, root, map[string]string{
		"cookie.php":  `<?php header("X-Powered-By: PHP/test"); setcookie("session", "secret"); echo str_repeat("<p>token and input</p>\n", 100);`,
		"plain.php":   `<?php header("X-Powered-By: PHP/test"); echo str_repeat("<p>token and input</p>\n", 100);`,
		"fail.php":    `<?php http_response_code(500); echo "PHP Fatal error in /srv/app/secret.php";`,
		"private.php": `<?php echo "private";`,
	})
	errs := filepath.Join(dir, "errors")
	os.Mkdir(errs, 0o755)
	os.WriteFile(filepath.Join(errs, "5xx.html"), []byte("<p>sorry</p>\n"), 0o644)
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[errors]
root = "`+errs+`"
pages = { "5xx" = "5xx.html" }
intercept_errors = true
[[routes]]
path = "/"
handler = { type = "fastcgi", address = "`+fpm.Address+`", root = "`+root+`" }
headers = { remove = ["X-Powered-By"], set = { X-Frame-Options = "DENY" } }
[[routes]]
path = "/private.php"
handler = { type = "fastcgi", address = "`+fpm.Address+`", root = "`+root+`" }
deny = ["127.0.0.0/8", "::1"]
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, body := c.Get(t, "/cookie.php", "Accept-Encoding: zstd, gzip")
		if resp.StatusCode != 200 || string(body) != page || resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Set-Cookie") == "" {
			t.Errorf("PHP page with a cookie: %d %v", resp.StatusCode, resp.Header)
		}
		if resp.Header.Get("X-Powered-By") != "" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("route headers on PHP's response: %v", resp.Header)
		}
		resp, _ = c.Get(t, "/plain.php", "Accept-Encoding: zstd, gzip")
		if resp.Header.Get("Content-Encoding") != "zstd" || resp.Header.Get("X-Powered-By") != "" {
			t.Errorf("PHP page without a cookie: %v", resp.Header)
		}
		resp, body = c.Get(t, "/fail.php")
		if resp.StatusCode != 500 || string(body) != "<p>sorry</p>\n" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("PHP's 500: %d %q %v", resp.StatusCode, body, resp.Header)
		}
		resp, body = c.Get(t, "/private.php")
		if resp.StatusCode != 403 || strings.Contains(string(body), "private") {
			t.Errorf("denied PHP route: %d %q", resp.StatusCode, body)
		}
	})
}
