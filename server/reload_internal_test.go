package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
)

// A reload retires the old table when its last request ends: not before
// (the request finishes on the handlers it started on, and its access-log
// line is written to the log file the old configuration named), and not
// seconds later.
func TestReloadRetiresTableWithLastRequest(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, "slow answer")
	}))
	defer up.Close()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	site := func(logName string) []*config.Site {
		t.Helper()
		f := filepath.Join(dir, "site.toml")
		src := `listen = ["` + addr + `"]
[log]
enabled = true
path = "` + filepath.Join(dir, logName) + `"
[[routes]]
path = "/"
handler = { type = "proxy", upstreams = ["` + up.Listener.Addr().String() + `"] }
`
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		sites, err := config.LoadFiles([]string{f})
		if err != nil {
			t.Fatal(err)
		}
		return sites
	}
	s := New(Options{StateDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	if err := s.Apply(site("one.log")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{string(b), err}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not reach the upstream")
	}
	s.mu.Lock()
	old := s.table
	s.mu.Unlock()
	if err := s.Apply(site("two.log")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.closed:
		t.Fatal("the old table was closed while a request still ran on it")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	r := <-done
	if r.err != nil || r.body != "slow answer" {
		t.Fatalf("request across the reload: %q, %v", r.body, r.err)
	}
	select {
	case <-old.closed:
	case <-time.After(time.Second):
		t.Fatal("the old table was not closed within 1 s of its last request")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "one.log"))
	if !strings.Contains(string(b), "GET /slow") {
		t.Errorf("the request is missing from the old configuration's access log: %q", b)
	}
}
