package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/status"
	"github.com/arkaweb/arka/tests/testkit"
)

// TestSamePath: the last good copy belongs to the -c path however it is
// spelled (relative, "./", a trailing slash, absolute), and not to another.
func TestSamePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	abs := filepath.Join(dir, "ap", "sites")
	for _, p := range []string{"ap/sites", "./ap/sites", "ap/sites/", "ap/./sites", abs, abs + "/"} {
		if !samePath(p, "ap/sites") || !samePath(abs, p) {
			t.Errorf("%q is not the same -c path as ap/sites (%s)", p, abs)
		}
	}
	for _, p := range []string{"ap", "sites", "/ap/sites", "ap/sites2"} {
		if samePath(p, "ap/sites") {
			t.Errorf("%q is the same -c path as ap/sites", p)
		}
	}
}

// TestReadinessUnwritable: when the readiness file cannot be written (a
// full or read-only state directory; here its temporary file's name is
// taken by a directory), the stale one is removed rather than left saying
// what is no longer so, the failure is logged once rather than every
// second, and the file is written again once it can be.
func TestReadinessUnwritable(t *testing.T) {
	state := t.TempDir()
	var log testkit.LogBuffer
	srv := server.New(server.Options{StateDir: state, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	k := &keeper{state: state, srv: srv, log: slog.New(slog.NewTextHandler(&log, nil))}
	file := filepath.Join(state, status.ReadyFile)
	k.writeReadiness()
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(file+".tmp", 0o700); err != nil {
		t.Fatal(err)
	}
	srv.SetProblem("test", "something changed")
	for range 5 {
		k.writeReadiness()
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale readiness file is still there (%v)", err)
	}
	if n := strings.Count(log.String(), "cannot write the readiness file"); n != 1 {
		t.Errorf("the failure logged %d times:\n%s", n, log.String())
	}
	if err := os.Remove(file + ".tmp"); err != nil {
		t.Fatal(err)
	}
	k.writeReadiness()
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), "something changed") {
		t.Errorf("readiness file after recovery: %q, %v", b, err)
	}
	if !strings.Contains(log.String(), "readiness file written again") {
		t.Errorf("the recovery is not logged:\n%s", log.String())
	}
}
