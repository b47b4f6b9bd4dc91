package config

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// RouteOptions are the keys every route accepts next to path and handler,
// whatever its handler. The server applies them in this order before the
// handler runs: deny and allow (403), basic_auth (401), then the handler,
// whose response (errors included) gets headers; compression decides
// whether the response may be content-coded.
//
//	[[routes]]
//	path = "/private/"
//	handler = { type = "static", root = "/srv/private" }
//	allow = ["192.168.1.0/24"]
//	basic_auth = { realm = "family", users = { alice = "$2a$10$..." } }
//	headers = { set = { "X-Frame-Options" = "DENY" }, remove = ["X-Powered-By"] }
//	compression = false
type RouteOptions struct {
	// Headers changes the response fields of every response of the route.
	Headers *HeaderOps `toml:"headers"`
	// BasicAuth asks for a user name and password (RFC 7617).
	BasicAuth *BasicAuth `toml:"basic_auth"`
	// Allow and Deny are client networks (CIDR or single addresses). A
	// client in Deny, or not in a non-empty Allow, gets 403. Behind a
	// trusted proxy (the site's or the proxy route's trusted_proxies) the
	// forwarded client address is the one checked.
	Allow []netip.Prefix `toml:"-"` // the key allow
	Deny  []netip.Prefix `toml:"-"` // the key deny
	// Compression: nil follows the site's [compression] and never codes on
	// the fly a response that sets a cookie (BREACH); false never codes on
	// the fly; true codes even responses that set cookies.
	Compression *bool `toml:"compression"`
}

// Empty reports whether the route has no options at all.
func (o *RouteOptions) Empty() bool {
	return o.Headers == nil && o.BasicAuth == nil && len(o.Allow) == 0 && len(o.Deny) == 0 && o.Compression == nil
}

// HeaderOps are response field changes, applied when the response head is
// written (after the handler chose its fields): Remove, then Set
// (replacing), then Add (appending). Vary is always merged: set or add
// only add the tokens the response does not already vary on.
type HeaderOps struct {
	Set    map[string]string     `toml:"set"`
	Add    map[string]StringList `toml:"add"`
	Remove []string              `toml:"remove"`
}

// BasicAuth is HTTP Basic authentication (RFC 7617) with bcrypt hashes.
type BasicAuth struct {
	// Realm is shown by browsers in the login prompt. Default
	// DefaultBasicAuthRealm.
	Realm string `toml:"realm"`
	// Users maps user names to bcrypt hashes ("$2a$", "$2b$" or "$2y$",
	// as `arka hash-password` prints).
	Users map[string]string `toml:"users"`
}

// DefaultTLSMinVersion is the oldest TLS version a site accepts.
const DefaultTLSMinVersion = "1.2"

// DefaultBasicAuthRealm is the realm of a basic_auth without one.
const DefaultBasicAuthRealm = "restricted"

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// framingField reports whether name is a field that frames the message or
// manages the connection (RFC 9112 section 6, RFC 9110 section 7.6.1):
// the engines set these, and a value from the configuration would make the
// body disagree with its framing (a Content-Length of 5 on a 12-byte
// body desynchronizes a kept-alive HTTP/1.1 connection).
func framingField(name string) bool {
	switch strings.ToLower(name) {
	case "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection", "upgrade", "te", "trailer":
		return true
	}
	return false
}

const framingFieldMsg = "header %s frames the message or manages the connection, which Arka does itself (RFC 9112 section 6, RFC 9110 section 7.6.1); it cannot be set, added or removed"

// routeOptions validates the options of the route at path at ("routes[2]").
func (v *validator) routeOptions(at string, o *RouteOptions, allow, deny []string) {
	if h := o.Headers; h != nil {
		hp := at + ".headers"
		check := func(key, name string, vals ...string) {
			if !validHeaderName(name) {
				v.errAt(hp+"."+key+"."+name, "header name %q is not a valid field name (RFC 9110 section 5.1)", name)
				return
			}
			if framingField(name) {
				v.errAt(hp+"."+key+"."+name, framingFieldMsg, name)
				return
			}
			for _, val := range vals {
				if !validHeaderValue(val) {
					v.errAtValue(hp+"."+key+"."+name, "header %s: value %q has a control character (RFC 9110 section 5.5)", name, val)
				}
			}
		}
		for _, k := range sortedKeys(h.Set) {
			check("set", k, h.Set[k])
		}
		for _, k := range sortedKeys(h.Add) {
			check("add", k, h.Add[k]...)
		}
		for i, k := range h.Remove {
			if !validHeaderName(k) {
				v.errAt(fmt.Sprintf("%s.remove[%d]", hp, i), "header name %q is not a valid field name (RFC 9110 section 5.1)", k)
			} else if framingField(k) {
				v.errAt(fmt.Sprintf("%s.remove[%d]", hp, i), framingFieldMsg, k)
			}
		}
	}
	if b := o.BasicAuth; b != nil {
		bp := at + ".basic_auth"
		if strings.ContainsAny(b.Realm, "\"\\") || !validHeaderValue(b.Realm) {
			v.errAt(bp+".realm", "realm %q must not contain quotes, backslashes or control characters", b.Realm)
		}
		if len(b.Users) == 0 {
			v.errAtValue(bp, "basic_auth needs at least one user: users = { alice = \"<hash from arka hash-password>\" }")
		}
		for _, name := range sortedKeys(b.Users) {
			up := bp + ".users." + name
			if name == "" || strings.ContainsAny(name, ":") || !validHeaderValue(name) {
				v.errAt(up, "user name %q must not be empty or contain \":\" or control characters (RFC 7617 section 2)", name)
			}
			if _, err := bcrypt.Cost([]byte(b.Users[name])); err != nil {
				v.errAt(up, "user %q: expected a bcrypt hash (\"$2a$...\"), not a password; make one with `arka hash-password`", name)
			}
		}
	}
	if allow != nil && len(allow) == 0 {
		// An empty list would admit every client, the opposite of what
		// it reads as.
		v.errAt(at+".allow", "allow = [] lists no client: name the networks to let in, or leave allow out to let everyone in (to refuse everyone, use a respond route with status = 403)")
	}
	o.Allow = v.prefixes(at, "allow", allow)
	o.Deny = v.prefixes(at, "deny", deny)
}

// prefixes parses a list of networks at at.key[i].
func (v *validator) prefixes(at, key string, list []string) []netip.Prefix {
	var out []netip.Prefix
	path := key
	if at != "" {
		path = at + "." + key
	}
	for i, c := range list {
		p, err := ParsePrefix(c)
		if err != nil {
			v.errAt(fmt.Sprintf("%s[%d]", path, i), "%s: %v", key, err)
			continue
		}
		out = append(out, p)
	}
	return out
}

// siteOptions validates the site-level keys of issue 19's features.
func (v *validator) siteOptions(s *Site) {
	s.TrustedProxies = v.prefixes("", "trusted_proxies", v.written.trusted)
	if v.has("client_ip_header") && !trustsAny(s) {
		v.errAt("client_ip_header", "client_ip_header is only read from trusted_proxies, and this site has none: name the proxies in front of Arka (trusted_proxies = [\"10.0.0.1\"]) or leave client_ip_header out")
	}
	v.errorPages(&s.Errors)
	switch s.TLS.MinVersion {
	case "1.2", "1.3":
	default:
		v.errAt("tls.min_version", "min_version %q: use \"1.2\" or \"1.3\"", s.TLS.MinVersion)
	}
}

// trustsAny reports whether a site believes any proxy's forwarding fields:
// it or one of its proxy routes has trusted_proxies.
func trustsAny(s *Site) bool {
	if len(s.TrustedProxies) > 0 {
		return true
	}
	for _, r := range s.Routes {
		if p, ok := r.Handler.(*Proxy); ok && len(p.TrustedProxies) > 0 {
			return true
		}
	}
	return false
}
