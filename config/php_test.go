package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeFPM writes an executable file standing in for a php-fpm binary: the
// config layer only checks that it exists and is executable.
func fakeFPM(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

const phpRoute = "[[routes]]\npath = \"/\"\nhandler = { type = \"fastcgi\", root = \"WWW\" }\n"

func writeSite(t *testing.T, dir, name, src string) string {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "www"), 0o755)
	f := filepath.Join(dir, name)
	if err := os.WriteFile(f, []byte(strings.ReplaceAll(src, "WWW", filepath.Join(dir, "www"))), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPHPSettings(t *testing.T) {
	dir := t.TempDir()
	fpm := fakeFPM(t, dir, "php-fpm8.2")
	f := writeSite(t, dir, "a.toml", `php = { fpm = "php-fpm8.2", user = "33:33", max_requests = 0, memory_limit = "96MiB", upload_max_filesize = "8MiB", slowlog_timeout = "2s", terminate_timeout = "10m", data_dir = "data", ini = { "date.timezone" = "Europe/Berlin", "opcache.jit" = "off" } }
`+phpRoute)
	sites, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	p := PHPOf(sites)
	if p == nil {
		t.Fatal("no php settings")
	}
	if p.FPMPath != fpm || p.User != "33:33" || p.MaxRequestsOr() != 0 || p.MemoryLimit.Value != 96<<20 ||
		p.UploadMax() != 8<<20 || p.SlowlogTimeout.D().Seconds() != 2 || p.TerminateTimeout.Or(0) != 10*time.Minute || p.DataDir != filepath.Join(dir, "data") ||
		p.INI["date.timezone"] != "Europe/Berlin" {
		t.Errorf("decoded %+v", p)
	}
	// Defaults.
	f = writeSite(t, dir, "b.toml", "[php]\nfpm = \""+fpm+"\"\n"+phpRoute)
	sites, err = Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if p := PHPOf(sites); p.MaxRequestsOr() != DefaultPHPMaxRequests || p.UploadMax() != int64(DefaultPHPUploadMax) || p.MemoryLimit.Set {
		t.Errorf("defaults: %+v", p)
	}
}

func TestPHPAuto(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "sbin")
	os.Mkdir(bin, 0o755)
	fakeFPM(t, bin, "php-fpm8.2")
	want := fakeFPM(t, bin, "php-fpm8.10")
	fakeFPM(t, bin, "php-fpm-helper") // not a php-fpm
	old := FPMSearchDirs
	FPMSearchDirs = []string{bin}
	t.Cleanup(func() { FPMSearchDirs = old })
	t.Setenv("PATH", "")
	f := writeSite(t, dir, "a.toml", "[global.php]\nfpm = \"auto\"\n"+phpRoute)
	sites, err := loadChecked(f)
	if err != nil {
		t.Fatal(err)
	}
	if p := PHPOf(sites); p.FPMPath != want {
		t.Errorf("auto found %q, want the newest, %q", p.FPMPath, want)
	}
	FPMSearchDirs = []string{filepath.Join(dir, "nothing")}
	_, err = loadChecked(f)
	if err == nil || !strings.Contains(err.Error(), f+":2:1: fpm = \"auto\": no php-fpm found") {
		t.Errorf("auto without php-fpm: %v", err)
	}
}

func TestPHPErrorsAreLocated(t *testing.T) {
	dir := t.TempDir()
	fakeFPM(t, dir, "php-fpm")
	os.WriteFile(filepath.Join(dir, "notexec"), nil, 0o644)
	cases := []struct{ name, src, want string }{
		{"missing binary", "php = { fpm = \"/nonexistent/php-fpm\" }\n", `:1:9: fpm "/nonexistent/php-fpm": no such file or directory`},
		{"not executable", "php = { fpm = \"notexec\" }\n", `:1:9: fpm "notexec" is not an executable file`},
		{"no fpm", "[php]\nuser = \"root\"\n", `:1:2: php: fpm is missing`},
		{"unknown key", "php = { fpm = \"FPM\", workers = 4 }\n", `:1:26: unknown key "php.workers"`},
		{"unknown key in global", "[global.php]\nfpm = \"FPM\"\nmax_request = 4\n", `:3:1: unknown key "global.php.max_request" (did you mean "max_requests"?)`},
		{"bad user", "php = { fpm = \"FPM\", user = \"Bob Smith\" }\n", `:1:26: user "Bob Smith"`},
		{"negative max_requests", "php = { fpm = \"FPM\", max_requests = -1 }\n", `:1:26: max_requests -1`},
		{"tiny memory_limit", "php = { fpm = \"FPM\", memory_limit = \"1MiB\" }\n", `:1:26: memory_limit 1MiB`},
		{"bad size", "php = { fpm = \"FPM\", upload_max_filesize = \"lots\" }\n", `php.upload_max_filesize: size "lots"`},
		{"bad ini key", "php = { fpm = \"FPM\", ini = { \"a b\" = \"1\" } }\n", `:1:26: ini key "a b"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := writeSite(t, dir, strings.ReplaceAll(c.name, " ", "_")+".toml", strings.ReplaceAll(c.src, "FPM", "php-fpm")+phpRoute)
			_, err := loadChecked(f)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), f+":") {
				t.Errorf("error %q\nwant it to start with %s: and contain %q", err, f, c.want)
			}
		})
	}
}

// [global] php wins; a site's php table must match it, and sites without
// [global] php must agree with each other.
func TestPHPPrecedence(t *testing.T) {
	dir := t.TempDir()
	fpm := fakeFPM(t, dir, "php-fpm")
	other := fakeFPM(t, dir, "php-fpm8.1")
	sub := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "FPM", fpm), "OTHER", other) }
	g := writeSite(t, dir, "a.toml", sub("server_names = [\"a\"]\n[global.php]\nfpm = \"FPM\"\nmax_requests = 100\n"+phpRoute))
	same := writeSite(t, dir, "b.toml", sub("server_names = [\"b\"]\nphp = { fpm = \"FPM\", max_requests = 100 }\n"+phpRoute))
	none := writeSite(t, dir, "c.toml", sub("server_names = [\"c\"]\n"+phpRoute))
	sites, err := LoadFiles([]string{g, same, none})
	if err != nil {
		t.Fatal(err)
	}
	if p := PHPOf(sites); p == nil || p.MaxRequestsOr() != 100 || p != sites[0].Global.PHP {
		t.Errorf("PHPOf = %+v, want [global] php", p)
	}
	differs := writeSite(t, dir, "d.toml", sub("server_names = [\"d\"]\nphp = { fpm = \"OTHER\" }\n"+phpRoute))
	_, err = LoadFiles([]string{g, differs})
	if err == nil || !strings.Contains(err.Error(), differs+":2:1: php differs from [global] php at "+g+":2") {
		t.Errorf("site php against [global] php: %v", err)
	}
	_, err = LoadFiles([]string{same, differs})
	if err == nil || !strings.Contains(err.Error(), differs+":2:1: php differs from the php table of "+same+":2") {
		t.Errorf("two sites' php: %v", err)
	}
	sites, err = LoadFiles([]string{none})
	if err != nil || PHPOf(sites) != nil {
		t.Errorf("no php anywhere: %v %v", PHPOf(sites), err)
	}
}

// TestRelativePathsFromRelativeFile: with a relative site file name (arka
// -c site.toml), paths in it still end up absolute, resolved from the
// file's directory, so php-fpm and the handlers do not depend on the
// working directory.
func TestRelativePathsFromRelativeFile(t *testing.T) {
	dir := t.TempDir()
	fakeFPM(t, dir, "php-fpm8.2")
	os.MkdirAll(filepath.Join(dir, "app"), 0o755)
	writeSite(t, dir, "rel.toml", `php = { fpm = "php-fpm8.2", data_dir = "phpdata" }
[[routes]]
path = "/php/"
handler = { type = "fastcgi", root = "app" }
[[routes]]
path = "/"
handler = { type = "static", root = "www" }
`)
	t.Chdir(dir)
	sites, err := Load("rel.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := sites[0]
	if got := s.Routes[0].Handler.(*FastCGI).Root; got != filepath.Join(dir, "app") {
		t.Errorf("fastcgi root %q", got)
	}
	if got := s.Routes[1].Handler.(*Static).Root; got != filepath.Join(dir, "www") {
		t.Errorf("static root %q", got)
	}
	if p := PHPOf(sites); p == nil || p.DataDir != filepath.Join(dir, "phpdata") || p.FPMPath != filepath.Join(dir, "php-fpm8.2") {
		t.Errorf("php %+v", p)
	}
}

// post_max_size as Arka's php-fpm applies it: upload_max_filesize + 1 MiB,
// or the ini table's own value in PHP's shorthand.
func TestPHPPostMaxSize(t *testing.T) {
	mib := Size(1 << 20)
	for _, tc := range []struct {
		p    PHP
		want int64
	}{
		{PHP{}, 33 << 20},
		{PHP{UploadMaxFilesize: &mib}, 2 << 20},
		{PHP{INI: map[string]string{"post_max_size": "8M"}}, 8 << 20},
		{PHP{INI: map[string]string{"post_max_size": " 512k"}}, 512 << 10},
		{PHP{INI: map[string]string{"post_max_size": "1G"}}, 1 << 30},
		{PHP{INI: map[string]string{"post_max_size": "1000"}}, 1000},
		{PHP{INI: map[string]string{"post_max_size": "0"}}, 0},
		{PHP{INI: map[string]string{"post_max_size": "lots"}}, 33 << 20},
	} {
		if got := tc.p.PostMaxSize(); got != tc.want {
			t.Errorf("%+v: PostMaxSize() = %d, want %d", tc.p, got, tc.want)
		}
	}
}
