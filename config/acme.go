package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Automatic HTTPS (ACME, RFC 8555): which names of a site get certificates
// from a CA, from which CA, and the HTTP-to-HTTPS redirect and HSTS that go
// with them. Keys:
//
//	redirect_https = true               # site level; default on for ACME sites
//	hsts = "max-age=31536000"           # site level; default off
//
//	[tls]
//	listen = [":443"]
//	acme = true                         # default when there is no cert/key and a public name
//	email = "you@example.org"           # optional contact for the CA
//	ca = "staging"                      # "production" (default), "staging" or a directory URL
//	ca_root = "pebble-root.pem"         # extra trusted root for a private CA's API
//
//	[global]
//	acme = { email = "...", ca = "...", ca_root = "..." }   # defaults for every site

// ACME CA directory URLs for the ca shorthands.
const (
	LetsEncryptProduction = "https://acme-v02.api.letsencrypt.org/directory"
	LetsEncryptStaging    = "https://acme-staging-v02.api.letsencrypt.org/directory"
)

// ACMEDefaults is the [global] acme table: defaults for every site's [tls]
// email, ca and ca_root.
type ACMEDefaults struct {
	Email  string `toml:"email"`
	CA     string `toml:"ca"`
	CARoot string `toml:"ca_root"`
}

// ACME is a site's automatic-HTTPS setting after Load resolved it from the
// site's [tls] table and [global] acme: nil on a Site when no name of the
// site gets a certificate from a CA.
type ACME struct {
	// Names are the server names certificates are obtained for, one
	// certificate per name (in server_names order).
	Names []string
	// Email is the contact given to the CA's account ("" for none).
	Email string
	// CA is the ACME directory URL (RFC 8555 section 7.1.1).
	CA string
	// CARoot is a PEM file of root certificates trusted, besides the
	// system's, for the CA's API; "" for the system roots only.
	CARoot string
	// CARootCerts are CARoot's certificates, read once by
	// CheckEnvironment.
	CARootCerts []*x509.Certificate `json:"-"`
}

// NamePlan says how one server name of a TLS site gets its certificate.
type NamePlan struct {
	Name string
	ACME bool   // from the CA
	Why  string // when not: why the name stays on the self-signed certificate
}

// specialSuffixes are name suffixes no public CA issues for: local networks
// (mDNS .local, RFC 6762; home.arpa, RFC 8375; .internal; .lan by custom)
// and the special-use names of RFC 2606 and RFC 6761.
var specialSuffixes = []string{
	".local", ".lan", ".internal", ".home.arpa", ".localhost", ".localdomain",
	".test", ".example", ".invalid", ".onion",
}

// documentation names (RFC 2606 section 3) that no CA issues for.
var documentationDomains = []string{"example.com", "example.net", "example.org"}

// ACMEEligible reports whether a public CA could issue a certificate for a
// server name (lower case, as Load leaves it), and if not, why.
func ACMEEligible(name string) (bool, string) {
	if _, err := netip.ParseAddr(name); err == nil {
		return false, "an IP address"
	}
	if strings.HasPrefix(name, "*.") {
		return false, "a wildcard needs the DNS-01 challenge, which Arka does not do"
	}
	if name == "localhost" {
		return false, "localhost"
	}
	if !strings.Contains(name, ".") {
		return false, "a name without a dot"
	}
	for _, s := range specialSuffixes {
		if strings.HasSuffix(name, s) || name == s[1:] {
			return false, "*" + s + " is a local or reserved name"
		}
	}
	for _, d := range documentationDomains {
		if name == d || strings.HasSuffix(name, "."+d) {
			return false, "a name reserved for documentation (RFC 2606)"
		}
	}
	return true, ""
}

// CertificatePlan lists how each server name of a TLS site gets its
// certificate: from the site's cert file, from the ACME CA, or
// self-signed (with why). Sites without TLS give nil.
func CertificatePlan(s *Site) []NamePlan {
	if len(s.TLS.Listen) == 0 {
		return nil
	}
	var out []NamePlan
	for _, n := range s.ServerNames {
		p := NamePlan{Name: n}
		switch ok, why := ACMEEligible(n); {
		case s.TLS.Cert != "":
			p.Why = "cert file " + s.TLS.Cert
		case s.TLS.ACME != nil && !*s.TLS.ACME:
			p.Why = "acme = false"
		case !ok:
			p.Why = why
		default:
			p.ACME = true
		}
		out = append(out, p)
	}
	return out
}

// RedirectHTTPSEnabled reports whether requests on the site's plain
// listeners are redirected to HTTPS: redirect_https when set, else on for
// sites whose certificates come from a CA.
func (s *Site) RedirectHTTPSEnabled() bool {
	if s.RedirectHTTPS != nil {
		return *s.RedirectHTTPS
	}
	return s.ACME != nil
}

// acme validates the site's own ACME keys, redirect_https and hsts (the
// parts that need no other site file).
func (v *validator) acme(s *Site) {
	t := &s.TLS
	if t.Email != "" {
		v.email("tls.email", t.Email)
	}
	if t.CA != "" {
		t.CA = v.caURL("tls.ca", t.CA)
	}
	explicit := t.ACME != nil && *t.ACME
	off := t.ACME != nil && !*t.ACME
	switch {
	case explicit && t.Cert != "":
		v.errAt("tls.acme", "acme = true and a cert file exclude each other: drop cert and key to have certificates obtained for you")
	case explicit && len(t.Listen) == 0:
		v.errAt("tls.acme", "acme = true needs a tls listen address (for example listen = [\":443\"])")
	case explicit:
		public := false
		for _, p := range CertificatePlan(s) {
			public = public || p.ACME
		}
		if !public {
			v.errAt("tls.acme", "acme = true, but no server name can get a certificate from a public CA (list public DNS names in server_names; IP addresses, localhost, dotless, *.local, *.lan, *.internal, *.home.arpa and wildcard names cannot)")
		}
	}
	if (t.Cert != "" || off) && (t.Email != "" || t.CA != "" || t.CARoot != "") {
		key := "tls.email"
		switch {
		case t.CA != "":
			key = "tls.ca"
		case t.CARoot != "":
			key = "tls.ca_root"
		}
		v.errAt(key, "%s is an ACME setting, and this site gets no certificate from a CA (it has a cert file or acme = false)", strings.TrimPrefix(key, "tls."))
	}
	if g := s.Global; g != nil && g.ACME != nil {
		a := g.ACME
		if a.Email != "" {
			v.email("global.acme.email", a.Email)
		}
		if a.CA != "" {
			a.CA = v.caURL("global.acme.ca", a.CA)
		}
	}
	if s.RedirectHTTPS != nil && *s.RedirectHTTPS && len(t.Listen) == 0 {
		v.errAt("redirect_https", "redirect_https = true needs HTTPS: add [tls] with a listen address")
	}
	if s.HSTS != "" {
		if err := checkHSTS(s.HSTS); err != nil {
			v.errAtValue("hsts", "hsts %q: %v", s.HSTS, err)
		} else if len(t.Listen) == 0 {
			v.errAt("hsts", "hsts is sent over HTTPS only, and this site has no [tls] listen address")
		}
	}
}

func (v *validator) email(at, e string) {
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" {
		v.errAt(at, "email %q is not an email address (write it bare: you@example.org)", e)
		return
	}
	domain := e[strings.LastIndexByte(e, '@')+1:]
	if !strings.Contains(domain, ".") || checkHostName(strings.ToLower(domain)) != nil {
		v.errAt(at, "email %q: the CA needs a reachable address, and %q is not a public domain", e, domain)
	}
}

// caURL resolves the staging/production shorthands and checks a directory
// URL: https (RFC 8555 section 6.1), with a host.
func (v *validator) caURL(at, ca string) string {
	switch ca {
	case "production", "letsencrypt":
		return LetsEncryptProduction
	case "staging", "letsencrypt-staging":
		return LetsEncryptStaging
	}
	u, err := url.Parse(ca)
	switch {
	case err != nil || u.Host == "" || u.Scheme == "":
		v.errAt(at, "ca %q: use \"production\", \"staging\" or the CA's directory URL (https://.../directory)", ca)
	case u.Scheme != "https":
		v.errAt(at, "ca %q: ACME is spoken over https only (RFC 8555 section 6.1)", ca)
	case u.User != nil || u.Fragment != "":
		v.errAt(at, "ca %q: a directory URL has no user or fragment", ca)
	}
	return ca
}

// acmeEnvironment checks, for CheckEnvironment, that the ca_root files
// of a site hold certificates.
func (v *validator) acmeEnvironment(s *Site, ca caFiles) {
	if s.TLS.CARoot != "" {
		if _, err := ca.load(s.TLS.CARoot); err != nil {
			v.errAt("tls.ca_root", "ca_root: %v", err)
		}
	}
	if g := s.Global; g != nil && g.ACME != nil && g.ACME.CARoot != "" {
		if _, err := ca.load(g.ACME.CARoot); err != nil {
			v.errAt("global.acme.ca_root", "ca_root: %v", err)
		}
	}
	if a := s.ACME; a != nil && a.CARoot != "" {
		a.CARootCerts, _ = ca.load(a.CARoot) // its error is reported above
	}
}

// caFiles reads each CA file once for one CheckEnvironment: a site's
// ca_root may be [global]'s, shared by every site.
type caFiles map[string]caFile

type caFile struct {
	certs []*x509.Certificate
	err   error
}

func (c caFiles) load(path string) ([]*x509.Certificate, error) {
	f, ok := c[path]
	if !ok {
		f.certs, f.err = loadCACerts(path)
		c[path] = f
	}
	return f.certs, f.err
}

// checkHSTS checks a Strict-Transport-Security value (RFC 6797 section
// 6.1): a max-age with a number of seconds, optionally includeSubDomains
// and preload.
func checkHSTS(val string) error {
	maxAge := false
	var seen []string
	for _, d := range strings.Split(val, ";") {
		d = strings.TrimSpace(d)
		name, arg, hasArg := strings.Cut(d, "=")
		lname := strings.ToLower(strings.TrimSpace(name))
		if lname != "" {
			if slices.Contains(seen, lname) {
				// Section 6.1: each directive at most once; browsers
				// ignore a field that repeats one (section 8.1).
				return fmt.Errorf("%s appears twice (browsers would ignore the whole field)", strings.TrimSpace(name))
			}
			seen = append(seen, lname)
		}
		switch lname {
		case "max-age":
			if _, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(arg), `"`), 10, 32); !hasArg || err != nil {
				return errors.New("max-age needs a number of seconds, as in \"max-age=31536000\"")
			}
			maxAge = true
		case "includesubdomains", "preload":
			if hasArg {
				return fmt.Errorf("%s takes no value", name)
			}
		case "":
		default:
			return fmt.Errorf("unknown directive %q (use max-age, includeSubDomains, preload)", name)
		}
	}
	if !maxAge {
		return errors.New("max-age is required, as in \"max-age=31536000\"")
	}
	return nil
}

// resolveACME sets each site's ACME from its [tls] table and the [global]
// acme defaults. It runs after every file was parsed, since [global] may
// be in another file.
func resolveACME(sites []*Site) {
	var def ACMEDefaults
	if g := GlobalOf(sites); g.ACME != nil {
		def = *g.ACME
	}
	for _, s := range sites {
		s.ACME = nil
		var names []string
		for _, p := range CertificatePlan(s) {
			if p.ACME {
				names = append(names, p.Name)
			}
		}
		if len(names) == 0 {
			continue
		}
		a := &ACME{Names: names, Email: s.TLS.Email, CA: s.TLS.CA, CARoot: s.TLS.CARoot}
		if a.Email == "" {
			a.Email = def.Email
		}
		if a.CA == "" {
			a.CA = def.CA
		}
		if a.CA == "" {
			a.CA = DefaultACMECA
		}
		if a.CARoot == "" {
			a.CARoot = def.CARoot
		}
		s.ACME = a
	}
}
