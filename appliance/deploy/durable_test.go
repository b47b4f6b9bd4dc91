package deploy

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// TestDeployDurableBeforeLive: by the time Arka is asked to serve a new
// generation, every file written for it and every directory of it (and
// the generations directory that names it) went through fsync: a power
// cut after "generation N is live" cannot leave zero-length files.
func TestDeployDurableBeforeLive(t *testing.T) {
	var mu sync.Mutex
	synced := map[string]bool{}
	old := fsync
	fsync = func(f *os.File) error {
		mu.Lock()
		synced[f.Name()] = true
		mu.Unlock()
		return old(f)
	}
	t.Cleanup(func() { fsync = old })
	d := newDevice(t)
	var missing []string
	d.store.Activate = func(dir string) error {
		mu.Lock()
		defer mu.Unlock()
		gen, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return err
		}
		// The generation was built under N.tmp and renamed: its entries
		// were synced under that name.
		tmp := gen + ".tmp"
		filepath.Walk(gen, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(gen, p)
			if !synced[filepath.Join(tmp, rel)] && !synced[p] {
				missing = append(missing, rel)
			}
			return nil
		})
		if !synced[filepath.Dir(gen)] {
			missing = append(missing, "generations/ (after the rename)")
		}
		return nil
	}
	site := t.TempDir()
	writeSite(t, site, map[string]string{"sites/main.toml": siteToml, "www/index.html": "v1", "www/a/b/c.txt": "deep"})
	if _, _, err := d.deploy(t, site); err != nil {
		t.Fatal(err)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("not synced before the switch: %v", missing)
	}
}

// TestRedeployRepairsDamagedGeneration: a file of the current generation
// whose size no longer matches its manifest (a crash before this fix left
// zero-length files) is not offered to the client as present; the next
// deploy of the same directory sends it and the new generation is whole.
func TestRedeployRepairsDamagedGeneration(t *testing.T) {
	d := newDevice(t)
	site := t.TempDir()
	big := strings.Repeat("x", 50000)
	writeSite(t, site, map[string]string{"sites/main.toml": siteToml, "www/index.html": "v1", "www/big.bin": big})
	if _, _, err := d.deploy(t, site); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sites/main.toml", "www/big.bin"} {
		if err := os.Truncate(filepath.Join(d.store.Dir, "site", filepath.FromSlash(p)), 0); err != nil {
			t.Fatal(err)
		}
	}
	res, plan, err := d.deploy(t, site)
	var re *RefusedError
	if errors.As(err, &re) {
		t.Fatalf("re-deploy refused: %v (sent %+v)", re.Errors, plan.Send)
	}
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, f := range plan.Send {
		sent = append(sent, f.Path)
	}
	sort.Strings(sent)
	if strings.Join(sent, " ") != "sites/main.toml www/big.bin" {
		t.Errorf("re-deploy sent %v, want the two damaged files", sent)
	}
	if res.Generation.ID != 2 {
		t.Errorf("generation %d", res.Generation.ID)
	}
	for p, want := range map[string]string{"sites/main.toml": siteToml, "www/big.bin": big, "www/index.html": "v1"} {
		if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", filepath.FromSlash(p))); string(b) != want {
			t.Errorf("%s after the repair: %d bytes, want %d", p, len(b), len(want))
		}
	}
}

// TestDeployRefusesDamagedReuse: a client that does not send a file the
// device's copy of which is damaged (it planned with an older state) is
// told to deploy again, and the damaged copy is no longer offered.
func TestDeployRefusesDamagedReuse(t *testing.T) {
	d := newDevice(t)
	site := t.TempDir()
	writeSite(t, site, map[string]string{"sites/main.toml": siteToml, "www/index.html": "v1"})
	if _, _, err := d.deploy(t, site); err != nil {
		t.Fatal(err)
	}
	files, _ := Scan(site)
	st := d.store.State()
	plan := NewPlan(files, &st)
	os.Truncate(filepath.Join(d.store.Dir, "site", "www", "index.html"), 0)
	_, err := d.client.Deploy(t.Context(), site, "x", plan, nil)
	if err == nil || !strings.Contains(err.Error(), "www/index.html") || !strings.Contains(err.Error(), "deploy again") {
		t.Fatalf("deploy reusing a damaged file: %v", err)
	}
	if _, _, err := d.deploy(t, site); err != nil {
		t.Fatalf("the deploy after: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", "www", "index.html")); string(b) != "v1" {
		t.Errorf("index.html = %q", b)
	}
}
