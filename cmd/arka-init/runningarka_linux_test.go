package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/deploy"
	"github.com/arkaweb/arka/appliance/device/supervise"
	"github.com/arkaweb/arka/server/status"
)

// TestRunningArka: the supervisor's state names Arka's process only while
// that process is alive and runs Arka's binary; otherwise (waiting to
// restart, stopped, the process gone) Arka is not running, which a deploy
// tells apart from a refusal (deploy.ErrNotRunning).
func TestRunningArka(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	bin, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "exe"))
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := runningArka(&supervise.State{PID: cmd.Process.Pid}, bin); err != nil || pid != cmd.Process.Pid {
		t.Errorf("a live Arka: %d %v", pid, err)
	}
	if _, err := runningArka(&supervise.State{PID: cmd.Process.Pid}, "/usr/lib/arka/arka"); !errors.Is(err, deploy.ErrNotRunning) {
		t.Errorf("a pid that runs another program: %v", err)
	}
	next := &supervise.State{NextStart: time.Now().Add(8 * time.Second), LastExit: &supervise.Exit{Status: "exit status 1", Ran: 0.2}}
	if _, err := runningArka(next, bin); !errors.Is(err, deploy.ErrNotRunning) || !strings.Contains(err.Error(), "exit status 1") || !strings.Contains(err.Error(), "restarts in") {
		t.Errorf("in the restart backoff: %v", err)
	}
	if _, err := runningArka(&supervise.State{}, bin); !errors.Is(err, deploy.ErrNotRunning) {
		t.Errorf("stopped: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := runningArka(&supervise.State{PID: cmd.Process.Pid}, bin); !errors.Is(err, deploy.ErrNotRunning) {
		t.Errorf("a pid that is gone: %v", err)
	}
}

// TestReservedPorts: the deploy check's reserved ports are gokrazy's UI
// port and the HTTPS API's, /perm overriding /etc as gokrazy reads them.
func TestReservedPorts(t *testing.T) {
	perm, etc := t.TempDir(), t.TempDir()
	dirs := []string{perm, etc}
	if got := reservedPorts(dirs); got != "80=the device's web UI (gokrazy),8443=the device's update/deploy API" {
		t.Errorf("defaults: %q", got)
	}
	os.WriteFile(filepath.Join(etc, "http-port.txt"), []byte("8080\n"), 0o644)
	os.WriteFile(filepath.Join(etc, "https-port.txt"), []byte("9443"), 0o644)
	os.WriteFile(filepath.Join(perm, "https-port.txt"), []byte(" 7443 "), 0o644)
	if got := reservedPorts(dirs); got != "8080=the device's web UI (gokrazy),7443=the device's update/deploy API" {
		t.Errorf("from the files: %q", got)
	}
}

// TestNewProblems: the deploy verdict counts only the problems the reload
// brought (those Arka had before are not the new site's), named relative
// to the site directory.
func TestNewProblems(t *testing.T) {
	before := &status.Readiness{PID: 7, Ready: false, Config: status.ServingAsWritten,
		Problems: []string{activeLink + "/sites/a.toml:9:1: cert.pem: no such file; serving a self-signed certificate for this site instead"}}
	after := &status.Readiness{PID: 7, Ready: false, Config: status.ServingAsWritten,
		Problems: append([]string{activeLink + "/sites/second.toml:2:11: cannot listen on :8443: address already in use (other addresses serve; retrying every 1m0s)"}, before.Problems...)}
	got := newProblems(before, after)
	if len(got) != 1 || got[0] != "sites/second.toml:2:11: cannot listen on :8443: address already in use (other addresses serve; retrying every 1m0s)" {
		t.Errorf("new problems: %q", got)
	}
	if got := newProblems(nil, after); len(got) != 2 {
		t.Errorf("without a report before: %q", got)
	}
	if got := newProblems(before, &status.Readiness{PID: 7, Ready: true, Config: status.ServingAsWritten}); got != nil {
		t.Errorf("ready after: %q", got)
	}
	if got := newProblems(before, before); got != nil {
		t.Errorf("the same problems as before: %q", got)
	}
}
