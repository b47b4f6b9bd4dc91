package devices

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	for host, want := range map[string]string{"arka": "arka", "garden.local": "garden", "Garden.local:8443": "garden", "pi.example.net": "pi", "garden.local.": "garden"} {
		if got, err := Name(host); err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", host, got, err, want)
		}
	}
	for _, host := range []string{"192.168.1.20", "[fe80::1]:8443", "bad_name"} {
		if _, err := Name(host); err == nil {
			t.Errorf("Name(%q) accepted", host)
		}
	}
}

func TestReadPasswordSaysHowToRecover(t *testing.T) {
	t.Setenv("ARKA_DEVICES", t.TempDir())
	_, path, err := ReadPassword("garden", "")
	if err == nil || !strings.Contains(err.Error(), "copy that file here") || !strings.Contains(err.Error(), path) {
		t.Errorf("missing password: %v", err)
	}
	if err := WriteFile(path, []byte("secret-password-1\n")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	if st, _ := os.Stat(filepath.Dir(path)); st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v", st.Mode())
	}
	if pw, _, err := ReadPassword("garden", ""); err != nil || pw != "secret-password-1" {
		t.Errorf("%q %v", pw, err)
	}
}

// The first connection pins the key; a server with another key is refused
// before any request is sent.
func TestPinnedClient(t *testing.T) {
	dir := t.TempDir()
	requests := 0
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests++ })
	a := httptest.NewTLSServer(handler)
	defer a.Close()
	b := httptest.NewUnstartedServer(handler)
	cert, err := DeviceCert(filepath.Join(dir, "device"), "garden")
	if err != nil {
		t.Fatal(err)
	}
	b.TLS = a.TLS.Clone()
	b.TLS.Certificates = append(b.TLS.Certificates[:0:0], cert)
	b.StartTLS()
	defer b.Close()

	pin := filepath.Join(dir, "garden", "device-cert.sha256")
	var announced string
	c := PinnedClient("garden", pin, func(fp string) { announced = fp })
	resp, err := c.Get(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if announced == "" || requests != 1 {
		t.Fatalf("first use: announced %q, %d requests", announced, requests)
	}
	if b, _ := os.ReadFile(pin); strings.TrimSpace(string(b)) != announced {
		t.Errorf("pin file %q", b)
	}
	c2 := PinnedClient("garden", pin, nil)
	_, err = c2.Get(b.URL)
	var ce *CertChangedError
	if !errors.As(err, &ce) || requests != 1 || !strings.Contains(err.Error(), "deleting "+pin) {
		t.Errorf("changed key: %v (requests %d)", err, requests)
	}
	// The same device key survives a reload of the files.
	again, err := DeviceCert(filepath.Join(dir, "device"), "garden")
	if err != nil || string(again.Certificate[0]) != string(cert.Certificate[0]) {
		t.Errorf("DeviceCert made a new certificate: %v", err)
	}
}
