// Package harness builds the real arka binary once per test binary and runs
// it as a user would: with a site file, a state directory, signals. Tests
// in tests/integration use it; other packages' integration tests may too.
package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/tests/testkit"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// repoRoot finds the module root from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Binary builds cmd/arka (once per test process) and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "arka-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "arka")
		cmd := exec.Command("go", "build", "-o", binPath, "-ldflags", "-X github.com/arkaweb/arka/server.Version=test", "./cmd/arka")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/arka: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// FreeAddr returns a loopback address with a port free right now, for
// the arka process to bind (see testkit.FreeAddr).
func FreeAddr(t testing.TB) string {
	t.Helper()
	return testkit.FreeAddr(t)
}

// Run runs arka with args to completion and returns its exit code and
// combined output.
func Run(t testing.TB, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// Proc is a running arka.
type Proc struct {
	Cmd    *exec.Cmd
	output *testkit.LogBuffer
	done   chan struct{}
	err    error
}

// Output returns what arka printed so far (stdout and stderr).
func (p *Proc) Output() string { return p.output.String() }

// Start starts arka with args and waits until every address in waitFor
// accepts TCP connections (up to 20 s). It is stopped when the test ends.
// wrap, if non-empty, is a command prefix (for example strace).
func Start(t testing.TB, wrap []string, args []string, waitFor ...string) *Proc {
	t.Helper()
	argv := append(append([]string{}, wrap...), Binary(t))
	argv = append(argv, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	p := &Proc{Cmd: cmd, output: &testkit.LogBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.output, p.output
	// Its own process group, so signals reach arka under a wrapper too;
	// and never wait forever on output pipes a leftover child holds.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			t.Logf("arka output:\n%s", p.Output())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range waitFor {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-p.done:
				t.Fatalf("arka exited before listening on %s: %v\n%s", a, p.err, p.Output())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("arka does not listen on %s after 20 s\n%s", a, p.Output())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return p
}

// Signal sends sig to arka (and a wrapper, if any).
func (p *Proc) Signal(sig syscall.Signal) { syscall.Kill(-p.Cmd.Process.Pid, sig) }

// WaitOutput waits up to 10 s for substr to appear in the output.
func (p *Proc) WaitOutput(t testing.TB, substr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Output(), substr) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in arka's output:\n%s", substr, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop sends SIGTERM and waits up to 15 s, then kills. It returns the exit
// error (nil for a clean exit).
func (p *Proc) Stop(t testing.TB) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		t.Errorf("arka did not stop within 15 s of SIGTERM")
	}
	return p.err
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Clients returns an HTTP/1.1 client and an HTTP/2 (TLS) client that
// accept self-signed certificates, do not follow redirects and do not
// decompress.
func Clients() (h1, h2 *http.Client) {
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	h1 = &http.Client{Transport: &http.Transport{DisableCompression: true}, CheckRedirect: noRedirect, Timeout: 30 * time.Second}
	h2 = &http.Client{Transport: &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2:  true,
		DisableCompression: true,
	}, CheckRedirect: noRedirect, Timeout: 30 * time.Second}
	return h1, h2
}

// Curl runs curl with args and returns stdout; it skips the test if curl
// is not installed.
func Curl(t testing.TB, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	out, err := exec.Command("curl", append([]string{"-sS", "--max-time", "20"}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %v: %v", args, err)
	}
	return string(out)
}
