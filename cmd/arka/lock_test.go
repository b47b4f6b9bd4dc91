package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLockState: a second server on the same state directory is refused
// with the first one's pid; the directory is free again once it is
// released.
func TestLockState(t *testing.T) {
	dir := t.TempDir()
	f, err := lockState(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockState(dir)
	if err == nil || !strings.Contains(err.Error(), "in use by another arka (pid ") || !strings.Contains(err.Error(), "-state DIR") {
		t.Fatalf("second lock: %v", err)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Errorf("no pid in %v", err)
	}
	f.Close()
	g, err := lockState(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	g.Close()
}
