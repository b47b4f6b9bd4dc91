package spool

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// stall is a client that sends a few bytes of a body and then nothing: its
// next read fails as the engine's body timeout would.
type stall struct{ s string }

func (r *stall) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, os.ErrDeadlineExceeded
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

// A declared length opens no file: only bytes past memory do.
func TestReadNoFileBeforeBytes(t *testing.T) {
	bud := NewBudget(0, 1<<30, 0, 1<<30, nil) // any file would be ErrBusy
	_, err := Read(&stall{"x"}, 1_000_000, make([]byte, 8), 0, t.TempDir(), make([]byte, 4), bud, "192.0.2.1:1")
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("error %v, want the client's timeout (no spool file tried)", err)
	}
}

func TestBudget(t *testing.T) {
	dir := t.TempDir()
	mem, buf := make([]byte, 8), make([]byte, 4)
	bud := NewBudget(2, 100, 1, 60, nil)
	body := "0123456789abcdef" // 16 bytes: past mem
	read := func(client string, n int64, s string) (Body, error) {
		return Read(strings.NewReader(s), n, mem, 0, dir, buf, bud, client)
	}
	a, err := read("192.0.2.1:1", 16, body)
	if err != nil || a.File == nil {
		t.Fatalf("first body: %v (file %v)", err, a.File != nil)
	}
	if f, n := bud.Use(); f != 1 || n != 16 {
		t.Fatalf("use %d files %d bytes, want 1, 16", f, n)
	}
	// The same client (another port, or the same address as IPv4-mapped
	// IPv6) is at its share of files; another client is not.
	if _, err := read("192.0.2.1:2", 16, body); err != ErrBusy {
		t.Fatalf("second body of one client: %v, want ErrBusy", err)
	}
	if _, err := read("[::ffff:192.0.2.1]:3", 16, body); err != ErrBusy {
		t.Fatalf("mapped address: %v, want ErrBusy", err)
	}
	c, err := read("192.0.2.2:1", 16, body)
	if err != nil {
		t.Fatalf("other client: %v", err)
	}
	// In all at most 2 files.
	if _, err := read("192.0.2.3:1", 16, body); err != ErrBusy {
		t.Fatalf("third file: %v, want ErrBusy", err)
	}
	a.Close()
	c.Close()
	if f, n := bud.Use(); f != 0 || n != 0 {
		t.Fatalf("after Close: %d files %d bytes", f, n)
	}
	// Bytes: a declared length over the client's share is refused before
	// it is copied; an unknown length when it passes the share.
	big := strings.Repeat("x", 61)
	if _, err := read("192.0.2.1:1", 61, big); err != ErrTooLarge {
		t.Fatalf("known length over the share: %v, want ErrTooLarge", err)
	}
	if _, err := read("192.0.2.1:1", -1, big); err != ErrBusy {
		t.Fatalf("unknown length over the share: %v, want ErrBusy", err)
	}
	b, err := read("192.0.2.1:1", -1, big[:60])
	if err != nil {
		t.Fatalf("unknown length at the share: %v", err)
	}
	if got, _ := io.ReadAll(b.Reader()); string(got) != big[:60] {
		t.Fatalf("body %q", got)
	}
	b.Close()
	if f, n := bud.Use(); f != 0 || n != 0 {
		t.Fatalf("at the end: %d files %d bytes", f, n)
	}
}
