// Integration tests: the real arka binary, started as a user starts it,
// reached by real clients (Go's HTTP/1.1 and HTTP/2, curl).
package integration

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/arkaweb/arka/tests/integration/harness"
)

// seedSite is the site file published in the Arka seed, verbatim except
// for paths and ports.
const seedSite = `default = true
server_names = ["bench.local"]
listen = ["HTTPADDR"]
request_id = false                  # nginx adds no request id by default either

[tls]
listen = ["HTTPSADDR"]
cert = "ROOT/tls/cert.pem"
key = "ROOT/tls/key.pem"

[log]
enabled = false                     # access logs off for every server

[compression]
enabled = true
min_size = "512B"

[[routes]]
path = "/proxy/"
handler = { type = "proxy", upstreams = ["UPSTREAM"], strip_prefix = true, forward_headers = false }

[[routes]]
path = "/app/"
handler = { type = "fastcgi", address = "unix:PHPSOCK", root = "ROOT/www", max_conns = 32, queue = { size = 1000, timeout = "30s" } }

[[routes]]
path = "/"
handler = { type = "static", root = "ROOT/www" }
`

type seedEnv struct {
	root, file, http, https string
	page, script            []byte
}

// writeSeed lays out the seed's /srv/bench tree under a temp directory.
func writeSeed(t *testing.T) *seedEnv {
	t.Helper()
	e := &seedEnv{root: t.TempDir(), http: harness.FreeAddr(t), https: harness.FreeAddr(t)}
	harness.WriteCert(t, filepath.Join(e.root, "tls"), "bench.local")
	www := filepath.Join(e.root, "www")
	os.MkdirAll(filepath.Join(www, "app"), 0o755)
	e.page = []byte("<!DOCTYPE html><title>bench</title>" + strings.Repeat("<p>small page</p>", 80))
	e.script = []byte(strings.Repeat("export function add(a, b) { return a + b }\n", 2000))
	os.WriteFile(filepath.Join(www, "index.html"), e.page, 0o644)
	os.WriteFile(filepath.Join(www, "app.js"), e.script, 0o644)
	var br, gz bytes.Buffer
	bw := brotli.NewWriterLevel(&br, 11)
	bw.Write(e.script)
	bw.Close()
	gw, _ := gzip.NewWriterLevel(&gz, 9)
	gw.Write(e.script)
	gw.Close()
	os.WriteFile(filepath.Join(www, "app.js.br"), br.Bytes(), 0o644)
	os.WriteFile(filepath.Join(www, "app.js.gz"), gz.Bytes(), 0o644)
	os.WriteFile(filepath.Join(www, "big.bin"), bytes.Repeat([]byte("0123456789abcdef"), 1<<16), 0o644)
	os.WriteFile(filepath.Join(www, "app", "hello.php"), []byte("<?php echo 'hi';\n"), 0o644)
	src := strings.NewReplacer("ROOT", e.root, "HTTPADDR", e.http, "HTTPSADDR", e.https,
		"UPSTREAM", harness.FreeAddr(t), "PHPSOCK", filepath.Join(e.root, "php.sock")).Replace(seedSite)
	e.file = filepath.Join(e.root, "bench.toml")
	os.WriteFile(e.file, []byte(src), 0o644)
	return e
}

func TestVersion(t *testing.T) {
	code, out := harness.Run(t, "-version")
	if code != 0 || strings.TrimSpace(out) != "arka test" {
		t.Errorf("arka -version: %d %q", code, out)
	}
}

// The seed's site file passes `arka -t` unchanged except for paths, and
// the check writes nothing: the state directory it is given is not made
// (as nginx -t, a check may run as another user or on a read-only copy).
func TestSeedSiteChecks(t *testing.T) {
	e := writeSeed(t)
	state := filepath.Join(t.TempDir(), "state")
	code, out := harness.Run(t, "-t", "-c", e.file, "-state", state)
	if code != 0 {
		t.Fatalf("arka -t: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "test is successful") {
		t.Errorf("arka -t output: %s", out)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("arka -t made its state directory %s (%v)", state, err)
	}
	// The embedded demo site (no -c) is checked without writing there too.
	code, out = harness.Run(t, "-t", "-state", state)
	if code != 0 || !strings.Contains(out, "test is successful") {
		t.Fatalf("arka -t (demo site): exit %d\n%s", code, out)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("arka -t (demo site) wrote into its state directory %s (%v)", state, err)
	}
}

// Config mistakes: file:line:col, non-zero exit, nothing starts.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "www"), 0o755)
	cases := map[string]struct{ src, want string }{
		"unknown key": {"listen = [\":1\"]\nlisen = 2\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n",
			`:2:1: unknown key "lisen"`},
		"wrong type": {"default = \"yes\"\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n",
			":1:"},
		"missing root": {"[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"nowhere\" }\n",
			`:3:30: root "` + filepath.Join(dir, "nowhere") + `": no such file or directory`},
		"route path": {"[[routes]]\npath = \"app/\"\nhandler = { type = \"static\", root = \"www\" }\n",
			`:2:1: route path "app/" must start with "/"`},
		"unreadable cert": {"[tls]\nlisten = [\"127.0.0.1:1\"]\ncert = \"nope.pem\"\nkey = \"nope.key\"\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n",
			":3:8: cannot load certificate"},
		"syntax": {"[[routes]\n", ":1:"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".toml")
			os.WriteFile(f, []byte(c.src), 0o644)
			for _, args := range [][]string{{"-t", "-c", f}, {"-c", f}} {
				code, out := harness.Run(t, append(args, "-state", t.TempDir())...)
				if code == 0 || !strings.Contains(out, f+c.want) {
					t.Errorf("arka %v: exit %d, output:\n%s\nwant it to contain %s%s", args, code, out, f, c.want)
				}
			}
		})
	}
	// Two files: duplicate default and a name claimed twice.
	multi := filepath.Join(dir, "multi")
	os.MkdirAll(filepath.Join(multi, "www"), 0o755)
	site := "default = true\nserver_names = [\"same.example\"]\nlisten = [\"127.0.0.1:18080\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n"
	os.WriteFile(filepath.Join(multi, "a.toml"), []byte(site), 0o644)
	os.WriteFile(filepath.Join(multi, "b.toml"), []byte(site), 0o644)
	code, out := harness.Run(t, "-t", "-c", multi)
	if code == 0 || !strings.Contains(out, filepath.Join(multi, "b.toml")+":1:1: a second default site") ||
		!strings.Contains(out, filepath.Join(multi, "b.toml")+`:2:17: server name "same.example"`) {
		t.Errorf("two sites: exit %d\n%s", code, out)
	}
}

func TestSeedSiteServes(t *testing.T) {
	e := writeSeed(t)
	p := harness.Start(t, nil, []string{"-c", e.file, "-state", t.TempDir()}, e.http, e.https)
	h1, h2 := harness.Clients()

	get := func(c *http.Client, url string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		for _, h := range hdr {
			k, v, _ := strings.Cut(h, ": ")
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for name, c := range map[string]*http.Client{"h1": h1, "h2": h2} {
		base := "http://" + e.http
		if name == "h2" {
			base = "https://" + e.https
		}
		resp, body := get(c, base+"/")
		if resp.StatusCode != 200 || !bytes.Equal(body, e.page) {
			t.Errorf("%s GET /: %d", name, resp.StatusCode)
		}
		if name == "h2" && resp.Proto != "HTTP/2.0" {
			t.Errorf("TLS client got %s, want HTTP/2.0", resp.Proto)
		}
		// Precompressed sibling, smallest acceptable.
		resp, body = get(c, base+"/app.js", "Accept-Encoding: gzip, deflate, br, zstd")
		if resp.Header.Get("Content-Encoding") != "br" {
			t.Errorf("%s app.js: Content-Encoding %q", name, resp.Header.Get("Content-Encoding"))
		} else if dec, _ := io.ReadAll(brotli.NewReader(bytes.NewReader(body))); !bytes.Equal(dec, e.script) {
			t.Errorf("%s app.js: br body does not decode to the script", name)
		}
		// 304 and ranges.
		etag := resp.Header.Get("ETag")
		if r, _ := get(c, base+"/app.js", "Accept-Encoding: br", "If-None-Match: "+etag); r.StatusCode != 304 {
			t.Errorf("%s If-None-Match: %d", name, r.StatusCode)
		}
		if r, b := get(c, base+"/big.bin", "Range: bytes=16-31"); r.StatusCode != 206 || string(b) != "0123456789abcdef" {
			t.Errorf("%s range: %d %q", name, r.StatusCode, b)
		}
	}
	// curl over HTTP/2 and with raw traversal attempts.
	out := harness.Curl(t, "-k", "--http2", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", "https://"+e.https+"/")
	if out != "2 200" {
		t.Errorf("curl --http2: %q", out)
	}
	out = harness.Curl(t, "-k", "--http2", "-H", "Accept-Encoding: br", "-D", "-", "-o", "/dev/null", "https://"+e.https+"/app.js")
	if !strings.Contains(out, "content-encoding: br") {
		t.Errorf("curl --http2 app.js headers:\n%s", out)
	}
	// Several ranges of a compressed file: a whole response curl can
	// decode (it used to be multipart labelled gzip: "incorrect header
	// check").
	for _, args := range [][]string{{"--http1.1", "http://" + e.http}, {"--http2", "https://" + e.https}} {
		out := harness.Curl(t, "-k", args[0], "--compressed", "-H", "Range: bytes=0-9,20-29", args[1]+"/app.js")
		if out != string(e.script) {
			t.Errorf("curl %s --compressed, two ranges: %d bytes, not the script", args[0], len(out))
		}
	}
	for _, path := range []string{"/../bench.toml", "/%2e%2e/bench.toml", "/..%2fbench.toml", "/tls/../../bench.toml"} {
		out := harness.Curl(t, "--path-as-is", "-o", "/dev/null", "-w", "%{http_code}", "http://"+e.http+path)
		if out != "400" && out != "404" {
			t.Errorf("curl %s: %s", path, out)
		}
	}
	if err := p.Stop(t); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// SIGHUP: a broken file keeps the old configuration and logs file:line; a
// fixed one is served.
func TestReloadSignal(t *testing.T) {
	dir := t.TempDir()
	addr := harness.FreeAddr(t)
	for _, v := range []string{"v1", "v2"} {
		os.MkdirAll(filepath.Join(dir, v), 0o755)
		os.WriteFile(filepath.Join(dir, v, "index.html"), []byte(v), 0o644)
	}
	site := func(root string) string {
		return "default = true\nlisten = [\"" + addr + "\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"" + root + "\" }\n"
	}
	f := filepath.Join(dir, "site.toml")
	os.WriteFile(f, []byte(site("v1")), 0o644)
	p := harness.Start(t, nil, []string{"-c", f, "-state", t.TempDir()}, addr)
	h1, _ := harness.Clients()
	body := func() string {
		resp, err := h1.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body() != "v1" {
		t.Fatal("not serving v1")
	}
	os.WriteFile(f, []byte("bogus_key = 1\n"+site("v1")), 0o644)
	p.Signal(syscall.SIGHUP)
	p.WaitOutput(t, f+`:1:1: unknown key "bogus_key"`)
	if body() != "v1" {
		t.Error("a broken reload changed what is served")
	}
	os.WriteFile(f, []byte(site("v2")), 0o644)
	p.Signal(syscall.SIGHUP)
	p.WaitOutput(t, "configuration reloaded")
	if body() != "v2" {
		t.Error("a good reload did not take effect")
	}
}

// Large plain-HTTP responses go through sendfile(2).
func TestSendfile(t *testing.T) {
	if testing.Short() {
		t.Skip("strace run skipped in -short")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed")
	}
	if err := exec.Command(strace, "-f", "-e", "trace=none", "true").Run(); err != nil {
		t.Skipf("strace cannot trace here: %v", err)
	}
	e := writeSeed(t)
	log := filepath.Join(t.TempDir(), "strace.log")
	p := harness.Start(t, []string{strace, "-f", "-e", "trace=sendfile", "-o", log}, []string{"-c", e.file, "-state", t.TempDir()}, e.http)
	h1, _ := harness.Clients()
	resp, err := h1.Get("http://" + e.http + "/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n != 1<<20 {
		t.Fatalf("big.bin: %d bytes", n)
	}
	p.Stop(t)
	data, _ := os.ReadFile(log)
	if !bytes.Contains(data, []byte("sendfile(")) {
		t.Errorf("no sendfile in strace output:\n%s", data)
	} else {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, "sendfile(") {
				t.Logf("strace: %s", l)
				break
			}
		}
	}
}

// Hostile requests get 4xx, never a crash or a hang.
func TestHostileRequests(t *testing.T) {
	e := writeSeed(t)
	p := harness.Start(t, nil, []string{"-c", e.file, "-state", t.TempDir()}, e.http)
	raw := func(req string) string {
		c, err := net.DialTimeout("tcp", e.http, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte(req))
		b, _ := io.ReadAll(c)
		line, _, _ := strings.Cut(string(b), "\r\n")
		return line
	}
	for req, want := range map[string]string{
		"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n":                           "HTTP/1.1 400",
		"GET /%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n":                                        "HTTP/1.1 400",
		"GET / HTTP/1.1\r\nConnection: close\r\n\r\n":                                                      "HTTP/1.1 400", // no Host
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n":                                "HTTP/1.1 400",
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n": "HTTP/1.1 400",
		"BREW / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n":                                          "HTTP/1.1 405",
		"GET / HTTP/9.9\r\nHost: x\r\nConnection: close\r\n\r\n":                                           "HTTP/1.1 505",
		"GET http://bench.local/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n":                         "HTTP/1.1 200",
		"GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 40<<10) + "\r\nConnection: close\r\n\r\n": "HTTP/1.1 431",
	} {
		if got := raw(req); !strings.HasPrefix(got, want) {
			t.Errorf("%.60q: %q, want %q", req, got, want)
		}
	}
	if p.Exited() {
		t.Fatal("arka exited")
	}
}

// `arka -t -reserved-ports` (the appliance's deploy check) refuses a site
// that listens on a port the device keeps, at the listen entry.
func TestCheckReservedPorts(t *testing.T) {
	f := filepath.Join(t.TempDir(), "site.toml")
	os.WriteFile(f, []byte("listen = [\":8443\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"respond\", body = \"hi\" }\n"), 0o644)
	code, out := harness.Run(t, "-t", "-c", f, "-state", t.TempDir(), "-reserved-ports", "8080=the device's web UI,8443=the device's update/deploy API")
	if code != 1 || !strings.Contains(out, "site.toml:1:11: port 8443 is the device's update/deploy API") {
		t.Errorf("arka -t -reserved-ports: exit %d\n%s", code, out)
	}
	code, out = harness.Run(t, "-t", "-c", f, "-state", t.TempDir(), "-reserved-ports", "8080=the device's web UI")
	if code != 0 {
		t.Errorf("a port that is not reserved: exit %d\n%s", code, out)
	}
}
