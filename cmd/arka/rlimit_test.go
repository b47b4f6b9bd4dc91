package main

import (
	"log/slog"
	"syscall"
	"testing"
)

// raiseNoFile leaves the soft limit at least at the hard limit it found
// (or at wantNoFile), and reports the limit in force.
func TestRaiseNoFile(t *testing.T) {
	var before syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &before); err != nil {
		t.Skip(err)
	}
	got := raiseNoFile(slog.New(slog.DiscardHandler))
	var after syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &after); err != nil {
		t.Fatal(err)
	}
	if got != after.Cur || after.Cur < min(before.Max, wantNoFile) || after.Max < before.Max {
		t.Fatalf("before %+v, after %+v, returned %d", before, after, got)
	}
	t.Logf("RLIMIT_NOFILE before %+v, after %+v", before, after)
}
