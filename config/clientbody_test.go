package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClientBody: [global] body_timeout and body_min_rate are decoded,
// defaulted and checked here; the server gets ready values.
func TestClientBody(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "www"), 0o755)
	const routes = "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n"
	load := func(name, global string) ([]*Site, error) {
		f := filepath.Join(root, name+".toml")
		os.WriteFile(f, []byte(routes+"[global]\n"+global), 0o644)
		return Load(f)
	}
	for _, c := range []struct {
		name, global string
		want         ClientBody
	}{
		{"defaults", "", ClientBody{60 * time.Second, 500}},
		{"set", "body_timeout = \"30s\"\nbody_min_rate = \"1KiB/s\"\n", ClientBody{30 * time.Second, 1024}},
		{"bare_rate", "body_min_rate = 2000\n", ClientBody{60 * time.Second, 2000}},
		{"off", "body_min_rate = 0\n", ClientBody{60 * time.Second, 0}},
	} {
		sites, err := load(c.name, c.global)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := GlobalOf(sites).ClientBody(); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := (Global{}).ClientBody(); got != (ClientBody{DefaultBodyTimeout, DefaultBodyMinRate}) {
		t.Errorf("no [global]: %+v", got)
	}
	for _, c := range []struct{ name, global, want string }{
		{"zero", "body_timeout = \"0s\"\n", ":5:1: body_timeout 0s: use 100ms to 24h (it cannot be switched off)"},
		{"short", "body_timeout = \"10ms\"\n", ":5:1: body_timeout 10ms: use 100ms to 24h (it cannot be switched off)"},
		{"long", "body_timeout = \"48h\"\n", ":5:1: body_timeout 48h0m0s: use 100ms to 24h"},
		{"no_unit", "body_timeout = \"60\"\n", ":5:17: global.body_timeout: duration \"60\" needs a unit"},
		{"slow_rate", "body_min_rate = \"1B/s\"\n", ":5:1: body_min_rate 1B/s: use at least 10B/s"},
		{"rate_unit", "body_min_rate = \"500 bytes\"\n", ":5:18: global.body_min_rate: rate \"500 bytes\": expected bytes per second"},
	} {
		_, err := load(c.name, c.global)
		if err == nil || !strings.Contains(err.Error(), c.name+".toml"+c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
