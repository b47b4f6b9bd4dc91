package fastcgi

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/enginetest"
	"github.com/arkaweb/arka/tests/fpmtest"
	"github.com/arkaweb/arka/tests/testkit"
)

// scripts are the PHP files most tests use, relative to the root.
var scripts = map[string]string{
	"app/index.php": `<?php
header('Content-Type: application/json');
echo json_encode($_SERVER);
`,
	"app/hello.php": `<?php echo "hello from php\n";`,
	"app/form.php": `<?php
header('Content-Type: application/json');
echo json_encode([
  'method' => $_SERVER['REQUEST_METHOD'],
  'get' => (object)$_GET,
  'post' => (object)$_POST,
  'json' => json_decode(file_get_contents('php://input'), true),
  'content_type' => $_SERVER['CONTENT_TYPE'] ?? null,
  'content_length' => $_SERVER['CONTENT_LENGTH'] ?? null,
]);
`,
	"app/hash.php": `<?php
$h = hash_init('sha256');
$in = fopen('php://input', 'rb');
$n = 0;
while (!feof($in)) {
  $d = fread($in, 65536);
  if ($d === false) break;
  $n += strlen($d);
  hash_update($h, $d);
}
echo $n, ' ', hash_final($h);
`,
	"app/status.php": `<?php
header('Status: 404 Not Found');
header('X-Script: status');
echo "no such thing\n";
`,
	"app/redirect.php": `<?php
header('Location: https://example.org/elsewhere');
`,
	"app/local.php": `<?php
header('Location: /app/hello.php');
http_response_code(200);
`,
	"app/cookies.php": `<?php
setcookie('a', '1');
setcookie('b', '2');
setcookie('c', '3');
header('X-Multi: one');
header('X-Multi: two', false);
header('Server: script');
echo "cookies\n";
`,
	"app/stderr.php": `<?php
error_log("stderr-marker-1234");
echo "clean body\n";
`,
	"app/sleep.php": `<?php
if (isset($_SERVER['ORDER_LOG'])) {
  file_put_contents($_SERVER['ORDER_LOG'], ($_SERVER['HTTP_X_SEQ'] ?? '-') . "\n", FILE_APPEND | LOCK_EX);
}
usleep((int)($_GET['ms'] ?? 20) * 1000);
echo "slept\n";
`,
	"app/flush.php": `<?php
header('Content-Type: application/octet-stream');
echo str_repeat('b', (int)$_GET['n']);
flush();
// Wait (10 s at most) until the client says it has the flushed bytes.
for ($i = 0; $i < 1000 && !file_exists($_GET['f']); $i++) {
  usleep(10000);
}
echo file_exists($_GET['f']) ? "seen" : "timeout";
`,
	"app/gate.php": `<?php
// Busy until the test creates the file f (30 s at most): a request that
// holds its connection for as long as a test needs, whatever the load.
for ($i = 0; $i < 3000 && !file_exists($_GET['f']); $i++) {
  usleep(10000);
}
echo file_exists($_GET['f']) ? "released\n" : "timeout\n";
`,
	"app/stream.php": `<?php
for ($i = 0; $i < 200; $i++) {
  echo "tick $i\n";
  flush();
  usleep(50000);
}
`,
	"app/slowpost.php": `<?php
file_put_contents($_SERVER['RUN_LOG'], "run\n", FILE_APPEND | LOCK_EX);
file_put_contents($_SERVER['PID_FILE'], getmypid());
sleep(3);
echo "finished\n";
`,
	"app/silentsleep.php": `<?php
file_put_contents($_SERVER['RUN_LOG'], "run\n", FILE_APPEND | LOCK_EX);
file_put_contents($_SERVER['PID_FILE'], getmypid());
sleep((int)($_GET['n'] ?? 8));
`,
	"app/big.php": `<?php
header('Content-Type: text/html; charset=UTF-8');
echo "<!doctype html><title>big</title>\n";
for ($i = 0; $i < 500; $i++) {
  echo "<p>line $i: the quick brown fox jumps over the lazy dog</p>\n";
}
`,
	"app/pieces.php": `<?php
header('Content-Type: text/plain');
for ($i = 0; $i < 6; $i++) {
  echo str_repeat(chr(97 + $i), 4000); // php-fpm sends each full 8 KiB buffer at once
  usleep(30000);
}
`,
	"app/drip.php": `<?php
// One byte and a flush() every 0.3 ms for a second: php-fpm never
// pauses for holdDelay.
header('Content-Type: text/plain');
$t = microtime(true);
while (microtime(true) - $t < 1) {
  echo "x";
  flush();
  usleep(300);
}
echo "\nend\n";
`,
	"app/mid.php": `<?php
header('Content-Type: text/html; charset=UTF-8');
echo str_repeat("<p>the quick brown fox jumps over the lazy dog</p>\n", 120);
`,
	"app/huge.php": `<?php
$line = str_repeat("x", 1023) . "\n";
for ($i = 0; $i < 2048; $i++) {
  echo $line;
}
`,
	"app/head.php": `<?php
header('X-Head: yes');
echo "body for GET only\n";
`,
	"app/pid.php": `<?php echo getmypid();`,
	"app/overlength.php": `<?php
// A download whose Content-Length is the file's size, and a stray
// newline after it, as from a closing tag followed by a newline at the
// end of an included file.
$s = str_repeat("d", (int)($_GET['n'] ?? 5));
header('Content-Type: application/octet-stream');
header('Content-Length: ' . strlen($s));
echo $s, "\n";
`,
	"app/nocontent.php": `<?php http_response_code(204); echo "dropped";`,
	"app/dir/index.php": `<?php echo "dir index ", $_SERVER['SCRIPT_NAME'], "\n";`,
	"app/style.css":     "body{}\n",
	"uploads/x.jpg":     `<?php echo "PWNED";`,
	"uploads/photo.jpg": "\xff\xd8\xff not really a jpeg",
	"index.php": `<?php
header('Content-Type: application/json');
echo json_encode(['front' => true, 'uri' => $_SERVER['REQUEST_URI'], 'script' => $_SERVER['SCRIPT_NAME'], 'query' => $_SERVER['QUERY_STRING']]);
`,
}

// env starts php-fpm and writes the test scripts into a new root.
type env struct {
	fpm  *fpmtest.FPM
	root string
	log  *testkit.LogBuffer
}

func newEnv(t testing.TB, cfg fpmtest.Config) *env {
	t.Helper()
	e := &env{fpm: fpmtest.Start(t, cfg), root: t.TempDir(), log: &testkit.LogBuffer{}}
	fpmtest.WriteFiles(t, e.root, scripts)
	return e
}

// handler builds a Handler for route /app/ (or as mod changes it).
func (e *env) handler(t testing.TB, mod func(*config.FastCGI, *Options)) *Handler {
	t.Helper()
	cfg := &config.FastCGI{Address: e.fpm.Address, Root: e.root}
	opts := Options{Logger: slog.New(slog.NewTextHandler(e.log, nil)), ServerSoftware: "arka/test"}
	if mod != nil {
		mod(cfg, &opts)
	}
	h, err := New("/app/", complete(t, cfg), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return h
}

// proto is one way of reaching a handler.
type proto struct {
	name   string
	url    string
	client *http.Client
}

// complete normalizes a handler configuration built in the test, as
// config.Load does for one read from a site file.
func complete[T config.Handler](t testing.TB, h T) T {
	t.Helper()
	if err := config.Complete(h); err != nil {
		t.Fatal(err)
	}
	return h
}

// protos serves h on Arka's own engines (package enginetest) and returns
// its HTTP/1.1, HTTP/1.1-with-TLS and HTTP/2 clients ("h1", "h1+tls",
// "h2"), for tests that run every case over each. When the test ends the
// engines shut down, h is closed, and no goroutine of Arka's may be left.
func protos(t testing.TB, h http.Handler) []proto {
	t.Helper()
	var ps []proto
	for _, c := range enginetest.Serve(t, h).Clients() {
		ps = append(ps, proto{c.Name, c.Base, c.HTTP})
	}
	return ps
}

func get(t testing.TB, c *http.Client, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	return do(t, c, req)
}

func do(t testing.TB, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	return res, string(b)
}

// noRedirect makes a client that returns redirects instead of following.
func noRedirect(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

// recordingDialer wraps connections to the FastCGI server and keeps
// everything written to them, to check the records Arka sends.
type recordingDialer struct {
	mu    sync.Mutex
	dials int
	conns []*recConn
}

type recConn struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *recConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *recConn) written() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.out.Bytes())
}

func (d *recordingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	rc := &recConn{Conn: nc}
	d.mu.Lock()
	d.dials++
	d.conns = append(d.conns, rc)
	d.mu.Unlock()
	return rc, nil
}

func (d *recordingDialer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials
}

func (d *recordingDialer) all() []*recConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*recConn(nil), d.conns...)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var _ = tls.VersionTLS12
var _ = strings.Contains

func newTestLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// wantErrorPage checks that a response is Arka's HTML error page for code
// (package errpage), as every handler answers its own errors.
func wantErrorPage(t testing.TB, what string, res *http.Response, body string, code int) {
	t.Helper()
	if res.StatusCode != code || res.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		res.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(body, fmt.Sprintf("<h1>%d ", code)) {
		t.Errorf("%s: %d %q %q, want the error page for %d", what, res.StatusCode, res.Header.Get("Content-Type"), body, code)
	}
}
