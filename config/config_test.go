package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/tests/testkit"
)

// seedTree lays out the seed's /srv/bench under a temp dir and returns the
// seed site file with paths rewritten.
func seedTree(t *testing.T) (root, file string) {
	t.Helper()
	root = t.TempDir()
	os.MkdirAll(filepath.Join(root, "www"), 0o755)
	os.MkdirAll(filepath.Join(root, "tls"), 0o755)
	testkit.WriteCert(t, filepath.Join(root, "tls"))
	src, err := os.ReadFile("testdata/seed.toml")
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(root, "bench.toml")
	os.WriteFile(file, []byte(strings.ReplaceAll(string(src), "ROOT", root)), 0o644)
	return root, file
}

// The published seed site file loads unchanged except for paths.
func TestSeedSiteFile(t *testing.T) {
	root, file := seedTree(t)
	sites, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	s := sites[0]
	if !s.Default || s.ServerNames[0] != "bench.local" || s.Listen[0].String() != "127.0.0.1:18892" {
		t.Errorf("site header: %+v", s)
	}
	if s.TLS.Listen[0].String() != "127.0.0.1:18445" || s.TLS.Cert != filepath.Join(root, "tls/cert.pem") {
		t.Errorf("tls: %+v", s.TLS)
	}
	if !s.Compression.Enabled || s.Compression.MinSize != 512 {
		t.Errorf("compression: %+v", s.Compression)
	}
	if len(s.Routes) != 3 {
		t.Fatalf("routes: %d", len(s.Routes))
	}
	p, _ := s.Routes[0].Handler.(*Proxy)
	if p == nil || p.Upstreams[0] != "127.0.0.1:18893" || !p.StripPrefix || p.ForwardHeadersEnabled() {
		t.Errorf("proxy route: %+v", p)
	}
	f, _ := s.Routes[1].Handler.(*FastCGI)
	if f == nil || f.Address != "unix:/run/bench/php-a.sock" || f.Dial != (NetAddr{"unix", "/run/bench/php-a.sock"}) || f.MaxConns.Or(0) != 32 ||
		f.Queue.Size.Or(0) != 1000 || f.Queue.Timeout.D() != 30*time.Second {
		t.Errorf("fastcgi route: %+v", f)
	}
	if st, _ := s.Routes[2].Handler.(*Static); st == nil || st.Root != filepath.Join(root, "www") || st.Index[0] != "index.html" {
		t.Errorf("static route: %+v", st)
	}
	if s.Routes[2].Line != 26 {
		t.Errorf("static route line = %d, want 26", s.Routes[2].Line)
	}
}

func TestErrorsAreLocated(t *testing.T) {
	root := t.TempDir()
	www := filepath.Join(root, "www")
	os.Mkdir(www, 0o755)
	cases := []struct {
		name, src, want string
	}{
		{"unknown key", "listen = [\":1\"]\nlisten_tls = 1\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n",
			`:2:1: unknown key "listen_tls"`},
		{"unknown key in handler", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\", indx = \"a.html\" }\n",
			`:3:44: unknown key "routes.handler.indx" (did you mean "index"?)`},
		{"unknown key in second route", "[[routes]]\npath = \"/a/\"\nhandler = { type = \"static\", root = \"WWW\" }\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\", bogus = 1 }\n",
			`:6:44: unknown key "routes.handler.bogus"`},
		{"wrong type", "listen = \":80\"\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n",
			`:1:10: listen: expected an array, got a string`},
		{"wrong type in an inline table", "[[routes]]\npath = \"/\"\nhandler = { type = \"proxy\", upstreams = \"127.0.0.1:80\" }\n",
			`:3:29: upstreams: expected an array, got a string`},
		{"array for a string in a handler", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = [\"WWW\"] }\n",
			`:3:30: root: expected a string, got an array`},
		{"wrong type under a quoted key", "php = { fpm = \"/bin/sh\", ini = { \"date.timezone\" = 5 } }\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n",
			`:1:52: php.ini."date.timezone": expected a string, got an integer`},
		{"missing root", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW/nope\" }\n",
			`:3:30: root "` + www + `/nope": no such file or directory`},
		{"no root", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\" }\n",
			`:3:1: root: missing`},
		{"path without slash", "[[routes]]\npath = \"app\"\nhandler = { type = \"static\", root = \"WWW\" }\n",
			`:2:1: route path "app" must start with "/"`},
		{"unknown handler", "[[routes]]\npath = \"/\"\nhandler = { type = \"cgi\" }\n",
			`:3:13: unknown handler type "cgi"`},
		{"bad size", "[compression]\nmin_size = \"12 parsecs\"\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n",
			`:2:13: compression.min_size: size "12 parsecs": unknown unit`},
		{"bad duration", "[[routes]]\npath = \"/\"\nhandler = { type = \"fastcgi\", root = \"WWW\", queue = { timeout = \"30\" } }\n",
			`duration "30" needs a unit`},
		{"syntax", "listen = [\":80\"\n", `:1:10: listen: array not closed: ']' is missing before the end of the file`},
		{"bad listen", "listen = [\"80\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n",
			`:1:11: listen "80": expected host:port`},
		{"bad upstream", "[[routes]]\npath = \"/\"\nhandler = { type = \"proxy\", upstreams = [\"ftp://x\"] }\n",
			`:3:42: upstream "ftp://x": only http:// and https:// upstreams are supported`},
		{"upstream host with a space", "[[routes]]\npath = \"/\"\nhandler = { type = \"proxy\", upstreams = [\"exa mple.com:80\"] }\n",
			`:3:42: upstream "exa mple.com:80": host "exa mple.com" is neither an IP address nor a host name`},
		{"upstream with credentials", "[[routes]]\npath = \"/\"\nhandler = { type = \"proxy\", upstreams = [\"http://admin:s3cret@127.0.0.1:80\"] }\n",
			`:3:42: upstream "http://…@127.0.0.1:80": an upstream address takes no user name or password ("user:password@")`},
		{"empty upstreams", "[[routes]]\npath = \"/\"\nhandler = { type = \"proxy\", upstreams = [] }\n",
			`:3:29: proxy needs at least one upstream`},
		{"duplicate route", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n",
			`:5:1: route path "/" is already used by the route on line 1`},
		{"bad max_conns", "[[routes]]\npath = \"/\"\nhandler = { type = \"fastcgi\", root = \"WWW\", max_conns = \"lots\" }\n",
			`expected "auto" or a positive integer`},
		{"control character in header value (RFC 9110 section 5.5)", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\", headers = { X-A = \"a\\r\\nSet-Cookie: x=1\" } }\n",
			`:3:62: header X-A: value "a\r\nSet-Cookie: x=1" has a control character`},
		{"control character in cache_control (RFC 9110 section 5.5)", "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\", cache_control = \"max-age=60\\nX: y\" }\n",
			`cache_control "max-age=60\nX: y" has a control character`},
		{"host_header not a host", "[[routes]]\npath = \"/\"\nhandler = { type = \"proxy\", upstreams = [\"127.0.0.1:1\"], host_header = \"a\\r\\nX: y\" }\n",
			`host_header "a\r\nX: y" must be a host name`},
		{"NUL in split_path", "[[routes]]\npath = \"/\"\nhandler = { type = \"fastcgi\", root = \"WWW\", split_path = [\".php\\u0000\"] }\n",
			`:3:59: split_path ".php\x00" must be an extension like ".php"`},
		{"fallback not a script", "[[routes]]\npath = \"/\"\nhandler = { type = \"fastcgi\", root = \"WWW\", fallback = \"/index.html\" }\n",
			`:3:45: fallback "/index.html" must be the path of a script under the root`},
		{"fallback with a dot segment", "[[routes]]\npath = \"/\"\nhandler = { type = \"fastcgi\", root = \"WWW\", fallback = \"/../index.php\" }\n",
			`fallback "/../index.php" must be the path of a script under the root`},
		{"bad name", "server_names = [\"example.org:80\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n",
			`:1:17: server name "example.org:80": a server name has no port`},
		{"internationalized name", "server_names = [\"b\u00fccher.example\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n",
			`:1:17: server name "bücher.example": character 'ü' is not allowed in a host name; write an internationalized name in its ASCII form, "xn--bcher-kva.example"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(root, strings.ReplaceAll(c.name, " ", "_")+".toml")
			os.WriteFile(f, []byte(strings.ReplaceAll(c.src, "WWW", "www")), 0o644)
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

// loadChecked is what arka does: Load, then CheckEnvironment.
func loadChecked(path string) ([]*Site, error) {
	sites, err := Load(path)
	if err != nil {
		return nil, err
	}
	return sites, CheckEnvironment(sites)
}

// Load reads the site files and nothing else: a missing root, a missing
// php-fpm and a log directory that does not exist are found by
// CheckEnvironment (located like any other mistake), and a listen host
// name is not resolved (a board may boot before its network is up).
func TestLoadDoesNoIO(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "site.toml")
	src := `listen = ["arka-test-name.invalid:8080"]
php = { fpm = "/nonexistent/php-fpm" }
[log]
enabled = true
path = "/nonexistent/dir/access.log"
[[routes]]
path = "/"
handler = { type = "static", root = "/nonexistent/www", fallback = "/index.html" }
[[routes]]
path = "/app/"
handler = { type = "fastcgi", root = "/nonexistent/app" }
`
	os.WriteFile(f, []byte(src), 0o644)
	sites, err := Load(f)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := sites[0].Listen[0]; got != (ListenAddr{"arka-test-name.invalid", 8080}) {
		t.Errorf("listen %q", got)
	}
	err = CheckEnvironment(sites)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("CheckEnvironment: %v", err)
	}
	want := []string{
		f + `:2:9: fpm "/nonexistent/php-fpm": no such file or directory`,
		f + `:5:8: log path /nonexistent/dir/access.log: directory /nonexistent/dir: no such file or directory`,
		f + `:8:30: root "/nonexistent/www": no such file or directory`,
		f + `:11:31: root "/nonexistent/app": no such file or directory`,
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CheckEnvironment:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCrossSiteConflicts(t *testing.T) {
	root := t.TempDir()
	www := filepath.Join(root, "www")
	os.Mkdir(www, 0o755)
	write := func(name, src string) {
		os.WriteFile(filepath.Join(root, name), []byte(strings.ReplaceAll(src, "WWW", www)), 0o644)
	}
	route := "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"WWW\" }\n"
	write("a.toml", "default = true\nserver_names = [\"a.example\", \"Shared.Example\"]\nlisten = [\"127.0.0.1:8080\"]\n"+route)
	write("b.toml", "default = true\nserver_names = [\"shared.example\"]\nlisten = [\"127.0.0.1:8080\"]\n"+route)
	_, err := Load(root)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		filepath.Join(root, "b.toml") + ":1:1: a second default site for 127.0.0.1:8080 (the first is " + filepath.Join(root, "a.toml") + ":1)",
		filepath.Join(root, "b.toml") + `:2:17: server name "shared.example" on 127.0.0.1:8080 is already claimed by ` + filepath.Join(root, "a.toml") + ":2",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
}

// TestUnreachableNamelessSite: a site without server_names is only ever
// the default of its address; a second one (or one beside a default site)
// would silently never be served.
func TestUnreachableNamelessSite(t *testing.T) {
	root := t.TempDir()
	www := filepath.Join(root, "www")
	os.Mkdir(www, 0o755)
	route := "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"" + www + "\" }\n"
	for name, files := range map[string][2]string{
		"two nameless":            {"listen = [\"127.0.0.1:8080\"]\n", "listen = [\"127.0.0.1:8080\"]\n"},
		"nameless beside default": {"default = true\nserver_names = [\"a.example\"]\nlisten = [\"127.0.0.1:8080\"]\n", "listen = [\"127.0.0.1:8080\"]\n"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "1.toml"), []byte(files[0]+route), 0o644)
		os.WriteFile(filepath.Join(dir, "2.toml"), []byte(files[1]+route), 0o644)
		_, err := Load(dir)
		want := filepath.Join(dir, "2.toml") + ":1:11: a site without server_names answers only as the default for 127.0.0.1:8080, and " + filepath.Join(dir, "1.toml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v\nwant %q", name, err, want)
		}
	}
	// One nameless site per address is fine, and so is one on another address.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "1.toml"), []byte("listen = [\"127.0.0.1:8080\"]\n"+route), 0o644)
	os.WriteFile(filepath.Join(dir, "2.toml"), []byte("listen = [\"127.0.0.1:8081\"]\n"+route), 0o644)
	if _, err := Load(dir); err != nil {
		t.Errorf("nameless sites on different addresses: %v", err)
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"512B": 512, "64KiB": 65536, "1MB": 1000000, "1.5MiB": 1572864, "10k": 10240, "0": 0, "7": 7} {
		got, err := ParseSize(in)
		if err != nil || int64(got) != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1B", "1.5B", "KiB", "1 parsec", "99999999999TB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

// TestHealthPath: health_path defaults to "/" and must be a path.
func TestHealthPath(t *testing.T) {
	dir := t.TempDir()
	routes := "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"" + dir + "\" }\n"
	s, err := Parse(filepath.Join(dir, "a.toml"), []byte("listen = [\":80\"]\n"+routes))
	if err != nil || s.HealthPath != "/" {
		t.Fatalf("default: %v", err)
	}
	s, err = Parse(filepath.Join(dir, "a.toml"), []byte("health_path = \"/healthz?full=1\"\n"+routes))
	if err != nil || s.HealthPath != "/healthz?full=1" {
		t.Fatalf("set: %v", err)
	}
	_, err = Parse(filepath.Join(dir, "a.toml"), []byte("listen = [\":80\"]\nhealth_path = \"healthz\"\n"+routes))
	if err == nil || !strings.Contains(err.Error(), "a.toml:2:1: health_path \"healthz\"") {
		t.Errorf("bad path: %v", err)
	}
}
