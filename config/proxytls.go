package config

import (
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// proxyTLS validates the TLS keys of a proxy route: they need an https://
// upstream, and the CA file must hold certificates.
func (v *validator) proxyTLS(at string, p *Proxy, anyTLS bool) {
	if !anyTLS {
		for _, k := range []string{"tls_ca", "tls_server_name", "tls_insecure_skip_verify"} {
			if v.has(at + "." + k) {
				v.errAt(at+"."+k, "%s applies to https:// upstreams, and this route has none", k)
			}
		}
		return
	}
	if n := p.TLSServerName; n != "" {
		if _, err := normalizeName(n); err != nil || n[0] == '*' {
			v.errAt(at+".tls_server_name", "tls_server_name %q is not a host name", n)
		}
	}
	if p.TLSInsecureSkipVerify && p.TLSCA != "" {
		v.errAt(at+".tls_insecure_skip_verify", "tls_insecure_skip_verify and tls_ca exclude each other: with a CA file, certificates can be verified")
	}
}

// LoadCAFile reads a PEM file of CA certificates into a pool.
func LoadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %s", path, errText(err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// Warnings lists what is allowed but unsafe in the sites, each located
// "file:line:col: message" (printed by arka -t).
func Warnings(sites []*Site) []string {
	var out []string
	for _, s := range sites {
		for i, r := range s.Routes {
			if p, ok := r.Handler.(*Proxy); ok && p.TLSInsecureSkipVerify {
				line, col := s.Position(fmt.Sprintf("routes[%d].handler.tls_insecure_skip_verify", i))
				out = append(out, fmt.Sprintf("%s:%d:%d: warning: tls_insecure_skip_verify: the certificates of route %q's upstreams are not checked; anyone on the path to them can read and change the traffic (give the upstream's CA with tls_ca instead)", s.File, line, col, r.Path))
			}
		}
	}
	return append(out, fanWarnings(sites)...)
}

// cutScheme removes "http://" or "https://" from an upstream.
func cutScheme(t string) (string, bool) {
	if rest, ok := strings.CutPrefix(t, "http://"); ok {
		return rest, true
	}
	return strings.CutPrefix(t, "https://")
}
