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
