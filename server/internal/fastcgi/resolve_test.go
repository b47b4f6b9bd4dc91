package fastcgi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/tests/fpmtest"
)

func TestCleanPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/a": true, "/a/": true, "/a/b.php/c": true, "/.well-known/x": true, "/a..b": true,
		"": false, "a": false, "/a/../b": false, "/..": false, "/a/./b": false, "/a//b": false, "/a\x00b": false,
		"/.": false,
	} {
		if got := cleanPath(p); got != want {
			t.Errorf("cleanPath(%q) = %v", p, got)
		}
	}
}

func TestSplitScript(t *testing.T) {
	h := &Handler{splitExts: []string{".php", ".phar"}}
	for _, tc := range []struct{ p, script, info string }{
		{"/index.php", "/index.php", ""},
		{"/app/index.php/a/b", "/app/index.php", "/a/b"},
		{"/a.php/b.php", "/a.php", "/b.php"},
		{"/uploads/photo.jpg/x.php", "/uploads/photo.jpg/x.php", ""},
		{"/X.PHP", "/X.PHP", ""},
		{"/tool.phar/run", "/tool.phar", "/run"},
		{"/.php/x", "", ""}, // a name that is only the extension
		{"/a.phpx/b", "", ""},
		{"/dir/", "", ""},
	} {
		s, i, ok := h.splitScript(tc.p)
		if s != tc.script || i != tc.info || ok != (tc.script != "") {
			t.Errorf("splitScript(%q) = %q %q %v", tc.p, s, i, ok)
		}
	}
}

// TestResolveFiles checks resolution without php-fpm: symlinks inside the
// root are followed; a directory named like a script is not run.
func TestResolveFiles(t *testing.T) {
	root := t.TempDir()
	fpmtest.WriteFiles(t, root, map[string]string{
		"real/x.php":     "<?php",
		"dir.php/a.txt":  "x",
		"docs/index.php": "<?php",
	})
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "current")); err != nil {
		t.Fatal(err)
	}
	h, err := New("/", complete(t, &config.FastCGI{Address: "127.0.0.1:9", Root: root + "/", Index: config.StringList{"index.html", "index.php"}}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, tc := range []struct {
		p    string
		res  resolution
		file string
	}{
		{"/current/x.php", resScript, root + "/current/x.php"},
		{"/dir.php", resNotFound, ""},
		{"/dir.php/a.txt", resNotFound, ""},
		{"/docs/", resScript, root + "/docs/index.php"},
		{"/docs", resSlash, ""},
		{"/real/", resNotFound, ""},
		{"/nope", resNotFound, ""},
		{"/dir.php/../real/x.php", resNotFound, ""},
	} {
		var tg target
		got := h.resolve(tc.p, -1, &tg)
		file := ""
		if got == resScript {
			file = h.root + tg.scriptName
		}
		if got != tc.res || file != tc.file {
			t.Errorf("resolve(%q) = %v %q, want %v %q", tc.p, got, file, tc.res, tc.file)
		}
	}
	if h.docRoot != root || h.root != root {
		t.Errorf("root %q docRoot %q", h.root, h.docRoot)
	}
}

func TestHostHelpers(t *testing.T) {
	for _, tc := range []struct{ in, host, port string }{
		{"example.org:8080", "example.org", "8080"},
		{"example.org", "example.org", ""},
		{"[::1]:443", "[::1]", "443"},
		{"[::1]", "[::1]", ""},
	} {
		if h, p := hostOnly(tc.in), portOf(tc.in); h != tc.host || p != tc.port {
			t.Errorf("%q: %q %q", tc.in, h, p)
		}
	}
	for _, tc := range []struct{ in, host, port string }{
		{"127.0.0.1:5000", "127.0.0.1", "5000"},
		{"[::1]:5000", "::1", "5000"},
		{"@", "@", ""},
	} {
		if h, p := splitHostPort(tc.in); h != tc.host || p != tc.port {
			t.Errorf("splitHostPort(%q) = %q %q", tc.in, h, p)
		}
	}
}

// An encoded slash is never a separator for the script or file a path
// names: such a path runs the fallback (or is 404), while after the
// script it is PATH_INFO, decoded (RFC 3875 section 4.1.5).
func TestResolveEncodedSlash(t *testing.T) {
	root := t.TempDir()
	fpmtest.WriteFiles(t, root, map[string]string{
		"app/x.php": "<?php",
		"index.php": "<?php",
		"app/a.txt": "x",
	})
	for _, fallback := range []string{"", "/index.php"} {
		h, err := New("/", complete(t, &config.FastCGI{Address: "127.0.0.1:9", Root: root, Fallback: fallback}), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			p        string
			encSlash int
			script   string
			info     string
		}{
			{"/app/x.php", -1, "/app/x.php", ""},
			{"/app/x.php", 4, fallback, ""},              // "/app%2Fx.php"
			{"/app/a.txt", 4, fallback, ""},              // "/app%2Fa.txt": not the file
			{"/app/x.php/a/b", 12, "/app/x.php", "/a/b"}, // "/app/x.php/a%2Fb"
		} {
			var tg target
			res := h.resolve(tc.p, tc.encSlash, &tg)
			if tc.script == "" {
				if res != resNotFound {
					t.Errorf("resolve(%q, %d) without fallback = %v, want 404", tc.p, tc.encSlash, res)
				}
				continue
			}
			if res != resScript || tg.scriptName != tc.script || tg.pathInfo != tc.info {
				t.Errorf("resolve(%q, %d) = %v %q %q; want %q %q", tc.p, tc.encSlash, res, tg.scriptName, tg.pathInfo, tc.script, tc.info)
			}
		}
		h.Close()
	}
}
