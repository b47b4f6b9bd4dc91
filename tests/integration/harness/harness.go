// Package harness runs the real arka binary for integration tests: build
// it, pick free loopback addresses, start it, wait for it and stop it.
// Every helper cleans up after the test that called it.
package harness

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RepoRoot returns the repository's root: the nearest directory above the
// working directory that holds go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("harness: no go.mod above the working directory")
		}
		dir = parent
	}
}

// BuildArka builds cmd/arka into the test's temporary directory and returns
// the binary's path. The Go build cache makes repeated builds cheap.
func BuildArka(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "arka")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/arka")
	cmd.Dir = RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("harness: building arka: %v\n%s", err, out)
	}
	return bin
}

// FreeAddr returns a loopback "127.0.0.1:port" that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Run runs bin to completion (bounded by a minute) and returns its
// combined output and exit code.
func Run(t testing.TB, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("harness: running %s: %v", bin, err)
	return "", -1
}

// Proc is a running program whose output is collected.
type Proc struct {
	cmd  *exec.Cmd
	out  *lines
	done chan struct{}
}

// Start runs bin with args in the background. It is stopped with SIGTERM
// (then SIGKILL after 10 s) when the test ends.
func Start(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{cmd: exec.Command(bin, args...), out: &lines{changed: make(chan struct{})}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("harness: starting %s: %v", bin, err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("output of %s:\n%s", filepath.Base(bin), p.Output())
		}
	})
	return p
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after 10 s).
func (p *Proc) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// Output returns everything the process wrote so far.
func (p *Proc) Output() string { return p.out.String() }

// WaitFor waits until the output contains s, failing the test if the
// process exits or timeout passes first.
func (p *Proc) WaitFor(t testing.TB, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		ch := p.out.wait()
		if strings.Contains(p.out.String(), s) {
			return
		}
		select {
		case <-ch:
		case <-p.done:
			if strings.Contains(p.out.String(), s) {
				return
			}
			t.Fatalf("harness: process exited before printing %q:\n%s", s, p.out.String())
		case <-deadline:
			t.Fatalf("harness: %q not printed within %v:\n%s", s, timeout, p.out.String())
		}
	}
}

// lines is a concurrency-safe output buffer that signals each write.
type lines struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// wait returns a channel closed at the next write.
func (l *lines) wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}
