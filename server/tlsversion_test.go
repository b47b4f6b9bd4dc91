package server_test

import (
	"crypto/tls"
	"net/http"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

// [tls] min_version = "1.3" refuses TLS 1.2 handshakes for that site (by
// SNI) and not for another site on the same address; TLS 1.2 offers only
// ECDHE with AEAD ciphers.
func TestTLSMinVersion(t *testing.T) {
	dir := t.TempDir()
	e := servertest.Start(t, `server_names = ["modern.example"]
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
min_version = "1.3"
[[routes]]
path = "/"
handler = { type = "static", root = "`+www(t, dir, "m", "modern")+`" }
`, `default = true
server_names = ["old.example"]
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+www(t, dir, "o", "old")+`" }
`)
	dial := func(name string, maxV uint16, suites []uint16) (uint16, error) {
		c, err := tls.Dial("tcp", e.HTTPS, &tls.Config{ServerName: name, InsecureSkipVerify: true, MaxVersion: maxV, CipherSuites: suites})
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.ConnectionState().Version, nil
	}
	if _, err := dial("modern.example", tls.VersionTLS12, nil); err == nil {
		t.Error("TLS 1.2 accepted by a min_version 1.3 site")
	}
	if v, err := dial("modern.example", 0, nil); err != nil || v != tls.VersionTLS13 {
		t.Errorf("TLS 1.3 to the 1.3 site: %x %v", v, err)
	}
	if v, err := dial("old.example", tls.VersionTLS12, nil); err != nil || v != tls.VersionTLS12 {
		t.Errorf("TLS 1.2 to the default site: %x %v", v, err)
	}
	if _, err := dial("old.example", tls.VersionTLS12, []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}); err == nil {
		t.Error("a CBC cipher suite was accepted")
	}
	if _, err := dial("old.example", tls.VersionTLS11, nil); err == nil {
		t.Error("TLS 1.1 accepted")
	}
	// A client that connects by address sends no SNI and gets the
	// default site's TLS 1.2; naming the 1.3 site in Host then is a 421,
	// over HTTP/1.1 and HTTP/2, and the default site is still served.
	for _, h2 := range []bool{false, true} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		for host, want := range map[string]int{"modern.example": http.StatusMisdirectedRequest, "old.example": http.StatusOK} {
			req, _ := http.NewRequest("GET", "https://"+e.HTTPS+"/", nil)
			req.Host = host
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("h2=%v %s: %v", h2, host, err)
			}
			resp.Body.Close()
			if resp.StatusCode != want || resp.TLS.Version != tls.VersionTLS12 || resp.TLS.ServerName != "" || resp.ProtoMajor != map[bool]int{false: 1, true: 2}[h2] {
				t.Errorf("h2=%v Host %s over TLS 1.2 without SNI: %d %s (version %x, SNI %q), want %d", h2, host, resp.StatusCode, resp.Proto, resp.TLS.Version, resp.TLS.ServerName, want)
			}
		}
		tr.CloseIdleConnections()
	}
	// Reload: the 1.3 requirement goes with the configuration.
	if err := e.Reload(0, `server_names = ["modern.example"]
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/"
handler = { type = "static", root = "`+www(t, dir, "m", "modern")+`" }
`); err != nil {
		t.Fatal(err)
	}
	if v, err := dial("modern.example", tls.VersionTLS12, nil); err != nil || v != tls.VersionTLS12 {
		t.Errorf("after reload without min_version: %x %v", v, err)
	}
}
