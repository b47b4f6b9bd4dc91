package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNotRegularFile: a FIFO named like a site file in the directory
// would block arka -t and every reload forever; it is an error, and the
// other files are still read.
func TestNotRegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "b.toml"), 0o644); err != nil {
		t.Skip(err)
	}
	os.WriteFile(filepath.Join(dir, "a.toml"), []byte("listen = 80\n"), 0o644)
	done := make(chan error, 1)
	go func() { _, err := Load(dir); done <- err }()
	select {
	case err := <-done:
		got := fmt.Sprint(err)
		if !strings.Contains(got, "b.toml: a named pipe (FIFO), not a site file") || !strings.Contains(got, "a.toml:1:10: listen: expected an array") {
			t.Errorf("errors:\n%s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load blocked on a FIFO") // the FIFO is never opened for writing
	}
}

// TestLongValueShortened: a message echoing a very long value shows its
// start and end and its length, not all of it.
func TestLongValueShortened(t *testing.T) {
	name := strings.Repeat("é", 3000) + " x"
	_, err := Parse("long.toml", []byte(`server_names = ["`+name+`"]`+"\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n"))
	got := fmt.Sprint(err)
	if len(got) > 400 || !strings.Contains(got, "long.toml:1:17: server name \"éééé") || !strings.Contains(got, "…") ||
		!strings.Contains(got, "é x\" (6002 bytes): not a valid host name") {
		t.Errorf("error (%d bytes): %s", len(got), got)
	}
}

// TestEmptySiteFile: a zero-byte site file (a truncated copy, a crash
// before the data reached the disk) says so rather than "no routes".
func TestEmptySiteFile(t *testing.T) {
	_, err := Parse("empty.toml", nil)
	if err == nil || err.Error() != "empty.toml:1:1: file is empty (0 bytes)" {
		t.Fatalf("empty file: %v", err)
	}
	_, err = Parse("blank.toml", []byte("# nothing yet\n"))
	if err == nil || !strings.Contains(err.Error(), "site has no routes") {
		t.Fatalf("file with only a comment: %v", err)
	}
}
