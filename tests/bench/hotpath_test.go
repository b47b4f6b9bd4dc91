package bench

// Hot-path benchmarks: Arka's server runs in this process on loopback, and
// the clients, the proxy upstream and the FastCGI responder here allocate
// nothing per request once warm, so that -benchmem's allocs/op and B/op
// are Arka's own. Run with
//
//	go test -run '^$' -bench . -benchmem ./tests/bench
//
// Proxy and FastCGI benchmarks skip, saying so, while `arka -t` would
// reject those handler types ("not implemented yet").

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/tests/bench/harness"
)

// fixture is the benchmark content written once per test binary: the
// document root with precompressed siblings and a certificate.
type fixture struct {
	dir, www, cert, key string
	content             *harness.Content
}

var getFixture = sync.OnceValues(func() (*fixture, error) {
	dir, err := os.MkdirTemp("", "arka-hotpath-")
	if err != nil {
		return nil, err
	}
	f := &fixture{dir: dir, www: filepath.Join(dir, "www"), cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem"), content: harness.NewContent()}
	if err := f.content.WriteWWW(f.www); err != nil {
		return nil, err
	}
	if err := harness.WriteCert(f.cert, f.key); err != nil {
		return nil, err
	}
	return f, nil
})

// arka starts an in-process Arka with the given routes (TOML [[routes]]
// tables) on free loopback ports and returns its plain and TLS addresses.
// It skips the benchmark when the server rejects a handler type as not
// implemented yet.
func arka(b *testing.B, routes string) (plain, secure string) {
	b.Helper()
	f, err := getFixture()
	if err != nil {
		b.Fatal(err)
	}
	ports, err := harness.FreePorts(2)
	if err != nil {
		b.Fatal(err)
	}
	plain, secure = fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	site := fmt.Sprintf(`listen = [%q]
[tls]
listen = [%q]
cert = %q
key = %q
[log]
enabled = false
[compression]
enabled = true
min_size = "512B"
%s`, plain, secure, f.cert, f.key, routes)
	dir := b.TempDir()
	file := filepath.Join(dir, "site.toml")
	if err := os.WriteFile(file, []byte(site), 0o644); err != nil {
		b.Fatal(err)
	}
	sites, err := config.Load(file)
	if err != nil {
		b.Fatal(err)
	}
	srv := server.New(server.Options{StateDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := srv.Check(sites); err != nil {
		if strings.Contains(err.Error(), "not implemented yet") {
			b.Skipf("arka does not implement this handler yet: %v", err)
		}
		b.Fatal(err)
	}
	if err := srv.Apply(sites); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return plain, secure
}

func staticRoute() string {
	f, _ := getFixture()
	return fmt.Sprintf("[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = %q }\n", f.www)
}

// get runs b.N requests over HTTP/1.1 keep-alive connections (one per
// parallel goroutine) and checks every answer's status and body length.
func get(b *testing.B, addr string, useTLS bool, path string, header string, wantLen int) {
	b.Helper()
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: bench.local\r\n" + header + "\r\n")
	// One warm-up request (caches, compressed variants), outside timing.
	c, err := dial(addr, useTLS)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := c.do(req); err != nil {
		b.Fatal(err)
	}
	c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c, err := dial(addr, useTLS)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		for pb.Next() {
			status, n, err := c.do(req)
			if err != nil {
				b.Error(err)
				return
			}
			if status != 200 || (wantLen >= 0 && n != wantLen) {
				b.Errorf("status %d, %d body bytes; want 200, %d", status, n, wantLen)
				return
			}
		}
	})
}

// BenchmarkStaticSmall: the 1.3 KB page, no content coding.
func BenchmarkStaticSmall(b *testing.B) {
	plain, secure := arka(b, staticRoute())
	f, _ := getFixture()
	b.Run("http", func(b *testing.B) { get(b, plain, false, harness.PagePath, "", len(f.content.Page)) })
	b.Run("https", func(b *testing.B) { get(b, secure, true, harness.PagePath, "", len(f.content.Page)) })
	b.Run("h2", func(b *testing.B) { getH2(b, secure, harness.PagePath, "", len(f.content.Page)) })
}

// BenchmarkStaticPrecompressed: the page and the 285 KB script, answered
// with their .br siblings.
func BenchmarkStaticPrecompressed(b *testing.B) {
	plain, secure := arka(b, staticRoute())
	f, _ := getFixture()
	ae := "Accept-Encoding: " + harness.BrowserAcceptEncoding + "\r\n"
	page, script := len(f.content.Sibling(harness.PagePath, "br")), len(f.content.Sibling(harness.ScriptPath, "br"))
	b.Run("page/http", func(b *testing.B) { get(b, plain, false, harness.PagePath, ae, page) })
	b.Run("page/h2", func(b *testing.B) { getH2(b, secure, harness.PagePath, harness.BrowserAcceptEncoding, page) })
	b.Run("script/http", func(b *testing.B) { get(b, plain, false, harness.ScriptPath, ae, script) })
	b.Run("script/h2", func(b *testing.B) { getH2(b, secure, harness.ScriptPath, harness.BrowserAcceptEncoding, script) })
}

// BenchmarkStaticLarge: the 1 MiB file (sendfile over plain HTTP).
func BenchmarkStaticLarge(b *testing.B) {
	plain, secure := arka(b, staticRoute())
	f, _ := getFixture()
	n := len(f.content.Binary)
	b.Run("http", func(b *testing.B) { b.SetBytes(int64(n)); get(b, plain, false, harness.BinaryPath, "", n) })
	b.Run("h2", func(b *testing.B) { b.SetBytes(int64(n)); getH2(b, secure, harness.BinaryPath, "", n) })
}

// BenchmarkProxy: small and 30 KB answers from an upstream that allocates
// nothing; plain HTTP/1.1, and 30 KB compressed for a browser (zstd).
func BenchmarkProxy(b *testing.B) {
	f, err := getFixture()
	if err != nil {
		b.Fatal(err)
	}
	up := rawUpstream(b, f.content)
	plain, secure := arka(b, fmt.Sprintf("[[routes]]\npath = \"/proxy/\"\nhandler = { type = \"proxy\", upstreams = [%q], strip_prefix = true, forward_headers = false }\n", up))
	b.Run("small/http", func(b *testing.B) { get(b, plain, false, "/proxy/small", "", len(f.content.Small)) })
	b.Run("30k/http", func(b *testing.B) { get(b, plain, false, "/proxy/30k", "", len(f.content.Big)) })
	b.Run("30k/https", func(b *testing.B) { get(b, secure, true, "/proxy/30k", "", len(f.content.Big)) })
	b.Run("30k/h2", func(b *testing.B) { getH2(b, secure, "/proxy/30k", "", len(f.content.Big)) })
	b.Run("30k-zstd/http", func(b *testing.B) {
		get(b, plain, false, "/proxy/30k", "Accept-Encoding: "+harness.BrowserAcceptEncoding+"\r\n", -1)
	})
}

// BenchmarkFastCGI: the tiny script and the 25 KB page from a FastCGI
// responder that allocates nothing (it answers without running PHP), and
// the page compressed for a browser (zstd).
func BenchmarkFastCGI(b *testing.B) {
	f, err := getFixture()
	if err != nil {
		b.Fatal(err)
	}
	sock := fastcgiResponder(b, f.content)
	plain, _ := arka(b, fmt.Sprintf("[[routes]]\npath = \"/app/\"\nhandler = { type = \"fastcgi\", address = \"unix:%s\", root = %q, max_conns = 8 }\n", sock, f.www))
	b.Run("tiny", func(b *testing.B) { get(b, plain, false, harness.PHPTinyPath, "", len(f.content.PHPTiny)) })
	b.Run("page", func(b *testing.B) { get(b, plain, false, harness.PHPPagePath, "", len(f.content.PHPPage)) })
	b.Run("page-zstd", func(b *testing.B) {
		get(b, plain, false, harness.PHPPagePath, "Accept-Encoding: "+harness.BrowserAcceptEncoding+"\r\n", -1)
	})
}

// conn is an HTTP/1.1 client connection that reuses its buffers.
type conn struct {
	net.Conn
	br *bufio.Reader
}

func dial(addr string, useTLS bool) (*conn, error) {
	var c net.Conn
	var err error
	if useTLS {
		c, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, br: bufio.NewReaderSize(c, 64<<10)}, nil
}

// do sends a request and reads the response, returning the status and the
// body's length (Content-Length or chunked), without allocating.
func (c *conn) do(req []byte) (status, n int, err error) {
	if _, err := c.Write(req); err != nil {
		return 0, 0, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, 0, fmt.Errorf("bad status line %q", line)
	}
	status = atoi(line[9:12])
	clen, chunked := -1, false
	for {
		h, err := c.br.ReadSlice('\n')
		if err != nil {
			return 0, 0, err
		}
		if len(h) <= 2 {
			break
		}
		if hasPrefixFold(h, "content-length:") {
			clen = atoi(bytes.TrimSpace(h[len("content-length:"):]))
		} else if hasPrefixFold(h, "transfer-encoding:") && bytes.Contains(h, []byte("chunked")) {
			chunked = true
		}
	}
	switch {
	case chunked:
		for {
			sz, err := c.br.ReadSlice('\n')
			if err != nil {
				return 0, 0, err
			}
			k := hexatoi(bytes.TrimSpace(sz))
			if k == 0 {
				for { // trailer section
					t, err := c.br.ReadSlice('\n')
					if err != nil {
						return 0, 0, err
					}
					if len(t) <= 2 {
						return status, n, nil
					}
				}
			}
			if _, err := c.br.Discard(k + 2); err != nil {
				return 0, 0, err
			}
			n += k
		}
	case clen >= 0:
		_, err = c.br.Discard(clen)
		return status, clen, err
	}
	return 0, 0, errors.New("response without Content-Length or chunked body")
}

func hasPrefixFold(b []byte, p string) bool {
	if len(b) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func hexatoi(b []byte) int {
	n := 0
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			n = n*16 + int(c-'0')
		case 'a' <= c && c <= 'f':
			n = n*16 + int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			n = n*16 + int(c-'A'+10)
		default:
			return n
		}
	}
	return n
}

// rawUpstream serves /small and /30k over keep-alive HTTP/1.1 from
// prebuilt responses, and returns its address.
func rawUpstream(b *testing.B, c *harness.Content) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	resp := func(body []byte) []byte {
		return append(fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n", len(body)), body...)
	}
	small, big := resp(c.Small), resp(c.Big)
	var wg sync.WaitGroup
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				br := bufio.NewReaderSize(nc, 16<<10)
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					out := small
					if bytes.Contains(line, []byte("/30k")) {
						out = big
					}
					for {
						h, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(h) <= 2 {
							break
						}
					}
					if _, err := nc.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// FastCGI record types (FastCGI specification, section 8).
const (
	fcgiBeginRequest = 1
	fcgiEndRequest   = 3
	fcgiParams       = 4
	fcgiStdin        = 5
	fcgiStdout       = 6
)

// fastcgiResponder is a FastCGI responder on a unix socket: for each
// request it answers the tiny script's or the page's output (chosen by
// SCRIPT_FILENAME), honoring FCGI_KEEP_CONN. It returns the socket path.
func fastcgiResponder(b *testing.B, c *harness.Content) string {
	b.Helper()
	sock := filepath.Join(b.TempDir(), "fcgi.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	stdout := func(body []byte) []byte {
		return append([]byte("Content-Type: text/html; charset=UTF-8\r\n\r\n"), body...)
	}
	tiny, page := stdout(c.PHPTiny), stdout(c.PHPPage)
	var wg sync.WaitGroup
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				serveFastCGI(nc, tiny, page)
			}()
		}
	}()
	return sock
}

func serveFastCGI(nc net.Conn, tiny, page []byte) {
	br := bufio.NewReaderSize(nc, 64<<10)
	var hdr [8]byte
	content := make([]byte, 65535+255)
	out := make([]byte, 0, 64<<10)
	var keep, isPage bool
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		typ, id := hdr[1], binary.BigEndian.Uint16(hdr[2:])
		clen, plen := int(binary.BigEndian.Uint16(hdr[4:])), int(hdr[6])
		body := content[:clen+plen]
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		body = body[:clen]
		switch typ {
		case fcgiBeginRequest:
			keep = clen >= 3 && body[2]&1 != 0
			isPage = false
		case fcgiParams:
			if bytes.Contains(body, []byte("page.php")) {
				isPage = true
			}
		case fcgiStdin:
			if clen > 0 {
				continue
			}
			resp := tiny
			if isPage {
				resp = page
			}
			out = out[:0]
			for len(resp) > 0 {
				n := min(len(resp), 65535)
				out = appendRecord(out, fcgiStdout, id, resp[:n])
				resp = resp[n:]
			}
			out = appendRecord(out, fcgiStdout, id, nil)
			// END_REQUEST: appStatus 0, protocolStatus FCGI_REQUEST_COMPLETE.
			out = appendRecord(out, fcgiEndRequest, id, []byte{0, 0, 0, 0, 0, 0, 0, 0})
			if _, err := nc.Write(out); err != nil {
				return
			}
			if !keep {
				return
			}
		}
	}
}

func appendRecord(out []byte, typ byte, id uint16, data []byte) []byte {
	out = append(out, 1, typ, byte(id>>8), byte(id), byte(len(data)>>8), byte(len(data)), 0, 0)
	return append(out, data...)
}
