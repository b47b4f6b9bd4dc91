package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

// Buffered request bodies too large for memory go to <state>/tmp (on the
// appliance /perm), not to the system's temporary directory, which is RAM
// on gokrazy: without that directory a large buffered upload fails with
// 500, and with it the upstream gets the whole body.
func TestRequestBodiesSpoolUnderStateDir(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		io.WriteString(w, strconv.FormatInt(n, 10))
	}))
	defer up.Close()
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
`)
	spool := filepath.Join(e.Dir, "state", "tmp")
	if fi, err := os.Stat(spool); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spool directory %s: %v %v", spool, fi, err)
	}
	body := bytes.Repeat([]byte("x"), 200<<10) // beyond the in-memory buffer
	post := func(t *testing.T, c *servertest.Client) (int, string) {
		req, _ := http.NewRequest("POST", c.Base+"/up", io.MultiReader(bytes.NewReader(body))) // unknown length
		resp, err := c.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		if code, got := post(t, c); code != 200 || got != strconv.Itoa(len(body)) {
			t.Fatalf("upload: %d %q", code, got)
		}
	})
	if err := os.RemoveAll(spool); err != nil {
		t.Fatal(err)
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		if code, _ := post(t, c); code != 500 {
			t.Errorf("upload with the spool directory gone: %d, want 500 (the body went elsewhere)", code)
		}
	})
}
