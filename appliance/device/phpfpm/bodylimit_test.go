package phpfpm

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// QA F6: a fastcgi route to Arka's own php-fpm refuses a body larger than
// the post_max_size Arka writes for it (upload_max_filesize + 1 MiB) with
// 413, whether its length is declared or not, instead of spooling it to
// disk for PHP to drop; a body within it reaches the script whole.
func TestBodyLimitIsPostMaxSize(t *testing.T) {
	root := tempDir(t)
	fpmtest.WriteFiles(t, root, map[string]string{
		"len.php": `<?php echo strlen(file_get_contents("php://input"));`,
	})
	s, _ := startFPM(t, Config{PM: board.PMStatic, MaxChildren: 2, MaxRequests: 100, OpcacheMiB: 16, UploadMax: 1 << 20})
	bin, _ := fpmtest.Binary()
	e := servertest.StartWith(t, server.Options{PHP: pool{s}}, `default = true
listen = ["{{HTTP}}"]
php = { fpm = "`+bin+`", upload_max_filesize = "1MiB" }
[[routes]]
path = "/"
handler = { type = "fastcgi", address = "php", root = "`+root+`" }
`)
	post := func(n int, chunked bool) (int, string) {
		t.Helper()
		var body io.Reader = bytes.NewReader(make([]byte, n))
		if chunked {
			body = io.MultiReader(body) // unknown length: sent chunked
		}
		resp, err := http.Post("http://"+e.HTTP+"/len.php", "application/octet-stream", body)
		if err != nil {
			t.Fatalf("POST %d bytes: %v", n, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const postMax = 2 << 20 // upload_max_filesize + 1 MiB
	for _, chunked := range []bool{false, true} {
		if code, got := post(postMax, chunked); code != 200 || got != strconv.Itoa(postMax) {
			t.Errorf("chunked %v: POST of post_max_size: %d %.80q", chunked, code, got)
		}
		if code, _ := post(postMax+1, chunked); code != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked %v: POST of post_max_size + 1: %d, want 413", chunked, code)
		}
	}
}
