package integration

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/arkaweb/arka/tests/fpmtest"
	"github.com/arkaweb/arka/tests/integration/harness"
)

const fastcgiSite = `listen = ["HTTPADDR"]
request_id = true
[tls]
listen = ["HTTPSADDR"]
cert = "ROOT/tls/cert.pem"
key = "ROOT/tls/key.pem"
[compression]
enabled = true
min_size = "512B"
[[routes]]
path = "/app/"
handler = { type = "fastcgi", address = "PHPADDR", root = "ROOT/www", max_conns = 4, queue = { size = 200, timeout = "10s" }, env = { APP_ENV = "integration" } }
[[routes]]
path = "/status"
handler = { type = "status" }
[[routes]]
path = "/"
handler = { type = "fastcgi", address = "PHPADDR", root = "ROOT/front", fallback = "/index.php", max_conns = 2 }
`

var fastcgiScripts = map[string]string{
	"www/app/info.php": `<?php
header('Content-Type: application/json');
echo json_encode($_SERVER);
`,
	"www/app/page.php": `<?php
header('Content-Type: text/html; charset=UTF-8');
for ($i = 0; $i < 300; $i++) { echo "<p>row $i of a page made by PHP</p>\n"; }
`,
	"www/app/hash.php": `<?php
$h = hash_init('sha256'); $in = fopen('php://input', 'rb'); $n = 0;
while (!feof($in)) { $d = fread($in, 65536); if ($d === false) break; $n += strlen($d); hash_update($h, $d); }
echo $n, ' ', hash_final($h);
`,
	"www/app/sleep.php":     `<?php usleep(20000); echo "ok";`,
	"www/app/logo.svg":      `<svg xmlns="http://www.w3.org/2000/svg"/>`,
	"www/app/uploads/x.jpg": `<?php echo "PWNED";`,
	"front/index.php": `<?php
header('Content-Type: application/json');
echo json_encode(['front' => true, 'uri' => $_SERVER['REQUEST_URI']]);
`,
	"front/robots.txt": "User-agent: *\n",
}

// TestFastCGIServes runs the real arka binary with fastcgi routes in front
// of a real php-fpm and talks to it over HTTP/1.1, HTTP/2 and curl.
func TestFastCGIServes(t *testing.T) {
	fpm := fpmtest.Start(t, fpmtest.Config{MaxChildren: 4})
	root := t.TempDir()
	harness.WriteCert(t, filepath.Join(root, "tls"), "localhost")
	fpmtest.WriteFiles(t, root, fastcgiScripts)
	httpAddr, httpsAddr := harness.FreeAddr(t), harness.FreeAddr(t)
	site := filepath.Join(root, "site.toml")
	src := strings.NewReplacer("ROOT", root, "HTTPADDR", httpAddr, "HTTPSADDR", httpsAddr, "PHPADDR", fpm.Address).Replace(fastcgiSite)
	if err := os.WriteFile(site, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := harness.Run(t, "-t", "-c", site, "-state", t.TempDir()); code != 0 {
		t.Fatalf("arka -t: %d\n%s", code, out)
	}
	p := harness.Start(t, nil, []string{"-c", site, "-state", t.TempDir()}, httpAddr, httpsAddr)
	h1, h2 := harness.Clients()
	get := func(c *http.Client, url string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		for _, h := range hdr {
			k, v, _ := strings.Cut(h, ": ")
			req.Header.Set(k, v)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}

	for name, c := range map[string]*http.Client{"h1": h1, "h2": h2} {
		base := "http://" + httpAddr
		if name == "h2" {
			base = "https://" + httpsAddr
		}
		// CGI variables as PHP sees them.
		res, body := get(c, base+"/app/info.php/a/b?x=1")
		var s map[string]any
		if err := json.Unmarshal(body, &s); err != nil || res.StatusCode != 200 {
			t.Fatalf("%s info.php: %d %v %s", name, res.StatusCode, err, body)
		}
		want := map[string]any{
			"SCRIPT_NAME": "/app/info.php", "PATH_INFO": "/a/b", "REQUEST_URI": "/app/info.php/a/b?x=1",
			"QUERY_STRING": "x=1", "SCRIPT_FILENAME": root + "/www/app/info.php", "DOCUMENT_ROOT": root + "/www",
			"SERVER_SOFTWARE": "arka/test", "APP_ENV": "integration", "GATEWAY_INTERFACE": "CGI/1.1",
		}
		if name == "h2" {
			want["HTTPS"] = "on"
			want["SERVER_PROTOCOL"] = "HTTP/2.0"
		}
		for k, v := range want {
			if s[k] != v {
				t.Errorf("%s %s = %v, want %v", name, k, s[k], v)
			}
		}
		if id, _ := s["HTTP_X_REQUEST_ID"].(string); id == "" || id != res.Header.Get("X-Request-Id") {
			t.Errorf("%s request id: PHP saw %q, response has %q", name, id, res.Header.Get("X-Request-Id"))
		}

		// Content coding by the server's middleware, not by PHP.
		_, plain := get(c, base+"/app/page.php", "Accept-Encoding: identity")
		for _, enc := range []string{"zstd", "br", "gzip"} {
			ae := map[string]string{"zstd": "gzip, deflate, br, zstd", "br": "gzip, deflate, br", "gzip": "gzip"}[enc]
			res, body := get(c, base+"/app/page.php", "Accept-Encoding: "+ae)
			if got := res.Header.Get("Content-Encoding"); got != enc {
				t.Errorf("%s page.php with %q: Content-Encoding %q, want %s", name, ae, got, enc)
				continue
			}
			if dec := decode(t, enc, body); !bytes.Equal(dec, plain) || len(plain) < 5000 {
				t.Errorf("%s page.php %s: decoded %d bytes, plain %d", name, enc, len(dec), len(plain))
			}
		}

		// Never runs anything but a .php file under the root.
		if res, body := get(c, base+"/app/uploads/x.jpg/y.php"); res.StatusCode != 404 || bytes.Contains(body, []byte("PWNED")) {
			t.Errorf("%s: ran x.jpg: %d %q", name, res.StatusCode, body)
		}
		if res, _ := get(c, base+"/app/missing.php"); res.StatusCode != 404 {
			t.Errorf("%s missing.php: %d", name, res.StatusCode)
		}
		// Static files of a PHP route, and the front controller.
		if res, body := get(c, base+"/app/logo.svg"); res.StatusCode != 200 || !bytes.Contains(body, []byte("<svg")) {
			t.Errorf("%s logo.svg: %d", name, res.StatusCode)
		}
		if res, body := get(c, base+"/blog/2026/hello?p=2"); res.StatusCode != 200 || !bytes.Contains(body, []byte(`"uri":"\/blog\/2026\/hello?p=2"`)) {
			t.Errorf("%s front controller: %d %s", name, res.StatusCode, body)
		}
		if res, body := get(c, base+"/robots.txt"); res.StatusCode != 200 || string(body) != "User-agent: *\n" {
			t.Errorf("%s robots.txt: %d %q", name, res.StatusCode, body)
		}
	}

	// A 4 MB chunked upload from curl, hashed by PHP.
	data := bytes.Repeat([]byte("arka fastcgi upload "), 200000)
	file := filepath.Join(root, "upload.bin")
	os.WriteFile(file, data, 0o644)
	sum := sha256.Sum256(data)
	for _, proto := range []string{"--http1.1", "--http2"} {
		out := harness.Curl(t, "-k", proto, "-H", "Transfer-Encoding: chunked", "-H", "Content-Type: application/octet-stream",
			"--data-binary", "@"+file, "https://"+httpsAddr+"/app/hash.php")
		if want := fmt.Sprintf("%d %s", len(data), hex.EncodeToString(sum[:])); out != want {
			t.Errorf("curl %s chunked upload: %q, want %q", proto, out, want)
		}
	}

	// 48 clients at once against max_conns = 4: all served, none refused.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 48 {
		wg.Go(func() {
			for range 4 {
				res, err := h1.Get("http://" + httpAddr + "/app/sleep.php")
				code := 0
				if err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					code = res.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if codes[200] != 48*4 {
		t.Errorf("under load: status codes %v", codes)
	}

	// The status page shows the pools.
	_, body := get(h1, "http://"+httpAddr+"/status?format=json")
	var st struct {
		FastCGI []struct {
			Address  string `json:"address"`
			MaxConns int    `json:"max_conns"`
			Rejected uint64 `json:"rejected"`
		} `json:"fastcgi"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("status: %v", err)
	}
	found := false
	for _, f := range st.FastCGI {
		if f.Address == fpm.Address && f.MaxConns == 4 {
			found = true
			if f.Rejected != 0 {
				t.Errorf("status: %d rejected", f.Rejected)
			}
		}
	}
	if !found {
		t.Errorf("status page lacks the /app/ pool: %s", body)
	}
	if err := p.Stop(t); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// TestFastCGIServerDown: php-fpm is not running: 502 and one error line
// naming the route and the address.
func TestFastCGIServerDown(t *testing.T) {
	root := t.TempDir()
	fpmtest.WriteFiles(t, root, fastcgiScripts)
	httpAddr := harness.FreeAddr(t)
	sock := filepath.Join(root, "nobody.sock")
	site := filepath.Join(root, "site.toml")
	os.WriteFile(site, []byte(fmt.Sprintf(`listen = [%q]
[[routes]]
path = "/app/"
handler = { type = "fastcgi", address = "unix:%s", root = %q }
`, httpAddr, sock, root+"/www")), 0o644)
	p := harness.Start(t, nil, []string{"-c", site, "-state", t.TempDir()}, httpAddr)
	h1, _ := harness.Clients()
	res, err := h1.Get("http://" + httpAddr + "/app/sleep.php")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", res.StatusCode)
	}
	p.WaitOutput(t, "unix:"+sock)
	for _, line := range strings.Split(p.Output(), "\n") {
		if strings.Contains(line, "fastcgi") && (!strings.Contains(line, "route=/app/") || !strings.Contains(line, "address=unix:"+sock)) {
			t.Errorf("error line lacks route or address: %s", line)
		}
	}
}

func decode(t *testing.T, enc string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch enc {
	case "zstd":
		d, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		r = d
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "gzip":
		g, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = g
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", enc, err)
	}
	return out
}
