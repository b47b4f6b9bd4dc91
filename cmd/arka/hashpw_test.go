package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// Without a terminal, arka hash-password reads one line from standard
// input and prints a bcrypt hash of it (without the line end).
func TestHashPasswordFromStdin(t *testing.T) {
	in := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(in, []byte("correct horse\r\nignored second line\n"), 0o600)
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out, errOut bytes.Buffer
	if code := hashPassword(nil, f, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	hash := strings.TrimSpace(out.String())
	if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte("correct horse")); err != nil {
		t.Errorf("hash %q does not match the password: %v", hash, err)
	}
	empty, _ := os.Open(os.DevNull)
	defer empty.Close()
	if code := hashPassword(nil, empty, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "empty password") {
		t.Errorf("empty input: exit %d, %q", code, errOut.String())
	}
}
