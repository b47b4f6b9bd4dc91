package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arkaweb/arka/appliance/devices"
)

// TestConfirmFirstUse: on a terminal, the first connection shows the
// key's fingerprint and pins it only on "yes"; nothing reaches the API
// before that, and a pinned device is not asked about again.
func TestConfirmFirstUse(t *testing.T) {
	requests := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests++ }))
	defer srv.Close()
	want := devices.Fingerprint(srv.Certificate())
	hostport := strings.TrimPrefix(srv.URL, "https://")
	pin := filepath.Join(t.TempDir(), "garden", "device-cert.sha256")

	var out strings.Builder
	err := confirmFirstUse("garden", hostport, pin, strings.NewReader("no\n"), &out)
	if err == nil || !strings.Contains(err.Error(), "nothing was sent") || !strings.Contains(out.String(), "SHA256:"+want) {
		t.Errorf("answered no: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(pin); !os.IsNotExist(err) {
		t.Errorf("pinned without a yes: %v", err)
	}
	out.Reset()
	if err := confirmFirstUse("garden", hostport, pin, strings.NewReader("yes\n"), &out); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(pin); strings.TrimSpace(string(b)) != want {
		t.Errorf("pin file %q, want %s", b, want)
	}
	out.Reset()
	if err := confirmFirstUse("garden", hostport, pin, strings.NewReader(""), &out); err != nil || out.Len() != 0 {
		t.Errorf("asked again: %v %q", err, out.String())
	}
	if requests != 0 {
		t.Errorf("%d requests before the key was confirmed", requests)
	}
}

// TestLANName: README's "--host garden" reaches garden.local when only
// mDNS knows the device; names the resolver knows, addresses and dotted
// names stay as given.
func TestLANName(t *testing.T) {
	known := map[string]bool{"garden.local": true, "router": true, "router.local": true}
	lookup := func(_ context.Context, h string) ([]string, error) {
		if known[h] {
			return []string{"192.0.2.1"}, nil
		}
		return nil, errors.New("no such host")
	}
	for in, want := range map[string]string{"garden": "garden.local", "router": "router", "garden.example.net": "garden.example.net", "192.0.2.7": "192.0.2.7", "fe80::1": "fe80::1", "orchard": "orchard"} {
		if got := lanName(in, lookup); got != want {
			t.Errorf("lanName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFirstUseOffTerminal (QA A13): off a terminal, a device whose key is
// not pinned is refused before anything is sent, with the way to pin it;
// --fingerprint pins it only when the device presents that key; --yes
// still trusts the first key explicitly.
func TestFirstUseOffTerminal(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer srv.Close()
	want := devices.Fingerprint(srv.Certificate())
	hostport := strings.TrimPrefix(srv.URL, "https://")
	dir := t.TempDir()
	t.Setenv("ARKA_DEVICES", dir)
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pin := filepath.Join(dir, "garden", "device-cert.sha256")
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	stdin := os.Stdin
	os.Stdin = null // not a terminal
	defer func() { os.Stdin = stdin }()

	try := func(d deviceFlags) error {
		d.host, d.name, d.pwFile = hostport, "garden", pwFile
		dev, err := d.device()
		if err != nil {
			return err
		}
		resp, err := dev.http.Get(dev.base + "/arka/update")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	err = try(deviceFlags{})
	if err == nil || !strings.Contains(err.Error(), "--fingerprint SHA256:") || !strings.Contains(err.Error(), "nothing was sent") {
		t.Errorf("unpinned device off a terminal: err = %v, want a refusal naming --fingerprint", err)
	}
	other := strings.Repeat("ab", 32)
	if err := try(deviceFlags{fingerprint: "SHA256:" + other}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("wrong --fingerprint: err = %v, want a refusal showing the key presented", err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached an unpinned device", n)
	}
	if _, err := os.Stat(pin); !os.IsNotExist(err) {
		t.Fatalf("pinned without a confirmation: %v", err)
	}
	if err := try(deviceFlags{fingerprint: "SHA256:" + strings.ToUpper(want)}); err != nil {
		t.Fatalf("matching --fingerprint: %v", err)
	}
	if b, _ := os.ReadFile(pin); strings.TrimSpace(string(b)) != want {
		t.Errorf("pin file %q, want %s", b, want)
	}
	if err := try(deviceFlags{}); err != nil {
		t.Errorf("pinned device: %v", err)
	}
	os.Remove(pin)
	if err := try(deviceFlags{yes: true}); err != nil {
		t.Errorf("--yes: %v", err)
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}
