package deploy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
)

// device is a Store behind an httptest server with Basic auth, its check
// the real configuration loader (as `arka -t`), its Activate recording the
// directory Arka would serve.
type device struct {
	store  *Store
	client *Client
	active []string
}

func newDevice(t *testing.T) *device {
	d := &device{}
	d.store = &Store{
		Dir: t.TempDir(),
		Check: func(ctx context.Context, dir string) ([]string, error) {
			_, err := config.Load(filepath.Join(dir, "sites"))
			var ce config.Errors
			if errors.As(err, &ce) {
				var out []string
				for _, e := range ce {
					out = append(out, e.Error())
				}
				return out, nil
			}
			return nil, err
		},
		Activate: func(dir string) error {
			d.active = append(d.active, dir)
			return nil
		},
	}
	mux := http.NewServeMux()
	d.store.Register(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "gokrazy" || p != "pw" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	d.client = &Client{Base: srv.URL, Password: "pw", HTTP: srv.Client()}
	return d
}

func writeSite(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const siteToml = "listen = [\"127.0.0.1:8080\"]\n\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"../www\" }\n"

func (d *device) deploy(t *testing.T, dir string) (*Result, Plan, error) {
	t.Helper()
	files, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.client.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plan := NewPlan(files, st)
	res, err := d.client.Deploy(context.Background(), dir, "tester@host", plan, nil)
	return res, plan, err
}

func TestDeployRefuseRollback(t *testing.T) {
	d := newDevice(t)
	// PHP's data directory, in Arka's state directory beside the
	// generations (as on the device: /perm/arka/state/php/data).
	data := filepath.Join(d.store.Dir, "state", "php", "data", "app.sqlite")
	os.MkdirAll(filepath.Dir(data), 0o700)
	if err := os.WriteFile(data, []byte("SQLite format 3\x00rows"), 0o600); err != nil {
		t.Fatal(err)
	}
	dataBefore, _ := os.Stat(data)
	site := t.TempDir()
	big := strings.Repeat("x", 100000)
	writeSite(t, site, map[string]string{
		"sites/main.toml": siteToml, "www/index.html": "v1", "www/big.bin": big, ".git/HEAD": "ignored",
	})
	res, plan, err := d.deploy(t, site)
	if err != nil {
		t.Fatal(err)
	}
	if res.Generation.ID != 1 || len(plan.Send) != 3 || res.Generation.Files != 3 {
		t.Fatalf("first deploy: %+v, sent %d files", res.Generation, len(plan.Send))
	}
	if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", "www", "index.html")); string(b) != "v1" {
		t.Fatalf("site/www/index.html = %q", b)
	}
	// Only the changed file travels.
	writeSite(t, site, map[string]string{"www/index.html": "v2"})
	res, plan, err = d.deploy(t, site)
	if err != nil {
		t.Fatal(err)
	}
	if res.Generation.ID != 2 || len(plan.Send) != 1 || plan.Send[0].Path != "www/index.html" || res.Generation.Sent != 2 {
		t.Fatalf("second deploy: %+v, sent %+v", res.Generation, plan.Send)
	}
	if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", "www", "big.bin")); string(b) != big {
		t.Fatal("the unchanged file is not in generation 2")
	}
	// A broken site is refused with file:line:col and nothing changes.
	writeSite(t, site, map[string]string{"sites/main.toml": siteToml + "bogus = 1\n", "www/index.html": "v3"})
	_, _, err = d.deploy(t, site)
	var re *RefusedError
	if !errors.As(err, &re) || len(re.Errors) != 1 || re.Errors[0] != `sites/main.toml:6:1: unknown key "routes.bogus"` {
		t.Fatalf("broken site: %v", err)
	}
	st, _ := d.client.State(context.Background())
	if st.Current.ID != 2 || st.Previous.ID != 1 || !strings.Contains(st.LastError, "bogus") {
		t.Fatalf("state after a refused deploy: %+v", st)
	}
	if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", "www", "index.html")); string(b) != "v2" {
		t.Fatalf("a refused deploy changed the site: %q", b)
	}
	// Rollback to generation 1, and back again.
	r, err := d.client.Rollback(context.Background())
	if err != nil || r.Generation.ID != 1 {
		t.Fatalf("rollback: %+v %v", r, err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", "www", "index.html")); string(b) != "v1" {
		t.Fatalf("after rollback: %q", b)
	}
	r, err = d.client.Rollback(context.Background())
	if err != nil || r.Generation.ID != 2 {
		t.Fatalf("second rollback: %+v %v", r, err)
	}
	if len(d.active) != 4 {
		t.Errorf("Arka was asked to reload %d times, want 4 (2 deploys, 2 rollbacks)", len(d.active))
	}
	// A third good deploy prunes the oldest generation.
	writeSite(t, site, map[string]string{"sites/main.toml": siteToml, "www/index.html": "v4"})
	if _, _, err := d.deploy(t, site); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(d.store.Dir, "generations"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "2 2.json 3 3.json" {
		t.Errorf("generations on disk: %v, want 2 and 3 only", names)
	}
	// Three deploys, a refusal, two rollbacks and a pruning later, PHP's
	// data is as it was.
	if b, err := os.ReadFile(data); err != nil || string(b) != "SQLite format 3\x00rows" {
		t.Errorf("PHP's data after the deploys: %q %v", b, err)
	} else if st, _ := os.Stat(data); !st.ModTime().Equal(dataBefore.ModTime()) || st.Mode() != dataBefore.Mode() {
		t.Errorf("PHP's data was rewritten: %v %v, was %v %v", st.ModTime(), st.Mode(), dataBefore.ModTime(), dataBefore.Mode())
	}
}

func TestDeployWrongPasswordAndHostileStreams(t *testing.T) {
	d := newDevice(t)
	c := *d.client
	c.Password = "wrong"
	if _, err := c.State(context.Background()); !errors.Is(err, ErrWrongPassword) {
		t.Errorf("wrong password: %v", err)
	}
	for _, p := range []string{"../etc/passwd", "/abs", "a/../../b", "a//b", ".", ManifestName, "a\\b"} {
		if CheckPath(p) == nil {
			t.Errorf("CheckPath(%q) accepted", p)
		}
	}
	// A manifest with a file the device does not have and that is not sent.
	plan := Plan{Files: []File{{Path: "sites/a.toml", Size: 3, SHA256: strings.Repeat("ab", 32)}}}
	_, err := d.client.Deploy(context.Background(), t.TempDir(), "x", plan, nil)
	if err == nil || !strings.Contains(err.Error(), "not sent") {
		t.Errorf("missing content: %v", err)
	}
	// Content that does not match its hash.
	dir := t.TempDir()
	writeSite(t, dir, map[string]string{"sites/a.toml": "abc"})
	plan = Plan{Files: []File{{Path: "sites/a.toml", Size: 3, SHA256: strings.Repeat("ab", 32)}}}
	plan.Send = plan.Files
	_, err = d.client.Deploy(context.Background(), dir, "x", plan, nil)
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("wrong hash: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(d.store.Dir, "generations")); len(ents) != 0 {
		t.Errorf("refused deploys left %d entries", len(ents))
	}
	if _, err := d.client.Rollback(context.Background()); err == nil || !strings.Contains(err.Error(), "no previous generation") {
		t.Errorf("rollback without a previous generation: %v", err)
	}
}

// TestReceivingState: while a deploy is being received (here, while the
// device checks it), State says so and OnChange has told the status page;
// afterwards it does not, refused or not.
func TestReceivingState(t *testing.T) {
	d := newDevice(t)
	var mu sync.Mutex // the store runs in the test server's goroutines
	var during State
	var changes int
	d.store.OnChange = func() { mu.Lock(); changes++; mu.Unlock() }
	check := d.store.Check
	d.store.Check = func(ctx context.Context, dir string) ([]string, error) {
		mu.Lock()
		during = d.store.State()
		mu.Unlock()
		return check(ctx, dir)
	}
	site := t.TempDir()
	writeSite(t, site, map[string]string{"sites/main.toml": siteToml, "www/index.html": "v1"})
	if _, _, err := d.deploy(t, site); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if during.Receiving.IsZero() || time.Since(during.Receiving) > time.Minute {
		t.Errorf("during the deploy: Receiving = %v", during.Receiving)
	}
	if st := d.store.State(); !st.Receiving.IsZero() {
		t.Errorf("after the deploy: Receiving = %v", st.Receiving)
	}
	if changes < 2 {
		t.Errorf("OnChange called %d times, want at the start and at the end", changes)
	}
	mu.Unlock()
	writeSite(t, site, map[string]string{"sites/main.toml": siteToml + "bogus = 1\n"})
	if _, _, err := d.deploy(t, site); err == nil {
		t.Fatal("broken site accepted")
	}
	if st := d.store.State(); !st.Receiving.IsZero() {
		t.Errorf("after a refused deploy: Receiving = %v", st.Receiving)
	}
}
