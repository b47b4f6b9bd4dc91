package phpfpm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/server/status"
	"github.com/arkaweb/arka/tests/fpmtest"
	"github.com/arkaweb/arka/tests/testkit"
)

// tempDir is t.TempDir made reachable for the workers' user (nobody when
// the test runs as root): MkdirTemp creates 0700 directories.
func tempDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	os.Chmod(d, 0o755)
	os.Chmod(filepath.Dir(d), 0o755)
	return d
}

func startFPM(t *testing.T, c Config) (*Supervisor, *testkit.LogBuffer) {
	t.Helper()
	bin, err := fpmtest.Binary()
	if err != nil {
		t.Skip(err)
	}
	c.FPM = bin
	if c.Dir == "" {
		c.Dir = filepath.Join(tempDir(t), "state", "php")
	}
	if c.UID == 0 && !c.AllowRoot {
		c.UID, c.GID = NobodyID, NobodyID
	}
	logs := &testkit.LogBuffer{}
	s, err := New(c, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop(context.Background())
		if t.Failed() {
			t.Logf("supervisor log:\n%s", logs)
		}
	})
	return s, logs
}

// pidsInGroup lists the processes in process group pgid, from /proc.
func pidsInGroup(pgid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 2 && f[0] != "Z" { // zombies are dead, only not yet reaped by their new parent
			if g, _ := strconv.Atoi(f[2]); g == pgid {
				out = append(out, pid)
			}
		}
	}
	return out
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serve runs an Arka server (package server, as cmd/arka does) whose
// only route sends requests under root to the pool: a fastcgi route with
// address "php", the php-fpm Arka runs itself. It returns the server's
// plain HTTP URL.
func serve(t *testing.T, s *Supervisor, root string) string {
	t.Helper()
	e := servertest.StartWith(t, server.Options{PHP: pool{s}}, `default = true
listen = ["{{HTTP}}"]
[[routes]]
path = "/"
handler = { type = "fastcgi", address = "php", root = "`+root+`" }
`)
	return "http://" + e.HTTP
}

// pool is the Supervisor as the server sees it (cmd/arka's adapter also
// converts the pool's status; the tests here do not read it).
type pool struct{ s *Supervisor }

func (p pool) Address() string             { return p.s.Address() }
func (p pool) MaxChildren() int            { return p.s.MaxChildren() }
func (p pool) Status() []status.PHPFPMPool { return nil }

// Arka's php-fpm serves a page as an unprivileged user with PHP's state
// in the data directory, survives kill -9 (the request in flight fails
// with 502, php-fpm comes back, later requests succeed), and leaves no
// process or socket behind when stopped.
func TestServeKillRestartStop(t *testing.T) {
	root := tempDir(t)
	fpmtest.WriteFiles(t, root, map[string]string{
		"index.php": `<?php session_start(); $_SESSION["n"] = 1; echo "hello from ", PHP_VERSION, " uid=", posix_geteuid(), " data=", getenv("ARKA_PHP_DATA"), " sessions=", session_save_path(), " opcache=", (int)function_exists("opcache_get_status"), "\n";`,
		"sleep.php": `<?php echo "start\n"; sleep(30); echo "end\n";`,
		"fail.php":  `<?php error_log("custom error line"); echo "ok";`,
	})
	s, logs := startFPM(t, Config{PM: board.PMStatic, MaxChildren: 2, MaxRequests: 100, OpcacheMiB: 16, SlowlogTimeout: time.Second})
	base := serve(t, s, root)

	code, body := get(t, base+"/index.php")
	if code != 200 || !strings.HasPrefix(body, "hello from 8.") {
		t.Fatalf("GET /index.php: %d %q", code, body)
	}
	data := s.Config().DataDir
	if !strings.Contains(body, " data="+data+" ") || !strings.Contains(body, " sessions="+filepath.Join(data, "sessions")) {
		t.Errorf("PHP's state is not in the data directory %s: %q", data, body)
	}
	if os.Geteuid() == 0 && !strings.Contains(body, fmt.Sprintf("uid=%d ", NobodyID)) {
		t.Errorf("workers do not run as nobody: %q", body)
	}
	if sess, _ := filepath.Glob(filepath.Join(data, "sessions", "sess_*")); len(sess) != 1 {
		t.Errorf("session files: %v", sess)
	}
	if code, _ := get(t, base+"/fail.php"); code != 200 {
		t.Errorf("fail.php: %d", code)
	}

	p, err := s.Pool()
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if p.Name != PoolName || p.ProcessManager != "static" || p.TotalProcesses < 2 {
		t.Errorf("status: %+v", p)
	}
	if s.MaxChildren() != 2 {
		t.Errorf("MaxChildren() = %d, want 2", s.MaxChildren())
	}

	// kill -9 of php-fpm's master while a request runs.
	pid := s.Pid()
	inflight := make(chan int, 1)
	go func() {
		resp, err := http.Get(base + "/sleep.php")
		if err != nil {
			inflight <- -1
			return
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		inflight <- resp.StatusCode
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.status.mu.Lock()
		s.status.at = time.Time{} // no cached reading
		s.status.mu.Unlock()
		if p, err := s.Pool(); err == nil && p.ActiveProcesses >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sleep.php did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-inflight:
		// The CGI header was not sent yet (output is buffered), so the
		// handler can still answer 502.
		if code != http.StatusBadGateway {
			t.Errorf("request in flight during kill -9: %d, want 502", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request in flight did not end after kill -9")
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/index.php")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("php-fpm did not come back after kill -9")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s.Restarts() != 1 || s.Pid() == pid || s.Pid() == 0 {
		t.Errorf("restarts %d, pid %d (was %d)", s.Restarts(), s.Pid(), pid)
	}
	if left := pidsInGroup(pid); len(left) > 0 {
		t.Errorf("processes of the killed php-fpm still run: %v", left)
	}
	if !strings.Contains(logs.String(), "php-fpm exited; restarting") || !strings.Contains(logs.String(), "custom error line") {
		t.Errorf("the log lacks the restart or the worker's error_log line:\n%s", logs)
	}

	// Stop: no socket, no process.
	pid = s.Pid()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := pidsInGroup(pid); len(left) > 0 {
		t.Errorf("processes left after Stop: %v", left)
	}
	for _, p := range []string{s.c.socket(), s.c.statusSock(), s.c.pidFile()} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists after Stop (%v)", p, err)
		}
	}
	if code, _ := get(t, base+"/index.php"); code != http.StatusBadGateway {
		t.Errorf("after Stop: %d, want 502", code)
	}
}

// A setting php-fpm rejects makes Start fail with php-fpm's own words.
func TestStartError(t *testing.T) {
	bin, err := fpmtest.Binary()
	if err != nil {
		t.Skip(err)
	}
	dir := filepath.Join(tempDir(t), "php")
	s, err := New(Config{FPM: bin, Dir: dir, UID: NobodyID, GID: NobodyID, MaxChildren: 1, INI: map[string]string{"extension": "/nonexistent/ext.so"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// An unknown pool setting makes php-fpm refuse its configuration.
	os.WriteFile(s.c.confFile(), []byte(s.fpm+"pm.bogus = 1\n"), 0o644)
	err = s.Start()
	defer s.Stop(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited at start") || !strings.Contains(err.Error(), "pm.bogus") {
		t.Errorf("Start: %v", err)
	}
}
