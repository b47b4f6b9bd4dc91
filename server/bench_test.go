package server_test

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

// BenchmarkServeStaticH1 measures a whole request through the engine
// (Arka's HTTP/1.1, package h1), the dispatcher and the static handler over loopback
// HTTP/1.1 keep-alive, with a client that allocates nothing per request.
// allocs/op is the server's allocations per request.
func BenchmarkServeStaticH1(b *testing.B) {
	dir := b.TempDir()
	root := filepath.Join(dir, "www")
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(root, "index.html"), []byte(strings.Repeat("x", 1500)), 0o644)
	e := servertest.Start(b, `default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+root+`" }
`)
	c, err := net.Dial("tcp", e.HTTP)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /index.html HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
	br := bufio.NewReaderSize(c, 64<<10)
	one := func() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		n := -1
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if len(line) <= 2 {
				break
			}
			if len(line) > 16 && string(line[:16]) == "Content-Length: " {
				n, _ = strconv.Atoi(string(line[16 : len(line)-2]))
			}
		}
		if _, err := br.Discard(n); err != nil {
			b.Fatal(err)
		}
	}
	one()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		one()
	}
}

var _ = io.Discard
