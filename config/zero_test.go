package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A value the user wrote is never replaced by the default: a written zero
// is kept where it is a real value (brotli_level = 0) and reported, at
// file:line:col, where it is not; only a key left out takes the default.
func TestWrittenZero(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "www"), 0o755)
	const route = "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n"
	write := func(name, src string) string {
		f := filepath.Join(root, name+".toml")
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	sites, err := Load(write("brotli0", "[compression]\nbrotli_level = 0\n"+route))
	if err != nil {
		t.Fatal(err)
	}
	if c := sites[0].Compression; c.BrotliLevel != 0 || c.ZstdLevel != DefaultZstdLevel || c.GzipLevel != DefaultGzipLevel {
		t.Errorf("brotli_level = 0: levels zstd %d brotli %d gzip %d, want %d 0 %d", c.ZstdLevel, c.BrotliLevel, c.GzipLevel, DefaultZstdLevel, DefaultGzipLevel)
	}
	sites, err = Load(write("defaults", route))
	if err != nil {
		t.Fatal(err)
	}
	if s := sites[0]; s.Compression.BrotliLevel != DefaultBrotliLevel || s.Log.Format != DefaultLogFormat || s.TLS.MinVersion != DefaultTLSMinVersion {
		t.Errorf("defaults not applied: %+v %+v %+v", s.Compression, s.Log, s.TLS)
	}
	for _, c := range []struct{ name, src, want string }{
		{"zstd0", "[compression]\nzstd_level = 0\n" + route, ":2:1: zstd_level 0: use 1 (fastest) to 4 (best)"},
		{"gzip0", "[compression]\ngzip_level = 0\n" + route, ":2:1: gzip_level 0: use 1 to 9"},
		{"redirect0", "[[routes]]\npath = \"/\"\nhandler = { type = \"redirect\", to = \"https://a.test/\", status = 0 }\n",
			`:3:56: redirect status 0: use 301, 302, 303, 307 or 308`},
		{"respond0", "[[routes]]\npath = \"/\"\nhandler = { type = \"respond\", status = 0 }\n",
			`:3:31: respond status 0: use 200 to 599`},
		{"status_allow", "[[routes]]\npath = \"/s\"\nhandler = { type = \"status\", allow = [] }\n" + route,
			`allow = [] lists no client: name the networks to let in, or leave allow out`},
		{"index", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\", index = [] }\n",
			`index = [] lists no file: give at least one name or leave it out`},
		{"log_format", "[log]\nformat = \"\"\n" + route, `:2:1: log format "": use "combined" or "json"`},
		{"min_version", "[tls]\nmin_version = \"\"\n" + route, `min_version "": use "1.2" or "1.3"`},
	} {
		f := write(c.name, c.src)
		_, err := Load(f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant %s", c.name, err, c.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), f+":") {
			t.Errorf("%s: error %v not located", c.name, err)
		}
	}
}

// The hint for an unknown key names a key of the same table.
func TestSuggestSameTable(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"global.foo", ""},
		{"global.lo", ""},
		{"global.therml", ` (did you mean "thermal"?)`},
		{"lisen", ` (did you mean "listen"?)`},
		{"tls.lisen", ` (did you mean "listen"?)`},
		{"log.formt", ` (did you mean "format"?)`},
		{"routes.handler.indx", ` (did you mean "index"?)`},
		{"routes.handler.upstream", ` (did you mean "upstreams"?)`},
		{"global.php.max_request", ` (did you mean "max_requests"?)`},
		{"compression.lvl", ""},
	} {
		if got := suggest(c.path); got != c.want {
			t.Errorf("suggest(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}

// A name listed twice in one site is reported, whatever its case; a size
// too large is echoed short.
func TestSiteNamesAndSizeEcho(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "www"), 0o755)
	const route = "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n"
	for _, c := range []struct{ name, src, want string }{
		{"dup", "server_names = [\"a.test\", \"A.TEST\"]\n" + route, `:1:27: server name "A.TEST" is listed twice in server_names (also at 1:17)`},
		{"huge", "[limits]\nmax_body_size = 1e30\n" + route, `:2:17: limits.max_body_size: size 1e+30 bytes is too large`},
	} {
		f := filepath.Join(root, c.name+".toml")
		os.WriteFile(f, []byte(c.src), 0o644)
		_, err := Load(f)
		if err == nil || !strings.Contains(err.Error(), f+c.want) {
			t.Errorf("%s: error %v\nwant %s%s", c.name, err, f, c.want)
		}
	}
}
