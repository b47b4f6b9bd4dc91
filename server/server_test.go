package server_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/tests/fpmtest"
	"github.com/arkaweb/arka/tests/testkit"
)

func www(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	os.MkdirAll(p, 0o755)
	os.WriteFile(filepath.Join(p, "index.html"), []byte(body), 0o644)
	return p
}

func siteFor(names, root string, def bool) string {
	d := ""
	if def {
		d = "default = true\n"
	}
	return d + `server_names = [` + names + `]
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "` + root + `" }
`
}

// Virtual hosts by Host (and SNI), wildcards, the default site.
func TestVirtualHosts(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t,
		siteFor(`"a.example", "*.wild.example"`, www(t, dir, "a", "site A"), false),
		siteFor(`"b.example"`, www(t, dir, "b", "site B"), false),
		siteFor(`"fallback.example"`, www(t, dir, "d", "site D"), true),
	)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for host, want := range map[string]string{
			"a.example":        "site A",
			"A.EXAMPLE":        "site A",
			"b.example:443":    "site B",
			"x.wild.example":   "site A",
			"x.y.wild.example": "site A",
			"unknown.example":  "site D",
			"fallback.example": "site D",
			"wild.example":     "site D",
		} {
			// On every engine the Host field decides: over TLS the
			// client's URL host is an IP, which sends no SNI.
			_, body := c.Get(t, "/", "Host: "+host)
			if string(body) != want {
				t.Errorf("Host %s: %q, want %q", host, body, want)
			}
		}
	})
}

// Without a default site: 404 over plain HTTP, 421 over TLS.
func TestNoDefaultSite(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, siteFor(`"a.example"`, www(t, dir, "a", "site A"), false))
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, _ := c.Get(t, "/", "Host: other.example")
		want := 421
		if c.Name == "h1" {
			want = 404
		}
		if resp.StatusCode != want {
			t.Errorf("unknown host: %d, want %d", resp.StatusCode, want)
		}
		if resp, body := c.Get(t, "/", "Host: a.example"); resp.StatusCode != 200 || string(body) != "site A" {
			t.Errorf("a.example: %d %q", resp.StatusCode, body)
		}
	})
}

// SNI selects the certificate; a request whose Host belongs to another
// site than the SNI on that connection gets 421 (RFC 9110 section 15.5.20).
func TestSNIAndMisdirected(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t,
		siteFor(`"a.example"`, www(t, dir, "a", "site A"), true),
		siteFor(`"b.example"`, www(t, dir, "b", "site B"), false),
	)
	for _, sni := range []string{"a.example", "b.example"} {
		conn, err := tls.Dial("tcp", e.HTTPS, &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		leaf := conn.ConnectionState().PeerCertificates[0]
		if err := leaf.VerifyHostname(sni); err != nil {
			t.Errorf("SNI %s: certificate %v", sni, leaf.DNSNames)
		}
		conn.Write([]byte("GET / HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n"))
		buf := make([]byte, 4096)
		n, _ := conn.Read(buf)
		conn.Close()
		status := strings.SplitN(string(buf[:n]), "\r\n", 2)[0]
		want := "HTTP/1.1 200 OK"
		if sni == "b.example" {
			want = "HTTP/1.1 421 Misdirected Request"
		}
		if status != want {
			t.Errorf("SNI %s, Host a.example: %q, want %q", sni, status, want)
		}
	}
}

// A bad reload keeps the old configuration serving; a good one swaps.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, siteFor(`"a.example"`, www(t, dir, "a", "version 1"), true))
	c := e.Clients()[0]
	if _, b := c.Get(t, "/"); string(b) != "version 1" {
		t.Fatalf("before: %q", b)
	}
	bad := siteFor(`"a.example"`, filepath.Join(dir, "missing"), true)
	err := e.Reload(0, bad)
	if err == nil || !strings.Contains(err.Error(), "site0.toml:") || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("bad reload error: %v", err)
	}
	if _, b := c.Get(t, "/"); string(b) != "version 1" {
		t.Fatalf("after bad reload: %q", b)
	}
	if err := e.Reload(0, siteFor(`"a.example"`, www(t, dir, "v2", "version 2"), true)); err != nil {
		t.Fatal(err)
	}
	if _, b := c.Get(t, "/"); string(b) != "version 2" {
		t.Fatalf("after good reload: %q", b)
	}
	// A listen address that cannot be bound fails the reload and changes nothing.
	busy, _ := net.Listen("tcp", "127.0.0.1:0")
	defer busy.Close()
	src := strings.Replace(siteFor(`"a.example"`, www(t, dir, "v3", "version 3"), true),
		`listen = ["{{HTTP}}"]`, `listen = ["{{HTTP}}", "`+busy.Addr().String()+`"]`, 1)
	if err := e.Reload(0, src); err == nil {
		t.Fatal("reload with a busy address succeeded")
	}
	if _, b := c.Get(t, "/"); string(b) != "version 2" {
		t.Fatalf("after failed bind: %q", b)
	}
}

// A reload is a transaction: when addresses switch between plain HTTP and
// TLS and a bind fails afterwards, every address keeps serving what it
// served (whatever order the addresses are handled in); a reload that
// succeeds switches them over on the same sockets.
func TestReloadSwitchTLSAndFailedBind(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "hello")
	e := servertest.Start(t, siteFor(`"a.example"`, root, true))
	swapped := strings.NewReplacer(`listen = ["{{HTTP}}"]`, `listen = ["{{HTTPS}}"]`,
		`listen = ["{{HTTPS}}"]`, `listen = ["{{HTTP}}"]`).Replace(siteFor(`"a.example"`, root, true))
	get := func(url string) (string, error) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	check := func(when, plain, secure string) {
		t.Helper()
		if b, err := get("http://" + plain + "/"); b != "hello" {
			t.Fatalf("%s: http://%s: %q, %v", when, plain, b, err)
		}
		if b, err := get("https://" + secure + "/"); b != "hello" {
			t.Fatalf("%s: https://%s: %q, %v", when, secure, b, err)
		}
	}
	for i := range 10 {
		// A second address that cannot be bound: the reload fails after
		// both old addresses were prepared for the switch.
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		src := strings.Replace(swapped, `listen = ["{{HTTPS}}"]`, `listen = ["{{HTTPS}}", "`+busy.Addr().String()+`"]`, 1)
		if err := e.Reload(0, src); err == nil || !strings.Contains(err.Error(), "site0.toml:") {
			t.Fatalf("run %d: reload with a busy address: %v", i, err)
		}
		busy.Close()
		check("after a failed reload", e.HTTP, e.HTTPS)
	}
	if err := e.Reload(0, swapped); err != nil {
		t.Fatal(err)
	}
	check("after the switch", e.HTTPS, e.HTTP)
	if err := e.Reload(0, siteFor(`"a.example"`, root, true)); err != nil {
		t.Fatal(err)
	}
	check("after switching back", e.HTTP, e.HTTPS)
}

func TestRequestIDAndAccessLog(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	root := www(t, dir, "a", "hello")
	e := servertest.Start(t, `
default = true
listen = ["{{HTTP}}"]
request_id = true
[tls]
listen = ["{{HTTPS}}"]
[log]
enabled = true
path = "`+logPath+`"
format = "json"
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
`)
	runs := 0 // clients done so far: each adds four access log lines
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		resp, _ := c.Get(t, "/")
		id := resp.Header.Get("X-Request-Id")
		if id == "" {
			t.Fatal("no X-Request-Id")
		}
		// No trusted_proxies: a client's own id is replaced
		// (TestRequestIDFromTrustedProxyOnly).
		resp, _ = c.Get(t, "/", "X-Request-Id: from-client.42")
		if got := resp.Header.Get("X-Request-Id"); got == "from-client.42" || got == "" {
			t.Errorf("untrusted client's id: %q, want a new one", got)
		}
		resp, _ = c.Get(t, "/", "X-Request-Id: bad id with spaces")
		if got := resp.Header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
			t.Errorf("invalid incoming id: %q", got)
		}
		c.Get(t, "/nope?q=\"quoted\"", "User-Agent: evil\" \\x0a forged")
		runs++
		want := 4 * runs
		deadline := time.Now().Add(5 * time.Second)
		var lines []string
		for time.Now().Before(deadline) {
			data, _ := os.ReadFile(logPath)
			lines = strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) >= want {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(lines) != want {
			t.Fatalf("access log has %d lines, want %d: %q", len(lines), want, lines)
		}
		lines = lines[want-4:]
		var last map[string]any
		if err := json.Unmarshal([]byte(lines[3]), &last); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, lines[3])
		}
		if last["status"] != 404.0 || last["uri"] != `/nope?q="quoted"` || last["method"] != "GET" {
			t.Errorf("log fields: %v", last)
		}
		var first map[string]any
		json.Unmarshal([]byte(lines[0]), &first)
		if first["request_id"] != id {
			t.Errorf("request_id in log %v, header %s", first["request_id"], id)
		}
	})
}

// Oversized headers get 431 (RFC 6585), not a crash or a hang.
func TestHeaderLimits(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, siteFor(`"a.example"`, www(t, dir, "a", "ok"), true))
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		var hdr []string
		for i := 0; i < 8; i++ {
			hdr = append(hdr, "X-Big-"+string(rune('a'+i))+": "+strings.Repeat("x", 8<<10))
		}
		if c.Name == "h2" {
			// Arka advertises SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113
			// section 6.5.2); Go's client, once it has read the server's
			// SETTINGS, refuses to send such a request itself. Either way
			// the list never gets through: the client's refusal (it saw
			// the advertised limit) or Arka's 431 (it had not yet).
			req, _ := http.NewRequest(http.MethodGet, c.Base+"/", nil)
			for _, h := range hdr {
				k, v, _ := strings.Cut(h, ":")
				req.Header.Add(k, strings.TrimSpace(v))
			}
			resp, err := c.HTTP.Do(req)
			if err != nil {
				if !strings.Contains(err.Error(), "larger than peer's advertised limit") {
					t.Errorf("64 KiB of header fields over h2: %v", err)
				}
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 431 {
				t.Errorf("64 KiB of header fields over h2: %d", resp.StatusCode)
			}
			return
		}
		resp, _ := c.Get(t, "/", hdr...)
		if resp.StatusCode != 431 {
			t.Errorf("64 KiB of header fields: %d", resp.StatusCode)
		}
	})
}

func TestMaxBodySize(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[limits]
max_body_size = "1KiB"
[[routes]]
path = "/"
handler = { type = "static", root = "`+www(t, dir, "a", "ok")+`" }
`)
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		req, _ := http.NewRequest("POST", c.Base+"/", strings.NewReader(strings.Repeat("x", 2048)))
		resp, err := c.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Errorf("2 KiB body over a 1 KiB limit: %d", resp.StatusCode)
		}
	})
}

// At the connection limit, idle keep-alive connections make room.
func TestConnectionLimit(t *testing.T) {
	dir := t.TempDir()
	e := servertest.StartWith(t, server.Options{MaxConns: 3}, siteFor(`"a.example"`, www(t, dir, "a", "ok"), true))
	var idle []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", e.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"))
		buf := make([]byte, 4096)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, _ := c.Read(buf); !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
			t.Fatalf("connection %d: %q", i, buf[:n])
		}
		idle = append(idle, c)
	}
	// A fourth client is served: an idle connection was closed for it.
	h1c := e.Clients()[0]
	if resp, body := h1c.Get(t, "/", "Host: a.example"); resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("fourth client: %d", resp.StatusCode)
	}
	closed := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			closed++
		}
	}
	if closed == 0 {
		t.Errorf("no idle connection was closed to make room")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestClientGone499: a client that leaves before any response was written
// (here while PHP or a proxied upstream is still working) is logged 499,
// as nginx does, not 200, and counted as 4xx; over HTTP/1.1 (connection
// closed), HTTP/1.1 over TLS and HTTP/2 (RST_STREAM), for FastCGI
// (which sends ABORT_REQUEST) and the proxy.
func TestClientGone499(t *testing.T) {
	fpm := fpmtest.Start(t, fpmtest.Config{MaxChildren: 2})
	dir := t.TempDir()
	root := filepath.Join(dir, "php")
	fpmtest.WriteFiles(t, root, map[string]string{"app/slow.php": `<?php usleep(1500000); echo "late";`})
	released := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-released:
		case <-time.After(5 * time.Second):
		}
	}))
	defer close(released)
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
path = "/app/"
handler = { type = "fastcgi", address = "`+fpm.Address+`", root = "`+root+`" }
[[routes]]
path = "/up/"
handler = { type = "proxy", upstreams = ["`+up.Listener.Addr().String()+`"] }
`)
	paths := []string{"/app/slow.php", "/up/slow"}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, p := range paths {
			for _, method := range []string{"GET", "HEAD"} {
				ctx, cancel := context.WithCancel(context.Background())
				req, _ := http.NewRequestWithContext(ctx, method, c.Base+p, nil)
				req.Header.Set("Accept-Encoding", "zstd, br, gzip") // through the content-coding middleware
				time.AfterFunc(300*time.Millisecond, cancel)
				if resp, err := c.HTTP.Do(req); err == nil {
					resp.Body.Close()
					t.Fatalf("%s %s: answered %d before the client left", method, p, resp.StatusCode)
				}
				cancel()
			}
		}
	})
	want := 3 * 2 * len(paths) // clients x methods x paths
	wantLogged(t, flushedLog(t, e, logPath, want), 499)
	for _, rs := range e.Server.RouteStats() {
		if got := rs.Classes[3].Load(); got != uint64(want/len(paths)) || rs.Classes[1].Load() != 0 {
			t.Errorf("route %s: %d 4xx, %d 2xx; want %d 4xx", rs.Route, got, rs.Classes[1].Load(), want/len(paths))
		}
	}
}

// Plain HTTP sent to the TLS port gets a 400 that says why.
func TestPlainHTTPToTLSPort(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, siteFor(`"a.example"`, www(t, dir, "a", "ok"), true))
	c, err := net.Dial("tcp", e.HTTPS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.0 400 Bad Request") || !strings.Contains(string(b), "HTTPS") {
		t.Errorf("got %q", b)
	}
}

// TestALPN: every HTTP version Arka serves over TLS can be negotiated
// (RFC 7301; the "http/1.0" and "http/1.1" identifiers of its registry
// and "h2" of RFC 9113 section 3.2); a client offering only http/1.0
// (curl --http1.0) must not fail the handshake.
func TestALPN(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, siteFor(`"localhost"`, www(t, dir, "a", "site A"), true))
	cases := []struct {
		offer     []string
		negotiate string
		request   string
	}{
		{[]string{"http/1.0"}, "http/1.0", "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n"},
		{[]string{"http/1.1"}, "http/1.1", "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"},
		{[]string{"http/1.1", "http/1.0"}, "http/1.1", "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"},
		{nil, "", "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"},
	}
	for _, tc := range cases {
		conn, err := tls.Dial("tcp", e.HTTPS, &tls.Config{ServerName: "localhost", InsecureSkipVerify: true, NextProtos: tc.offer})
		if err != nil {
			t.Errorf("ALPN %q: %v", tc.offer, err)
			continue
		}
		if p := conn.ConnectionState().NegotiatedProtocol; p != tc.negotiate {
			t.Errorf("ALPN %q: negotiated %q, want %q", tc.offer, p, tc.negotiate)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		conn.Write([]byte(tc.request))
		b, _ := io.ReadAll(conn)
		conn.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.1 200 OK") || !strings.HasSuffix(string(b), "site A") {
			t.Errorf("ALPN %q: %q", tc.offer, b)
		}
	}
}

// TestBodyReadTimeout: a client that stops sending the body it announced,
// or sends it below the minimum rate without ever being silent for long,
// gets 408 (RFC 9110 section 15.5.9) from a proxy route after the body
// read limits ([global] body_timeout and body_min_rate), over HTTP/1.1 and
// HTTP/2 alike, rather than holding the connection (and an upstream
// connection) for ever. A reload that changes body_timeout takes effect:
// a silent body is then cut off after the new value, not the old one.
func TestBodyReadTimeout(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer up.Close()
	site := func(timeout string) string {
		return `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "proxy", upstreams = ["` + strings.TrimPrefix(up.URL, "http://") + `"] }
[global]
body_timeout = "` + timeout + `"
body_min_rate = "100B/s"
`
	}
	e := servertest.Start(t, site("300ms"))
	// post sends 3 bytes of a 1000-byte body, then a byte every 50 ms
	// (20 bytes/s, never 300 ms of silence) or nothing, and returns the
	// status and how long the answer took.
	post := func(t *testing.T, c *servertest.Client, trickle bool) (int, time.Duration) {
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte("abc"))
			for trickle {
				time.Sleep(50 * time.Millisecond)
				if _, err := pw.Write([]byte("x")); err != nil {
					return
				}
			}
		}()
		req, _ := http.NewRequest("POST", c.Base+"/upload", pr)
		req.ContentLength = 1000
		start := time.Now()
		resp, err := c.HTTP.Do(req)
		pw.CloseWithError(errors.New("done"))
		if err != nil {
			t.Fatalf("trickle %v: %v", trickle, err)
		}
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, trickle := range []bool{false, true} {
			code, took := post(t, c, trickle)
			if code != http.StatusRequestTimeout {
				t.Errorf("trickle %v: status %d, want 408", trickle, code)
			}
			if took > 3*time.Second {
				t.Errorf("trickle %v: answered after %v", trickle, took)
			}
		}
	})
	if err := e.Reload(0, site("1500ms")); err != nil {
		t.Fatal(err)
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		code, took := post(t, c, false)
		if code != http.StatusRequestTimeout || took < 1400*time.Millisecond || took > 4*time.Second {
			t.Errorf("after a reload to body_timeout = 1500ms: %d after %v, want 408 after about 1.5 s", code, took)
		}
	})
}

// The certificate is read when the server builds the sites (arka -t too),
// and a failure is located at tls.cert.
func TestCertificateErrorLocated(t *testing.T) {
	e := servertest.Start(t, siteFor(`"a.example"`, www(t, t.TempDir(), "a", "a"), true))
	src := strings.Replace(siteFor(`"a.example"`, "{{DIR}}", true), "[tls]\n", "[tls]\ncert = \"/nonexistent/c.pem\"\nkey = \"/nonexistent/k.pem\"\n", 1)
	err := e.Reload(0, src)
	if err == nil || !strings.Contains(err.Error(), "site0.toml:5:8: cannot load certificate /nonexistent/c.pem with key /nonexistent/k.pem: /nonexistent/c.pem: no such file or directory") {
		t.Fatalf("reload with a missing certificate: %v", err)
	}
}

// A problem of the key file is located at tls.key, one of the certificate
// at tls.cert; a key of another certificate at tls.key, naming the
// certificate's line. Each fails the reload and the old site keeps serving.
func TestCertificateKeyErrorsLocated(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, siteFor(`"a.example"`, www(t, dir, "a", "version 1"), true))
	cert, key := testkit.WriteCert(t, filepath.Join(dir, "good"), "a.example")
	_, otherKey := testkit.WriteCert(t, filepath.Join(dir, "other"), "a.example")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a PEM file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, c := range []struct{ name, cert, key, want string }{
		{"missing key", cert, missing,
			"site0.toml:6:7: cannot load key " + missing + " for certificate " + cert + ": " + missing + ": no such file or directory"},
		{"key not PEM", cert, notPEM,
			"site0.toml:6:7: cannot load key " + notPEM + " for certificate " + cert + ": failed to find any PEM data in key input"},
		{"key of another certificate", cert, otherKey,
			"site0.toml:6:7: key " + otherKey + " does not match certificate " + cert + " (line 5): private key does not match public key"},
		{"certificate not PEM", notPEM, key,
			"site0.toml:5:8: cannot load certificate " + notPEM + " with key " + key + ": failed to find any PEM data in certificate input"},
		{"missing certificate", missing, key,
			"site0.toml:5:8: cannot load certificate " + missing + " with key " + key + ": " + missing + ": no such file or directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(siteFor(`"a.example"`, "{{DIR}}", true), "[tls]\n", "[tls]\ncert = \""+c.cert+"\"\nkey = \""+c.key+"\"\n", 1)
			err := e.Reload(0, src)
			if err == nil {
				t.Fatal("reload succeeded")
			}
			if got := err.Error(); !strings.HasSuffix(got, c.want) || !strings.Contains(got, "/site0.toml:") {
				t.Errorf("reload error\n%s\nwant it to end with\n%s", got, c.want)
			}
			if _, b := e.Clients()[0].Get(t, "/"); string(b) != "version 1" {
				t.Errorf("after the failed reload: %q, want the old site's", b)
			}
		})
	}
}
