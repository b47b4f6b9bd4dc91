package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1200M": 1200 << 20, "4G": 4 << 30, "1048576": 1 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1G", "1000"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestBuildNeedsAKnownBoard(t *testing.T) {
	if _, err := cmdBuild(nil); err == nil || !strings.Contains(err.Error(), "--board is required") {
		t.Errorf("no board: %v", err)
	}
	if _, err := cmdBuild([]string{"--board", "vax"}); err == nil || !strings.Contains(err.Error(), `unknown board "vax" (known: amd64, rpi)`) {
		t.Errorf("unknown board: %v", err)
	}
}

func TestUpdateFlags(t *testing.T) {
	t.Setenv("ARKA_DEVICES", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--host is required"},
		{[]string{"--host", "arka.local"}, "give --image IMG or --board BOARD"},
		{[]string{"--host", "arka.local", "--image", "a.img", "--board", "rpi"}, "give --image IMG or --board BOARD"},
		{[]string{"--host", "arka.local", "--image", "a.img", "--max-rate", "fast"}, "--max-rate"},
		{[]string{"--host", "arka.local", "--image", "/nonexistent/a.img"}, `no password for device "arka" on this machine`},
		{[]string{"--host", "192.168.1.20", "--image", "/nonexistent/a.img"}, "give the device's name too (--name NAME"},
	} {
		if err := cmdUpdate(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("update %q: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestProgressLinesOffTerminal: written to a file, progress is a line per
// 10 %, not a bar redrawn in place.
func TestProgressLinesOffTerminal(t *testing.T) {
	var out strings.Builder
	b := &bar{w: &out}
	b.Stage(1, 2, "write /dev/sdz")
	for done := int64(0); done <= 1000; done += 7 {
		b.Bytes(done, 1000)
	}
	b.Bytes(1000, 1000)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 12 || lines[1] != "  0%  0.0/0.0 MiB" || !strings.HasPrefix(lines[11], "  100%") || strings.Contains(out.String(), "\r") {
		t.Errorf("%d lines:\n%s", len(lines), out.String())
	}
}

// TestConfirmFlash: a device is named and, without a terminal to ask on,
// refused unless --yes; a file target needs no confirmation.
func TestConfirmFlash(t *testing.T) {
	in, err := os.Open(os.DevNull) // not a terminal
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out strings.Builder
	err = confirmFlash(os.DevNull, "arka.img", false, in, &out)
	if err == nil || !strings.Contains(err.Error(), "add --yes") || !strings.Contains(out.String(), "Writing arka.img to /dev/null: ") {
		t.Errorf("device without --yes: %v\n%s", err, out.String())
	}
	if err := confirmFlash(os.DevNull, "arka.img", true, in, &out); err != nil {
		t.Errorf("--yes: %v", err)
	}
	if err := confirmFlash(filepath.Join(t.TempDir(), "card.img"), "arka.img", false, in, &out); err != nil {
		t.Errorf("file target: %v", err)
	}
}

// TestFlashRefusesBeforeAsking: every refusal comes before the question,
// so nobody types "yes" only to be told the image is not one.
func TestFlashRefusesBeforeAsking(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "empty.img")
	os.WriteFile(img, nil, 0o644)
	// /dev/null is a device and the test has no terminal: asking first
	// would fail with "add --yes".
	err := cmdFlash([]string{"--image", img, os.DevNull})
	if err == nil || !strings.Contains(err.Error(), "not a disk image") {
		t.Errorf("flash of an empty file: %v", err)
	}
}
