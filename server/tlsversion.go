package server

import "crypto/tls"

// tls12CipherSuites are the TLS 1.2 cipher suites offered: forward-secret
// (ECDHE) key exchange with an AEAD cipher only, as Mozilla's
// "intermediate" profile. Go orders them by the hardware (AES-GCM first
// with AES instructions, ChaCha20-Poly1305 first without, as on a
// Raspberry Pi before the 5). TLS 1.3's suites are all AEADs and not
// configurable.
var tls12CipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// configForClient picks the TLS configuration of a handshake by SNI: the
// TLS 1.3-only one for a site with [tls] min_version = "1.3" (the site
// named, else the address's default or first site), else the listener's.
func (l *listener) configForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	vh := l.vh.Load()
	if vh == nil {
		return nil, nil
	}
	st := vh.match(hello.ServerName)
	if st == nil {
		st = vh.first
	}
	if st != nil && st.tls13 {
		return l.tlsc13, nil
	}
	return nil, nil
}
