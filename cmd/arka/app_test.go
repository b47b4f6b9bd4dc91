package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/tests/testkit"
)

// [global] on reload: thermal limits are applied, a budget change is
// reported (and kept for the next start), never silently ignored.
func TestReloadGlobal(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("hi"), 0o644)
	file := filepath.Join(dir, "site.toml")
	write := func(global string) {
		src := `listen = ["` + addr + `"]
[[routes]]
path = "/"
handler = { type = "static", root = "` + dir + `" }
` + global
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("[global]\nthermal = { limit = 75 }\n")
	load := func() ([]*config.Site, error) {
		sites, err := config.Load(file)
		if err != nil {
			return nil, err
		}
		return sites, config.CheckEnvironment(sites)
	}
	sites, err := load()
	if err != nil {
		t.Fatal(err)
	}
	var logs testkit.LogBuffer
	a := newApp(slog.New(slog.NewTextHandler(&logs, nil)), filepath.Join(dir, "state"), dir, load, sites)
	if err := a.start(sites); err != nil {
		t.Fatal(err)
	}
	defer a.shutdown()
	if st := a.thermal.State(); st.LimitC != 75 {
		t.Fatalf("thermal limit %v at start, want 75", st.LimitC)
	}

	write("[global]\nthermal = { limit = 70, hysteresis = 10 }\n")
	if _, err := a.reload(); err != nil {
		t.Fatal(err)
	}
	if st := a.thermal.State(); st.LimitC != 70 || st.ResumeC != 60 {
		t.Errorf("thermal after reload: %+v, want limit 70, resume 60", st)
	}
	if !strings.Contains(logs.String(), "[global.thermal] applied") {
		t.Errorf("no message for the thermal change:\n%s", logs.String())
	}

	before := a.budget
	write("[global]\nthermal = { limit = 70, hysteresis = 10 }\nbudget = { memory_limit = \"300MiB\", fastcgi_queue = 7 }\n")
	if _, err := a.reload(); err != nil {
		t.Fatal(err)
	}
	if a.budget != before {
		t.Errorf("the budget changed while running: %+v", a.budget)
	}
	if l := logs.String(); !strings.Contains(l, "[global.budget] changed") || !strings.Contains(l, "memory_limit, fastcgi_queue") {
		t.Errorf("no message naming the budget keys that changed:\n%s", l)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi" {
		t.Errorf("after the reloads: %q", b)
	}
}
