package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestGolden")

// TestGolden loads each case under testdata/golden, a site file NAME.toml
// or a directory NAME/ of site files, and compares the result with
// NAME.golden (the normalized configuration, every default applied, as
// JSON) or NAME.err (the errors, one "file:line:col: message" a line).
// Load only: the machine is not looked at (see CheckEnvironment), so a
// root need not exist. `go test ./config -run Golden -update` rewrites
// the files from what Load returns now; review the diff.
func TestGolden(t *testing.T) {
	entries, err := os.ReadDir("testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() && !strings.HasSuffix(name, ".toml") {
			continue
		}
		name = strings.TrimSuffix(name, ".toml")
		n++
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata/golden", e.Name())
			sites, err := Load(path)
			var got, ext string
			if err != nil {
				if _, ok := err.(Errors); !ok {
					t.Fatalf("Load returned %T, not Errors: %v", err, err)
				}
				got, ext = err.Error()+"\n", ".err"
			} else {
				got, ext = dumpSites(t, sites, abs), ".golden"
			}
			base := filepath.Join("testdata/golden", name)
			if *update {
				os.Remove(base + ".err")
				os.Remove(base + ".golden")
				if err := os.WriteFile(base+ext, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(base + ext)
			if err != nil {
				other := map[string]string{".err": ".golden", ".golden": ".err"}[ext]
				if _, e := os.Stat(base + other); e == nil {
					t.Fatalf("expected %s%s, but Load gave%s:\n%s", name, other, map[string]string{".err": " errors", ".golden": " no error"}[ext], got)
				}
				t.Fatalf("%v (run go test ./config -run Golden -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s%s differs (go test ./config -run Golden -update rewrites it):\n%s", name, ext, lineDiff(string(want), got))
			}
		})
	}
	if n < 10 {
		t.Errorf("only %d golden cases", n)
	}
}

// dumpSites is the normalized form of sites: JSON of every field, each
// route's handler with its type, and the golden directory's absolute
// path written $GOLDEN so that the files do not depend on the checkout.
func dumpSites(t *testing.T, sites []*Site, abs string) string {
	t.Helper()
	type route struct {
		Path      string
		Line, Col int
		Type      string
		Handler   Handler
		Options   RouteOptions
	}
	type site struct {
		*Site
		Routes []route
	}
	var out []site
	for _, s := range sites {
		d := site{Site: s}
		for _, r := range s.Routes {
			d.Routes = append(d.Routes, route{r.Path, r.Line, r.Col, r.Handler.Type(), r.Handler, r.Options})
		}
		out = append(out, d)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(b.String(), abs, "$GOLDEN")
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
			shown++
		}
	}
	return b.String()
}

// TestComplete: a handler built in Go gets the defaults and checks of a
// site file's.
func TestComplete(t *testing.T) {
	p := &Proxy{Upstreams: []string{"http://127.0.0.1", "unix:/run/a.sock"}, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}}
	if err := Complete(p); err != nil {
		t.Fatal(err)
	}
	if p.ConnectTimeout.D() != DefaultProxyConnect || p.LB != DefaultProxyLB || !p.ForwardHeadersEnabled() ||
		len(p.Targets) != 2 || p.Targets[0].Address != "127.0.0.1:80" || p.Targets[1].Network != "unix" ||
		len(p.TrustedProxies) != 1 || p.TrustedProxies[0].Bits() != 32 {
		t.Errorf("proxy not completed: %+v", p)
	}
	f := &FastCGI{Root: "/srv/app"}
	if err := Complete(f); err != nil {
		t.Fatal(err)
	}
	if !f.UsesPHP() || f.Index[0] != DefaultFastCGIIndex || f.SplitPath[0] != DefaultSplitPath || f.ReadTimeout.D() != DefaultFastCGIRead {
		t.Errorf("fastcgi not completed: %+v", f)
	}
	err := Complete(&FastCGI{Address: "unix:rel.sock", Root: "/srv/app"})
	if err == nil || err.Error() != `fastcgi: address "unix:rel.sock": unix socket path must be absolute` {
		t.Errorf("bad address: %v", err)
	}
}
