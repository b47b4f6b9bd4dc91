package server_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/tests/testkit"
)

// TestSelfSignedUnsaved: a site without a certificate whose generated
// self-signed one cannot be stored (the state directory is full or
// read-only; here its path runs through a regular file) is still served
// over TLS with a certificate made in memory, and the failure is logged,
// not a mistake that drops the site.
func TestSelfSignedUnsaved(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	plain, secure := servertest.FreeAddr(t), servertest.FreeAddr(t)
	site := filepath.Join(dir, "a.toml")
	src := `listen = ["` + plain + `"]
[tls]
listen = ["` + secure + `"]
[[routes]]
path = "/"
handler = { type = "respond", body = "served" }
`
	if err := os.WriteFile(site, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sites, err := config.LoadFiles([]string{site})
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []bool{false, true} {
		var log testkit.LogBuffer
		s := server.New(server.Options{StateDir: filepath.Join(blocker, "state"), KeepServing: keep,
			Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err := s.Apply(sites); err != nil {
			t.Fatalf("keep serving %v: apply: %v", keep, err)
		}
		c, err := tls.Dial("tcp", secure, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("keep serving %v: %v", keep, err)
		}
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.1 200") || !strings.HasSuffix(string(b), "served") {
			t.Errorf("keep serving %v: answer %q", keep, b)
		}
		if !strings.Contains(log.String(), "self-signed certificate could not be stored") {
			t.Errorf("keep serving %v: log says nothing of it:\n%s", keep, log.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.Shutdown(ctx)
		cancel()
	}
}
