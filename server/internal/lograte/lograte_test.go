package lograte

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/arkaweb/arka/tests/testkit"
)

// TestBurstThenSuppressed: Burst lines pass at once, the next ones are
// dropped, and the first line after tokens come back says how many were.
func TestBurstThenSuppressed(t *testing.T) {
	buf := &testkit.LogBuffer{}
	l := New(slog.New(slog.NewTextHandler(buf, nil)))
	for range Burst + 20 {
		l.Write(slog.LevelError, "line")
	}
	if n := strings.Count(buf.String(), "\n"); n != Burst {
		t.Fatalf("%d lines of %d at once, want %d", n, Burst+20, Burst)
	}
	l.mu.Lock()
	l.tokens = 1
	l.mu.Unlock()
	l.Write(slog.LevelError, "after")
	if !strings.Contains(buf.String(), "msg=after suppressed_before=20") {
		t.Errorf("the line after the dropped ones:\n%s", buf.String())
	}
}
