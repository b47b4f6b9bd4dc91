package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// TestHeadFieldsMatchGet: HEAD sends the header fields GET would (RFC
// 9110 section 9.3.2; a cache updates a stored response from a HEAD
// response, RFC 9111 section 4.3.5): Content-Encoding, Vary and
// Content-Length as GET's when the length is known, never a
// Content-Encoding that GET does not send. The script sees
// REQUEST_METHOD=HEAD (RFC 3875 section 4.1.12) and php-fpm sends no body
// for it, so the length of a script's answer without a Content-Length is
// unknown then: HEAD is not content-coded, as nginx's gzip filter does,
// which matches a short GET exactly and, for a long one, leaves a cached
// coded response's fields as they are (a cache does not remove fields a
// HEAD response lacks, RFC 9111 section 3.2). A static file has its
// length at hand, and HEAD takes GET's decision.
func TestHeadFieldsMatchGet(t *testing.T) {
	fpm := fpmtest.Start(t, fpmtest.Config{MaxChildren: 2})
	dir := t.TempDir()
	php, www := filepath.Join(dir, "php"), filepath.Join(dir, "www")
	fpmtest.WriteFiles(t, php, map[string]string{
		"small.php":  `<?php header("Content-Type: text/plain"); echo str_repeat("s", 200);`,
		"large.php":  `<?php echo str_repeat("<p>the quick brown fox</p>\n", 400);`,
		"method.php": `<?php header("X-Method: " . $_SERVER["REQUEST_METHOD"]); echo "body";`,
		"sized.php":  `<?php header("Content-Length: 10800"); echo str_repeat("<p>the quick brown fox</p>\n", 400);`,
	})
	os.MkdirAll(www, 0o755)
	os.WriteFile(filepath.Join(www, "small.txt"), []byte("small\n"), 0o644)
	os.WriteFile(filepath.Join(www, "large.html"), []byte(strings.Repeat("<p>the quick brown fox</p>\n", 400)), 0o644)
	logPath := filepath.Join(dir, "access.log")
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[log]
enabled = true
path = "`+logPath+`"
[[routes]]
path = "/php/"
handler = { type = "fastcgi", address = "`+fpm.Address+`", root = "`+dir+`" }
[[routes]]
path = "/"
handler = { type = "static", root = "`+www+`" }
`)
	fields := []string{"Content-Encoding", "Vary", "Content-Type", "ETag", "Last-Modified", "Accept-Ranges"}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, tc := range []struct {
			path   string
			coded  bool // GET is content-coded
			length bool // HEAD carries an uncoded GET's Content-Length
		}{
			{"/php/small.php", false, false},
			{"/php/sized.php", true, false},
			{"/small.txt", false, true},
			{"/large.html", true, true},
		} {
			for _, ae := range []string{"gzip, br, zstd", "br", ""} {
				get, _ := c.Get(t, tc.path, "Accept-Encoding: "+ae)
				head, body := c.Do(t, "HEAD", tc.path, "Accept-Encoding: "+ae)
				if get.StatusCode != 200 || head.StatusCode != 200 || len(body) != 0 {
					t.Fatalf("%s %q: GET %d, HEAD %d with %d bytes", tc.path, ae, get.StatusCode, head.StatusCode, len(body))
				}
				if coded := get.Header.Get("Content-Encoding") != ""; coded != (tc.coded && ae != "") {
					t.Errorf("%s %q: GET Content-Encoding %q", tc.path, ae, get.Header.Get("Content-Encoding"))
				}
				for _, f := range fields {
					if g, h := strings.Join(get.Header.Values(f), ", "), strings.Join(head.Header.Values(f), ", "); g != h {
						t.Errorf("%s %q: %s: GET %q, HEAD %q", tc.path, ae, f, g, h)
					}
				}
				// A coded GET is gathered whole and gets its coded length;
				// HEAD may leave Content-Length out (RFC 9110 section 8.6),
				// never send another.
				g, h := get.Header.Get("Content-Length"), head.Header.Get("Content-Length")
				if tc.length && get.Header.Get("Content-Encoding") == "" && g != h || h != "" && g != h {
					t.Errorf("%s %q: Content-Length: GET %q, HEAD %q", tc.path, ae, g, h)
				}
			}
		}
		// A long script answer without a Content-Length: GET is coded,
		// HEAD (length unknown) says nothing of a coding.
		get, _ := c.Get(t, "/php/large.php", "Accept-Encoding: br")
		head, _ := c.Do(t, "HEAD", "/php/large.php", "Accept-Encoding: br")
		if get.Header.Get("Content-Encoding") != "br" || head.Header.Get("Content-Encoding") != "" || head.Header.Get("Vary") != "" {
			t.Errorf("large.php: GET %v, HEAD %v", get.Header, head.Header)
		}
		// The script learns the request's method (RFC 3875 section 4.1.12).
		if head, _ := c.Do(t, "HEAD", "/php/method.php"); head.Header.Get("X-Method") != "HEAD" {
			t.Errorf("method.php: HEAD reached the script as %q", head.Header.Get("X-Method"))
		}
	})
	// HEAD sent no body, whatever a handler wrote for it: the access log
	// says no bytes ("-").
	heads := 0
	for _, l := range flushedLog(t, e, logPath, (3*(4*3+1)*2 + 3)) {
		if strings.Contains(l, `"HEAD `) {
			heads++
			if !strings.Contains(l, `" 200 - "`) {
				t.Errorf("HEAD logged with body bytes: %s", l)
			}
		}
	}
	if heads != 3*(4*3+2) {
		t.Errorf("%d HEAD lines logged, want %d", heads, 3*(4*3+2))
	}
}
