package bench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/tests/bench/harness"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the generators")

// TestGoldenConfigs regenerates every server's configuration for the
// golden layout (the seed's paths and ports) and compares it with
// testdata/. After a deliberate change: go test ./tests/bench -update, and
// review the diff.
func TestGoldenConfigs(t *testing.T) {
	for _, c := range harness.Configs(harness.GoldenLayout()) {
		path := filepath.Join("testdata", c.Name)
		if *update {
			if err := os.WriteFile(path, c.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (run go test ./tests/bench -update to create it)", err)
			continue
		}
		if !bytes.Equal(c.Data, want) {
			t.Errorf("%s differs from the generator's output (go test ./tests/bench -update rewrites it):\n%s", path, firstDiff(string(want), string(c.Data)))
		}
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  golden:    %q\n  generated: %q", i+1, a, b)
		}
	}
	return "(line endings differ)"
}

// TestServersAcceptConfigs writes a real run's configurations (temporary
// directory, free ports, real certificate) and asks each installed server
// to check its own: nginx -t, apache2 -t, caddy validate, lighttpd -tt,
// php-fpm -t, and Arka's config loader and dry run. Nothing is started.
func TestServersAcceptConfigs(t *testing.T) {
	// Not t.TempDir: its parent is private, and the servers' workers run
	// as nobody when the tests run as root.
	work, err := os.MkdirTemp("", "arkabench-configs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	ports, err := harness.FreePorts(11)
	if err != nil {
		t.Fatal(err)
	}
	l, err := harness.NewLayout(work, ports, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.WriteCert(l.Cert, l.Key); err != nil {
		t.Fatal(err)
	}
	for _, c := range harness.Configs(l) {
		if err := os.WriteFile(filepath.Join(work, c.Name), c.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range harness.AllServers {
		for _, d := range []string{l.Dir(string(s)), l.Dir(harness.PHPPool(s)), filepath.Join(l.Dir(string(s)), "deflate-cache")} {
			if err := os.MkdirAll(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
	}
	tools := map[string]*harness.Tool{}
	for _, tl := range harness.Tools() {
		tools[tl.Name] = tl
	}
	check := func(label, name string, env []string, args ...string) {
		t.Run(label, func(t *testing.T) {
			tl := tools[name]
			if !tl.Find() {
				t.Skipf("%s is not installed (%s): %s", name, strings.Join(tl.Missing, ", "), harness.InstallLine([]*harness.Tool{tl}))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, tl.Path, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Dir = work
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", tl.Path, strings.Join(args, " "), err, out)
			}
		})
	}
	nginxDir := l.Dir("nginx")
	check("nginx", "nginx", nil, "-t", "-q", "-p", nginxDir+"/", "-e", filepath.Join(nginxDir, "error.log"), "-c", filepath.Join(work, "nginx.conf"))
	check("apache", "apache", nil, "-t", "-f", filepath.Join(work, "apache2.conf"))
	caddyDir := l.Dir("caddy")
	check("caddy", "caddy", []string{"HOME=" + caddyDir, "XDG_DATA_HOME=" + caddyDir, "XDG_CONFIG_HOME=" + caddyDir},
		"validate", "--config", filepath.Join(work, "Caddyfile"), "--adapter", "caddyfile")
	check("lighttpd", "lighttpd", nil, "-tt", "-f", filepath.Join(work, "lighttpd.conf"))
	for _, s := range harness.AllServers {
		check("php-fpm/"+harness.PHPPool(s), "php-fpm", nil, "-t", "-y", filepath.Join(work, harness.PHPPool(s)+".conf"))
	}

	t.Run("arka", func(t *testing.T) {
		file := filepath.Join(work, "arka.toml")
		sites, err := config.Load(file)
		if err != nil {
			t.Fatalf("the seed's site file, as generated, does not load: %v", err)
		}
		srv := server.New(server.Options{StateDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err := srv.Check(sites); err != nil {
			if strings.Contains(err.Error(), "not implemented yet") {
				t.Skipf("arka -t: %v (the benchmark skips those Arka tests, and says so)", err)
			}
			t.Fatal(err)
		}
	})
}
