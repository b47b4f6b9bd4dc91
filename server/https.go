package server

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/acme"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/realip"
)

// httpsOptions compiles a site's redirect_https and hsts.
func httpsOptions(st *site, cs *config.Site) {
	if cs.HSTS != "" {
		st.hsts = []string{cs.HSTS}
	}
	if cs.RedirectHTTPSEnabled() && len(cs.TLS.Listen) > 0 {
		st.httpsPort = strconv.Itoa(int(cs.TLS.Listen[0].Port))
		st.trusted = cs.TrustedNets
	}
}

// isChallengePath reports whether path (decoded, not yet normalized) is
// an HTTP-01 challenge path: the prefix and one token of base64url
// characters (RFC 8555 section 8.1), so that dot segments
// ("/.well-known/acme-challenge/../../admin/") cannot carry another path
// past the redirect.
func isChallengePath(path string) bool {
	tok, ok := strings.CutPrefix(path, acme.ChallengePath)
	if !ok {
		return false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// redirectHTTPS answers a plain-HTTP request with a permanent redirect to
// the same URL over HTTPS on port (301 for GET and HEAD, else 308, which
// keeps method and body: RFC 9110 section 15.4.9), and reports whether it
// did. ACME HTTP-01 challenges are exempt (RFC 8555 section 8.3: the CA
// asks over plain HTTP and follows redirects only to the same name).
//
// A request a trusted proxy (the site's trusted_proxies) says came over
// HTTPS is not redirected, or a proxy terminating TLS in front of Arka
// would loop.
func redirectHTTPS(w http.ResponseWriter, r *http.Request, port string, trusted []netip.Prefix) bool {
	if isChallengePath(r.URL.Path) || realip.ForwardedHTTPS(r, trusted) {
		return false
	}
	host := strings.ToLower(hostOnly(r.Host))
	if host == "" {
		// HTTP/1.0 without Host: the address it connected to, or it would
		// be served over plain HTTP.
		ta, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
		if !ok {
			errpage.Write(w, r, http.StatusBadRequest)
			return true
		}
		host = ta.AddrPort().Addr().Unmap().WithZone("").String()
	}
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	if port != "443" {
		host += ":" + port
	}
	uri := r.URL.RequestURI()
	if r.RequestURI != "" && r.RequestURI[0] == '/' {
		uri = r.RequestURI // as the client wrote it
	}
	w.Header().Set("Location", "https://"+host+uri)
	code := http.StatusMovedPermanently
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		code = http.StatusPermanentRedirect
	}
	errpage.Write(w, r, code)
	return true
}

// setACME gives every virtual-host set of t the certificate manager, when
// some site has ACME certificates (creating the manager the first time).
func (s *Server) setACME(sites []*config.Site, t *table) {
	m := s.acme.Load()
	if m == nil {
		need := false
		for _, cs := range sites {
			need = need || cs.ACME != nil
		}
		if !need {
			return
		}
		o := s.o.ACME
		o.StateDir, o.Logger = s.o.StateDir, s.log
		m = acme.New(o)
		s.acme.Store(m)
	}
	for _, v := range t.vhosts {
		v.acme = m
	}
}

// applyACME hands the ACME sites of the served configuration, with the
// addresses their listeners are bound to, to the certificate manager.
func (s *Server) applyACME(sites []*config.Site, t *table) {
	for _, cs := range sites {
		if cs.TLS.Cert != "" || cs.TLS.ACME != nil && !*cs.TLS.ACME {
			continue
		}
		for _, p := range config.CertificatePlan(cs) {
			if !p.ACME && strings.HasPrefix(p.Name, "*.") {
				s.log.Info("a wildcard name keeps the self-signed certificate: "+p.Why, "site", cs.File, "name", p.Name)
			}
		}
	}
	m := s.acme.Load()
	if m == nil {
		return
	}
	var list []acme.Site
	for _, cs := range sites {
		a := cs.ACME
		if a == nil {
			continue
		}
		as := acme.Site{Names: a.Names, Email: a.Email, CA: a.CA, CARoot: a.CARoot, CARootCerts: a.CARootCerts}
		if len(cs.Listen) > 0 {
			if l := s.listeners[cs.Listen[0].String()]; l != nil {
				as.HTTPAddr = l.ln.Addr().String()
			}
		}
		if l := s.listeners[cs.TLS.Listen[0].String()]; l != nil {
			as.TLSAddr = l.ln.Addr().String()
		}
		list = append(list, as)
	}
	if err := m.Apply(list); err != nil {
		s.log.Error("certificates", "err", err)
	}
}
