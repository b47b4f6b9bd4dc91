//go:build unix

// Package fpmtest runs a real php-fpm for tests: its own master process
// with a generated pool config, listening on a temporary unix socket or a
// free loopback TCP port, logging to a file in the test's temporary
// directory, stopped when the test ends.
//
// Tests skip, with a message saying so, when no php-fpm binary is
// installed (Debian: apt-get install php-fpm).
package fpmtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/tests/testkit"
)

// Binary returns the path of a php-fpm binary: php-fpm or php-fpmX.Y in
// PATH, else in /usr/sbin or /usr/local/sbin.
func Binary() (string, error) {
	if p, err := exec.LookPath("php-fpm"); err == nil {
		return p, nil
	}
	dirs := filepath.SplitList(os.Getenv("PATH"))
	dirs = append(dirs, "/usr/sbin", "/usr/local/sbin")
	var found []string
	for _, d := range dirs {
		m, _ := filepath.Glob(filepath.Join(d, "php-fpm*"))
		for _, p := range m {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				found = append(found, p)
			}
		}
	}
	if len(found) == 0 {
		return "", errors.New("php-fpm is not installed (looked for php-fpm* in PATH, /usr/sbin and /usr/local/sbin; Debian: apt-get install php-fpm)")
	}
	sort.Strings(found)
	return found[len(found)-1], nil // the newest version
}

// Config is the pool of a test php-fpm.
type Config struct {
	// MaxChildren is pm.max_children of a static pool; default 4.
	MaxChildren int
	// MaxRequests is pm.max_requests: a worker exits after that many
	// requests (and closes its connection). 0 means never.
	MaxRequests int
	// TCP listens on a free 127.0.0.1 port instead of a unix socket.
	TCP bool
	// PHP sets php.ini values for the pool (php_admin_value).
	PHP map[string]string
	// PM is the process manager: "static" (the default), "dynamic" or
	// "ondemand". Dynamic starts min(2, MaxChildren) workers and keeps 1 to
	// MaxChildren spare; ondemand forks a worker when a connection waits.
	PM string
	// ProcessControlTimeout is php-fpm's process_control_timeout: how long
	// workers get to finish after the master's SIGQUIT before SIGTERM.
	// Zero leaves php-fpm's default (0: no wait).
	ProcessControlTimeout time.Duration
}

// FPM is a running php-fpm master.
type FPM struct {
	// Address is the listen address in Arka's form: "unix:/path.sock" or
	// "127.0.0.1:port".
	Address string
	// Dir holds the config, the socket and the logs.
	Dir string
	// ErrorLog is php-fpm's own log (with workers' output).
	ErrorLog string

	t    testing.TB
	bin  string
	conf string
	sock string // unix socket path, or ""
	tcp  string // host:port, or ""

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs php-fpm with cfg and stops it when the test ends. It skips
// the test when php-fpm is not installed and fails it when php-fpm does not
// come up within 10 seconds.
func Start(t testing.TB, cfg Config) *FPM {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Skip(err.Error())
	}
	dir, err := os.MkdirTemp("", "fpm") // short: unix socket paths are limited to 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &FPM{t: t, bin: bin, Dir: dir, ErrorLog: filepath.Join(dir, "error.log")}
	if cfg.TCP {
		f.tcp = testkit.FreeAddr(t)
		f.Address = f.tcp
	} else {
		f.sock = filepath.Join(dir, "php.sock")
		f.Address = "unix:" + f.sock
	}
	f.conf = filepath.Join(dir, "php-fpm.conf")
	if err := os.WriteFile(f.conf, []byte(f.config(cfg)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	f.start()
	return f
}

func (f *FPM) config(cfg Config) string {
	children := cfg.MaxChildren
	if children <= 0 {
		children = 4
	}
	listen := f.sock
	if f.tcp != "" {
		listen = f.tcp
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[global]\npid = %s\nerror_log = %s\ndaemonize = no\nlog_level = notice\n",
		filepath.Join(f.Dir, "php-fpm.pid"), f.ErrorLog)
	if cfg.ProcessControlTimeout > 0 {
		fmt.Fprintf(&b, "process_control_timeout = %ds\n", max(1, int(cfg.ProcessControlTimeout.Seconds())))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "[test]\nlisten = %s\nlisten.backlog = 511\n", listen)
	if os.Geteuid() == 0 {
		b.WriteString("user = root\ngroup = root\n")
	}
	switch cfg.PM {
	case "", "static":
		b.WriteString("pm = static\n")
	case "dynamic":
		start := min(2, children)
		fmt.Fprintf(&b, "pm = dynamic\npm.start_servers = %d\npm.min_spare_servers = 1\npm.max_spare_servers = %d\n", start, children)
	case "ondemand":
		b.WriteString("pm = ondemand\npm.process_idle_timeout = 10s\n")
	default:
		panic("fpmtest: unknown pm " + cfg.PM)
	}
	fmt.Fprintf(&b, "pm.max_children = %d\npm.max_requests = %d\n", children, cfg.MaxRequests)
	b.WriteString("catch_workers_output = yes\ndecorate_workers_output = no\n")
	b.WriteString("php_admin_flag[display_errors] = off\nphp_admin_flag[log_errors] = on\n")
	php := map[string]string{"post_max_size": "256M", "upload_max_filesize": "256M", "memory_limit": "256M"}
	for k, v := range cfg.PHP {
		php[k] = v
	}
	keys := make([]string, 0, len(php))
	for k := range php {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "php_admin_value[%s] = %s\n", k, php[k])
	}
	return b.String()
}

func (f *FPM) start() {
	f.t.Helper()
	if f.sock != "" {
		os.Remove(f.sock) // a killed master leaves its socket behind
	}
	args := []string{"-F", "-n", "-y", f.conf, "-p", f.Dir}
	if os.Geteuid() == 0 {
		args = append(args, "-R")
	}
	cmd := exec.Command(f.bin, args...)
	out, err := os.OpenFile(filepath.Join(f.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f.t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// A process group of its own, so a kill takes the workers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.t.Fatalf("start php-fpm: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	f.mu.Lock()
	f.cmd, f.done = cmd, done
	f.mu.Unlock()

	network, addr := "unix", f.sock
	if f.tcp != "" {
		network, addr = "tcp", f.tcp
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout(network, addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			f.t.Fatalf("php-fpm exited at start: %s", f.Log())
		default:
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("php-fpm did not listen on %s within 10s: %v\n%s", f.Address, err, f.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill ends the master and its workers at once with SIGKILL, as a crash
// would: connections close under requests in flight.
func (f *FPM) Kill() { f.signal(syscall.SIGKILL) }

// Stop ends php-fpm (SIGTERM, then SIGKILL after 5 seconds) and waits.
// Idempotent.
func (f *FPM) Stop() { f.signal(syscall.SIGTERM) }

// Quit ends php-fpm gracefully, as a service manager's stop or an
// administrator's kill -QUIT does: the master gets SIGQUIT, passes it to
// its workers, waits for them (process_control_timeout, then SIGTERM and
// SIGKILL) and exits. Quit waits for the master up to 30 seconds, then
// kills the group. Idempotent.
func (f *FPM) Quit() { f.signalWait(syscall.SIGQUIT, 30*time.Second) }

func (f *FPM) signal(sig syscall.Signal) { f.signalWait(sig, 5*time.Second) }

func (f *FPM) signalWait(sig syscall.Signal, wait time.Duration) {
	f.mu.Lock()
	cmd, done := f.cmd, f.done
	f.cmd = nil
	f.mu.Unlock()
	if cmd == nil {
		return
	}
	pgid := cmd.Process.Pid
	if sig == syscall.SIGKILL {
		syscall.Kill(-pgid, syscall.SIGKILL)
	} else {
		cmd.Process.Signal(sig)
	}
	select {
	case <-done:
	case <-time.After(wait):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	// Workers left behind by a master that died first.
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// Restart starts php-fpm again, on the same address, after Kill, Stop or
// Quit (if it still runs, it is stopped first).
func (f *FPM) Restart() {
	f.t.Helper()
	f.Stop()
	f.start()
}

// Log returns php-fpm's error log and output so far.
func (f *FPM) Log() string {
	a, _ := os.ReadFile(f.ErrorLog)
	b, _ := os.ReadFile(filepath.Join(f.Dir, "stdout.log"))
	return string(a) + string(b)
}

// WriteFiles writes files (path relative to root -> content) under root,
// creating directories.
func WriteFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
