package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/tests/fpmtest"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// What a client, a shared cache and the access log see (issue 18), from
// the outside, over HTTP/1.1, TLS and HTTP/2: stale siblings are not
// served, several ranges of a compressed file are a 200 curl --compressed
// can decode, %2F stays data (upstream byte for byte, never a separator
// for files), errors carry no route caching fields, and every response
// is in the access log with the status the client got, whoever made it.
func TestWhatClientsCachesAndLogsSee(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "www")
	newJS := []byte(strings.Repeat("console.log('new version');\n", 100))
	oldJS := []byte(strings.Repeat("console.log('OLD version');\n", 100))
	css := []byte(strings.Repeat("body { margin: 0; padding: 0 }\n", 80))
	month := time.Now().Add(-30 * 24 * time.Hour)
	files := []struct {
		name  string
		data  []byte
		mtime time.Time
	}{
		{"app.js.gz", gz(t, oldJS), month}, // last month's, left beside the edited file
		{"app.js", newJS, time.Now().Add(-time.Minute)},
		{"style.css", css, month},
		{"style.css.gz", gz(t, css), month}, // as gzip -k leaves it: same mtime
		{"secret", []byte("secret\n"), month},
		{"dir/file.txt", []byte("in dir\n"), month},
		{"docs/index.html", []byte("docs\n"), month},
	}
	for _, f := range files {
		p := filepath.Join(root, f.name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, f.mtime, f.mtime)
	}
	var upMu sync.Mutex
	var upSaw []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upMu.Lock()
		upSaw = append(upSaw, r.RequestURI)
		upMu.Unlock()
		io.WriteString(w, r.RequestURI)
	}))
	t.Cleanup(up.Close)
	logPath := filepath.Join(dir, "access.log")
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[log]
enabled = true
path = "`+logPath+`"
format = "json"
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`", cache_control = "public, max-age=60", headers = { Expires = "Thu, 01 Jan 2037 00:00:00 GMT", X-Frame-Options = "DENY" } }
[[routes]]
path = "/docs/"
handler = { type = "static", root = "`+root+`" }
[[routes]]
path = "/api/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
`)
	type logged struct {
		uri    string
		status int
	}
	var mu sync.Mutex
	var want []logged
	get := func(t *testing.T, c *servertest.Client, path string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		resp, body := c.Get(t, path, hdr...)
		mu.Lock()
		want = append(want, logged{path, resp.StatusCode})
		mu.Unlock()
		return resp, body
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		// 1. The stale sibling is ignored: a gzip client gets today's
		// script (compressed once), with an ETag that is not the sibling's.
		resp, body := get(t, c, "/app.js", "Accept-Encoding: gzip")
		if got := gunzip(t, resp, body); !bytes.Equal(got, newJS) {
			t.Errorf("app.js with a stale app.js.gz: got %.40q, want the new version", got)
		}
		// 2. Several ranges of a compressed representation: 200 with all
		// of it, decodable (curl --compressed); of identity: 206 multipart,
		// no Content-Encoding.
		resp, body = get(t, c, "/style.css", "Accept-Encoding: gzip", "Range: bytes=0-9,20-29")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(gunzip(t, resp, body), css) {
			t.Errorf("two ranges, gzip accepted: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Type"))
		}
		resp, body = get(t, c, "/style.css", "Range: bytes=0-9,20-29")
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode != 206 || resp.Header.Get("Content-Encoding") != "" || mt != "multipart/byteranges" ||
			!bytes.Contains(body, css[0:10]) || !bytes.Contains(body, css[20:30]) {
			t.Errorf("two ranges, identity: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Encoding"), mt)
		}
		// One range of the gzip representation stays 206 of its bytes.
		resp, body = get(t, c, "/style.css", "Accept-Encoding: gzip", "Range: bytes=0-9")
		if resp.StatusCode != 206 || resp.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(body, gz(t, css)[:10]) {
			t.Errorf("one range, gzip: %d %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}

		// 3. Encoded slashes: upstream byte for byte; never a separator
		// for files; a dot segment hidden behind them is refused.
		resp, body = get(t, c, "/api/items/a%2F%2Fb?x=%2F")
		if resp.StatusCode != 200 || string(body) != "/api/items/a%2F%2Fb?x=%2F" {
			t.Errorf("proxy: %d, upstream saw %q", resp.StatusCode, body)
		}
		resp, body = get(t, c, "/api/./v1/../items/caf%c3%a9%3Bx")
		if resp.StatusCode != 200 || string(body) != "/api/items/caf%c3%a9%3Bx" {
			t.Errorf("proxy, normalized path: %d, upstream saw %q", resp.StatusCode, body)
		}
		if resp, _ = get(t, c, "/dir%2Ffile.txt"); resp.StatusCode != 404 {
			t.Errorf("/dir%%2Ffile.txt: %d, want 404", resp.StatusCode)
		}
		if resp, _ = get(t, c, "/dir/a%2F..%2F..%2Fsecret"); resp.StatusCode != 400 {
			t.Errorf("/dir/a%%2F..%%2F..%%2Fsecret: %d, want 400", resp.StatusCode)
		}

		// 4. Caching fields of the route on 200 and 304 only; errors
		// no-store.
		resp, _ = get(t, c, "/secret")
		etag := resp.Header.Get("Etag")
		if resp.Header.Get("Cache-Control") != "public, max-age=60" || resp.Header.Get("Expires") == "" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("200: Cache-Control %q, Expires %q", resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"))
		}
		resp, _ = get(t, c, "/secret", "If-None-Match: "+etag)
		if resp.StatusCode != 304 || resp.Header.Get("Cache-Control") != "public, max-age=60" || resp.Header.Get("Expires") == "" {
			t.Errorf("304: %d, Cache-Control %q, Expires %q", resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"))
		}
		for _, hdr := range []string{"If-Match: \"other\"", "Range: bytes=9999-"} {
			resp, _ = get(t, c, "/secret", hdr)
			if resp.StatusCode < 400 || resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Expires") != "" {
				t.Errorf("%s: %d, Cache-Control %q, Expires %q; want an error with no-store only", hdr, resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"))
			}
		}
		if resp, _ = get(t, c, "/missing"); resp.StatusCode != 404 || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("404: Cache-Control %q", resp.Header.Get("Cache-Control"))
		}

		// 5. Responses no handler made: logged like the others (checked
		// below with the rest).
		for path, code := range map[string]int{
			"/%2e%2e/secret": 400, // above the root
			"/a%00b":         400, // NUL
			"/a%5Cb":         400, // backslash
			"/docs":          301, // the route's trailing-slash redirect
			"/api/x/..;/adm": 400, // Tomcat's "..;": a dot segment elsewhere
		} {
			if resp, _ = get(t, c, path); resp.StatusCode != code {
				t.Errorf("%s: %d, want %d", path, resp.StatusCode, code)
			}
		}
	})

	// The engines' own answers: a malformed request line (400), a request
	// target over the header limit (414), header fields over it (431), over
	// plain HTTP and TLS; 431 over HTTP/2.
	raw := func(dial func() (net.Conn, error), req string) int {
		t.Helper()
		c, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%.30q: %v", req, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	dials := map[string]func() (net.Conn, error){
		"plain": func() (net.Conn, error) { return net.Dial("tcp", e.HTTP) },
		"tls": func() (net.Conn, error) {
			return tls.Dial("tcp", e.HTTPS, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		},
	}
	long := "/" + strings.Repeat("a", 40<<10)
	bigHeader := "X-Big: " + strings.Repeat("b", 40<<10) + "\r\n"
	for name, dial := range dials {
		for req, code := range map[string]int{
			"GET /../x\\y HTTP/1.1 extra\r\nHost: a\r\n\r\n":        400,
			"GET " + long + " HTTP/1.1\r\nHost: a\r\n\r\n":          414,
			"GET /big HTTP/1.1\r\nHost: a\r\n" + bigHeader + "\r\n": 431,
		} {
			if got := raw(dial, req); got != code {
				t.Errorf("%s %.20q: %d, want %d", name, req, got, code)
			}
			uri := strings.Fields(req)[1]
			if code == 400 {
				uri = "/../x\\y"
			}
			if code == 414 {
				uri = "" // the line was never read whole
			}
			want = append(want, logged{uri, code})
		}
	}
	if got := h2BigHeader(t, e.HTTPS, "/h2big"); got != "431" {
		t.Errorf("h2 header list over the limit: :status %q, want 431", got)
	}
	want = append(want, logged{"/h2big", 431})

	// Plain HTTP to the TLS port.
	if got := raw(func() (net.Conn, error) { return net.Dial("tcp", e.HTTPS) }, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"); got != 400 {
		t.Errorf("plain HTTP to TLS port: %d", got)
	}
	want = append(want, logged{"", 400})

	upMu.Lock()
	if len(upSaw) != 6 {
		t.Errorf("upstream saw %q", upSaw)
	}
	upMu.Unlock()

	lines := flushedLog(t, e, logPath, len(want))
	got := map[logged]int{}
	for _, l := range lines {
		var m struct {
			URI    string
			Status int
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		got[logged{m.URI, m.Status}]++
	}
	for _, w := range want {
		if w.uri == long {
			w.uri = ""
		}
		if got[w] == 0 {
			t.Errorf("not in the access log: %q %d", w.uri, w.status)
			continue
		}
		got[w]--
	}
	for k, n := range got {
		if n > 0 {
			t.Errorf("logged %d more times than answered: %q %d", n, k.uri, k.status)
		}
	}
	// The counters: every response is somewhere; engine answers and
	// normalization 400s (5 per client) on the site's "-" row, the
	// redirect on /docs/.
	var total, dash uint64
	for _, rs := range e.Server.RouteStats() {
		total += rs.Requests.Load()
		if rs.Route == "-" {
			dash = rs.Requests.Load()
		}
	}
	if total != uint64(len(want)) || dash != 5*3+8 {
		t.Errorf("counters: %d responses (%d on \"-\"), want %d (%d)", total, dash, len(want), 5*3+8)
	}
}

// flushedLog flushes the access log and returns its lines once it has n.
func flushedLog(t *testing.T, e *servertest.Env, path string, n int) []string {
	t.Helper()
	var lines []string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		e.Server.ReopenLogs() // flushes
		data, _ := os.ReadFile(path)
		lines = strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) >= n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(lines) != n {
		t.Errorf("access log has %d lines, want %d", len(lines), n)
	}
	return lines
}

func gz(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, 9)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func gunzip(t *testing.T, resp *http.Response, body []byte) []byte {
	t.Helper()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
		return body
	}
	r, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Errorf("not gzip: %v", err)
		return nil
	}
	out, err := io.ReadAll(r)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Errorf("gzip body: %v", err)
	}
	return out
}

// h2BigHeader sends one HTTP/2 request whose header list is over the
// server's limit (as a client ignoring SETTINGS_MAX_HEADER_LIST_SIZE
// would; Go's own transport refuses to) and returns the :status answered.
func h2BigHeader(t *testing.T, addr, path string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a"}, {":path", path}, {"x-big", strings.Repeat("b", 40<<10)}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	block := hb.Bytes()
	const max = 16 << 10
	first := true
	for len(block) > 0 {
		n := min(len(block), max)
		if first {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:n], EndStream: true, EndHeaders: n == len(block)})
			first = false
		} else {
			fr.WriteContinuation(1, n == len(block), block[:n])
		}
		block = block[n:]
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("h2: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			return f.PseudoValue("status")
		case *http2.GoAwayFrame:
			t.Fatalf("h2: GOAWAY %v", f.ErrCode)
		}
	}
}

// A client that aborts its upload on a proxy or FastCGI route is logged
// 499 (as nginx does), not 400, over HTTP/1.1 (connection closed
// mid-body), TLS and HTTP/2 (RST_STREAM), and the upstream's side is
// ended too.
func TestAbortedUpload499(t *testing.T) {
	fpm := fpmtest.Start(t, fpmtest.Config{MaxChildren: 2})
	dir := t.TempDir()
	php := filepath.Join(dir, "php")
	fpmtest.WriteFiles(t, php, map[string]string{"app/up.php": `<?php echo strlen(file_get_contents("php://input"));`})
	upErr := make(chan error, 3)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		upErr <- err
	}))
	t.Cleanup(up.Close)
	logPath := filepath.Join(dir, "access.log")
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[log]
enabled = true
path = "`+logPath+`"
format = "json"
[[routes]]
path = "/api/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"], request_buffering = false }
[[routes]]
path = "/buffered/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
[[routes]]
path = "/app/"
handler = { type = "fastcgi", address = "`+fpm.Address+`", root = "`+php+`" }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, length := range []int64{-1, 1 << 20} { // chunked (spooled), and streamed as it comes
			req, _ := http.NewRequest("POST", c.Base+"/app/up.php", &abortingBody{left: 256 << 10})
			req.ContentLength = length
			if resp, err := c.HTTP.Do(req); err == nil {
				resp.Body.Close()
				t.Errorf("FastCGI upload (length %d) aborted by the client: answered %d", length, resp.StatusCode)
			}
		}
		req, _ := http.NewRequest("POST", c.Base+"/api/upload", &abortingBody{left: 256 << 10})
		if resp, err := c.HTTP.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("upload aborted by the client: answered %d", resp.StatusCode)
		}
		select {
		case err := <-upErr:
			if err == nil {
				t.Errorf("the upstream got a complete body")
			}
		case <-time.After(10 * time.Second):
			t.Errorf("the upstream still waits for the body")
		}
		// Buffered (the default): the upstream never sees the request.
		req, _ = http.NewRequest("POST", c.Base+"/buffered/upload", &abortingBody{left: 256 << 10})
		if resp, err := c.HTTP.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("buffered upload aborted by the client: answered %d", resp.StatusCode)
		}
		select {
		case err := <-upErr:
			t.Errorf("the upstream saw an aborted buffered upload (%v)", err)
		case <-time.After(100 * time.Millisecond):
		}
	})
	for _, l := range flushedLog(t, e, logPath, 12) {
		if !strings.Contains(l, `"status":499`) {
			t.Errorf("aborted upload logged as %s", l)
		}
	}
}

// abortingBody sends left bytes, then fails as a client that gives up.
type abortingBody struct{ left int }

func (b *abortingBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		time.Sleep(100 * time.Millisecond) // let what was sent reach the upstream
		return 0, errors.New("client gave up")
	}
	n := min(len(p), b.left)
	clear(p[:n])
	b.left -= n
	return n, nil
}

// Requests the engine refuses are logged without letting their bytes forge
// or break log lines: control bytes and quotes escaped, one line each, the
// request line cut at 512 bytes.
func TestRefusedRequestsLoggedSafely(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[log]
enabled = true
path = "`+logPath+`"
[[routes]]
path = "/"
handler = { type = "static", root = "`+dir+`" }
`)
	reqs := []string{
		"GET /\x1b[31mred\" HTTP/1.1\r\nHost: a\r\n\r\n",                             // ANSI escape, quote: bad target
		"GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n",                                      // bare CR
		"G\xffT / HTTP/1.1\r\nHost: a\r\n\r\n",                                       // not a token, not UTF-8
		"GET /" + strings.Repeat("x", 600) + " HTTP/1.1 \" 200 1\r\nHost: a\r\n\r\n", // long, forged tail
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",                             // NUL in a field
	}
	for _, raw := range reqs {
		c, err := net.Dial("tcp", e.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, raw)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 400 {
			t.Errorf("%.20q: %v %v", raw, resp, err)
		}
		c.Close()
	}
	lines := flushedLog(t, e, logPath, len(reqs))
	for i, l := range lines {
		for _, b := range []byte(l) {
			if b < 0x20 || b == 0x7f || b >= 0x80 {
				t.Errorf("line %d has byte %#x: %q", i, b, l)
				break
			}
		}
		if strings.Count(l, `"`) != 6 || !strings.Contains(l, `" 400 `) {
			t.Errorf("line %d is not one well-formed combined line: %q", i, l)
		}
		if len(l) > 512*4+200 {
			t.Errorf("line %d is %d bytes long", i, len(l))
		}
	}
}

// An upstream that breaks off a chunked response: the client must see the
// response cut short (an error reading it), never a complete-looking
// shorter one, also when the content-coding middleware held the bytes
// back (fewer than min_size) when the proxy aborted.
func TestCutUpstreamResponseStaysCut(t *testing.T) {
	up := rawUpstream(t, func(c net.Conn, _ string) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n7\r\npartial\r\n")
		time.Sleep(50 * time.Millisecond)
	})
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "proxy", upstreams = ["`+up+`"] }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, ae := range []string{"gzip", "identity"} {
			req, _ := http.NewRequest("GET", c.Base+"/page", nil)
			req.Header.Set("Accept-Encoding", ae)
			resp, err := c.HTTP.Do(req)
			if err != nil {
				continue // cut before the head: fine
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				t.Errorf("Accept-Encoding %s: a cut response read as complete: %d %q (Content-Length %d)", ae, resp.StatusCode, body, resp.ContentLength)
			}
		}
	})
}
