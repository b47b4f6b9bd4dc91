package main

import (
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
