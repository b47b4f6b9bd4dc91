package config

import (
	"crypto/x509"
	"encoding/pem"
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

// loadCACerts reads the certificates of a PEM file (other blocks are
// skipped, as x509.CertPool.AppendCertsFromPEM does).
func loadCACerts(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %s", path, errText(err))
	}
	var certs []*x509.Certificate
	for len(b) > 0 {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" || len(block.Headers) != 0 {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			continue
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return certs, nil
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

// cutSchemeTLS removes "http://" or "https://" from an upstream, and
// says whether it was https. The scheme is case-insensitive (RFC 3986
// section 3.1).
func cutSchemeTLS(t string) (rest string, secure, ok bool) {
	scheme, rest, ok := strings.Cut(t, "://")
	switch {
	case !ok:
		return t, false, false
	case strings.EqualFold(scheme, "http"):
		return rest, false, true
	case strings.EqualFold(scheme, "https"):
		return rest, true, true
	}
	return t, false, false
}
