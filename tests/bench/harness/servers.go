package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Tool is an external program the benchmark uses, with the Debian packages
// that bring it.
type Tool struct {
	Name     string   // as listed to the user
	Bins     []string // candidate executable names; the first found is used
	Files    []string // other files that must exist (modules)
	Packages []string // Debian packages that provide it all
	Required bool     // nothing can be measured without it
	Path     string   // set by Find
	Missing  []string // what Find did not find
}

// Tools returns the programs the benchmark needs.
func Tools() []*Tool {
	return []*Tool{
		{Name: "h2load", Bins: []string{"h2load"}, Packages: []string{"nghttp2-client"}, Required: true},
		{Name: "wrk", Bins: []string{"wrk"}, Packages: []string{"wrk"}, Required: true},
		{Name: "php-fpm", Bins: []string{"php-fpm", "php-fpm8.4", "php-fpm8.3", "php-fpm8.2", "php-fpm8.1"}, Packages: []string{"php-fpm"}},
		{Name: string(Nginx), Bins: []string{"nginx"},
			Files:    []string{"/usr/lib/nginx/modules/ngx_http_brotli_filter_module.so", "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so"},
			Packages: []string{"nginx", "libnginx-mod-http-brotli-filter", "libnginx-mod-http-brotli-static"}},
		{Name: string(Apache), Bins: []string{"apache2", "httpd"}, Files: []string{"/usr/lib/apache2/modules/mod_http2.so"}, Packages: []string{"apache2"}},
		{Name: string(Caddy), Bins: []string{"caddy"}, Packages: []string{"caddy"}},
		{Name: string(Lighttpd), Bins: []string{"lighttpd"},
			Files:    []string{"/usr/lib/lighttpd/mod_deflate.so", "/usr/lib/lighttpd/mod_openssl.so"},
			Packages: []string{"lighttpd", "lighttpd-mod-deflate", "lighttpd-mod-openssl"}},
	}
}

// sbinDirs are searched after $PATH: Debian puts servers in /usr/sbin,
// which is not in an unprivileged user's $PATH.
var sbinDirs = []string{"/usr/sbin", "/usr/local/sbin", "/sbin"}

// Find locates the tool; Missing lists what was not found.
func (t *Tool) Find() bool {
	t.Path, t.Missing = "", nil
	for _, b := range t.Bins {
		if p, err := exec.LookPath(b); err == nil {
			t.Path = p
			break
		}
		for _, d := range sbinDirs {
			p := filepath.Join(d, b)
			if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
				t.Path = p
				break
			}
		}
		if t.Path != "" {
			break
		}
	}
	if t.Path == "" {
		t.Missing = append(t.Missing, t.Bins[0])
	}
	for _, f := range t.Files {
		if _, err := os.Stat(f); err != nil {
			t.Missing = append(t.Missing, f)
		}
	}
	return len(t.Missing) == 0
}

// InstallLine is the one apt-get command that installs what is missing.
func InstallLine(missing []*Tool) string {
	var pkgs []string
	for _, t := range missing {
		for _, p := range t.Packages {
			if !slices.Contains(pkgs, p) {
				pkgs = append(pkgs, p)
			}
		}
	}
	if len(pkgs) == 0 {
		return ""
	}
	return "sudo apt-get install --no-install-recommends " + strings.Join(pkgs, " ")
}

// Proc is a server (or php-fpm pool, or upstream) the harness started.
type Proc struct {
	Name  string
	Cmd   *exec.Cmd
	Dir   string
	Log   string // its standard output and error
	exit  chan struct{}
	err   error
	ready []string // "tcp:127.0.0.1:port" or "unix:/path" that must accept
}

// Start starts a program in its own process group (so that stopping it
// stops its workers too), with its output in dir/output.log.
func Start(name string, dir string, env []string, ready []string, bin string, args ...string) (*Proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "output.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, Dir: dir, Log: logPath, exit: make(chan struct{}), ready: ready}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.exit)
	}()
	return p, nil
}

// Pid is the process id of the program (the root of its process tree).
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited reports whether the program has stopped.
func (p *Proc) Exited() bool {
	select {
	case <-p.exit:
		return true
	default:
		return false
	}
}

// WaitReady waits until every ready address accepts connections.
func (p *Proc) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, r := range p.ready {
		network, addr, _ := strings.Cut(r, ":")
		for {
			if p.Exited() {
				return fmt.Errorf("%s exited during start-up (%v):\n%s", p.Name, p.err, p.Tail(20))
			}
			c, err := net.DialTimeout(network, addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %s not accepting after %v: %v\n%s", p.Name, r, timeout, err, p.Tail(20))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// Tail returns the last n lines of the program's output and of the error
// logs in its directory.
func (p *Proc) Tail(n int) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(p.Dir, "*.log"))
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, strings.Join(lines, "\n"))
	}
	return b.String()
}

// Stop sends SIGTERM to the program's process group, and SIGKILL to it if
// it has not exited after a few seconds.
func (p *Proc) Stop() error {
	if p == nil || p.Exited() {
		return nil
	}
	pgid := p.Cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exit:
	case <-time.After(8 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exit
		return fmt.Errorf("%s did not stop on SIGTERM; killed", p.Name)
	}
	// Workers that outlive their master (none should) go with the group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// Version runs a program's version command and returns its first line.
func Version(ctx context.Context, bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1. They are free
// when returned; another program could take one before the server binds
// it, which the start-up check then reports.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
