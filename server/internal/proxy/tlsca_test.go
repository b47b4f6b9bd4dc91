package proxy

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/arkaweb/arka/config"
)

// TestTLSCAReadOnce: tls_ca is read by config.CheckEnvironment, once;
// the handler uses those certificates and does not open the file again
// (it is gone by the time the handler is built, and the upstream is
// still verified).
func TestTLSCAReadOnce(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "verified")
	}))
	defer up.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	site, err := config.Parse(filepath.Join(dir, "site.toml"), []byte(`[[routes]]
path = "/"
handler = { type = "proxy", upstreams = ["https://`+up.Listener.Addr().String()+`"], tls_ca = "ca.pem", tls_server_name = "example.com" }
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := config.CheckEnvironment([]*config.Site{site}); err != nil {
		t.Fatal(err)
	}
	os.Remove(ca)
	h, err := New("/", site.Routes[0].Handler.(*config.Proxy), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != 200 || rec.Body.String() != "verified" {
		t.Errorf("got %d %q, want 200 \"verified\"", rec.Code, rec.Body.String())
	}
}
