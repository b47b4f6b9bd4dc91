package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeployWhileArkaIsNotRunning: Arka stopped, in its restart backoff or
// crash-looping cannot reload, but a site that passed the check is made
// current anyway (Arka reads it when it starts), for a deploy and a
// rollback; a running Arka that refuses the reload still gets the old
// site back.
func TestDeployWhileArkaIsNotRunning(t *testing.T) {
	d := newDevice(t)
	site := t.TempDir()
	writeSite(t, site, map[string]string{"sites/main.toml": siteToml, "www/index.html": "v1"})
	if _, _, err := d.deploy(t, site); err != nil {
		t.Fatal(err)
	}
	down := fmt.Errorf("%w: it exited (exit status 1) and restarts in 8s", ErrNotRunning)
	d.store.Activate = func(dir string) error { return down }
	writeSite(t, site, map[string]string{"www/index.html": "v2"})
	res, _, err := d.deploy(t, site)
	if err != nil {
		t.Fatalf("deploy while Arka is not running: %v", err)
	}
	if res.Generation.ID != 2 || !strings.Contains(res.NotServed, "restarts in 8s") || !strings.Contains(res.Message, "when it starts") {
		t.Errorf("result: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", "www", "index.html")); string(b) != "v2" {
		t.Errorf("current site: %q, want v2", b)
	}
	st, _ := d.client.State(context.Background())
	if st.Current.ID != 2 || st.Previous == nil || st.Previous.ID != 1 {
		t.Errorf("state: %+v", st)
	}
	r, err := d.client.Rollback(context.Background())
	if err != nil || r.Generation.ID != 1 || r.NotServed == "" {
		t.Fatalf("rollback while Arka is not running: %+v %v", r, err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", "www", "index.html")); string(b) != "v1" {
		t.Errorf("after the rollback: %q, want v1", b)
	}
	// A running Arka that refuses: the link goes back.
	var calls []string
	d.store.Activate = func(dir string) error {
		calls = append(calls, dir)
		if len(calls) == 1 {
			return errors.New("the server refused the new configuration")
		}
		return nil
	}
	writeSite(t, site, map[string]string{"www/index.html": "v3"})
	if _, _, err := d.deploy(t, site); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("refused reload: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", "www", "index.html")); string(b) != "v1" {
		t.Errorf("after a refused reload: %q, want v1", b)
	}
}

// TestDeployLeavesArkaNotReady: a reload that Arka took but that left it
// not ready (an address the new site cannot bind) refuses the deploy: the
// client gets the problems as the site's mistakes and the old generation
// is current and reloaded again.
func TestDeployLeavesArkaNotReady(t *testing.T) {
	d := newDevice(t)
	site := t.TempDir()
	writeSite(t, site, map[string]string{"sites/main.toml": siteToml, "www/index.html": "v1"})
	if _, _, err := d.deploy(t, site); err != nil {
		t.Fatal(err)
	}
	var calls int
	d.store.Activate = func(dir string) error {
		calls++
		if calls == 1 {
			return &NotReadyError{Problems: []string{"sites/main.toml:1:11: cannot listen on :8443: address already in use"}}
		}
		return nil
	}
	writeSite(t, site, map[string]string{"www/index.html": "v2"})
	_, _, err := d.deploy(t, site)
	var re *RefusedError
	if !errors.As(err, &re) || len(re.Errors) != 1 || re.Errors[0] != "sites/main.toml:1:11: cannot listen on :8443: address already in use" {
		t.Fatalf("deploy that left Arka not ready: %v", err)
	}
	if calls != 2 {
		t.Errorf("Activate called %d times, want 2 (the new site, then the old one again)", calls)
	}
	if b, _ := os.ReadFile(filepath.Join(d.store.Dir, "site", "www", "index.html")); string(b) != "v1" {
		t.Errorf("after the refusal: %q, want v1", b)
	}
	st, _ := d.client.State(context.Background())
	if st.Current.ID != 1 || !strings.Contains(st.LastError, "8443") {
		t.Errorf("state: current %d, last error %q", st.Current.ID, st.LastError)
	}
}
