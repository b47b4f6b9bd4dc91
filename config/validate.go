package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// validator loads one site file: it decodes (decode.go), normalizes
// (normalize.go) and validates (here), collecting every mistake located
// at its key.
type validator struct {
	file    string
	dir     string
	pos     *posIndex
	errs    Errors
	failed  []int          // routes whose handler table could not be decoded
	routes  []decodedRoute // every [[routes]] entry, in file order
	unknown Errors         // keys the schema does not know
	bad     []string       // keys whose value could not be decoded (lenient.go)
	// unknownPlain are the unknown keys lenientSite found (plain paths).
	unknownPlain []string
	// written holds values as the file writes them, where the Site has a
	// typed form that validate parses them into.
	written struct {
		listen, tlsListen []string
		trusted           []string // the site's trusted_proxies
	}
}

// validate checks a decoded and normalized site, parsing what has a typed
// form (networks, upstreams, addresses). Mistakes are reported in file
// order per route: its options, its path, its handler; then the keys no
// schema knows; then the site's own keys.
func (v *validator) validate(s *Site) {
	for i, d := range v.routes {
		at := fmt.Sprintf("routes[%d]", i)
		opts := &d.raw.RouteOptions
		if d.ri >= 0 {
			opts = &s.Routes[d.ri].Options
		}
		v.routeOptions(at, opts, d.raw.Allow, d.raw.Deny)
		v.routePath(at, d.raw.Path)
		v.errs = append(v.errs, d.errs...)
		if d.ri >= 0 {
			v.handler(at+".handler", s.Routes[d.ri].Handler, d.nets)
		}
	}
	v.errs = append(v.errs, v.unknown...)
	v.site(s)
	v.siteOptions(s)
}

// routePath checks the path of the route at at ("routes[2]").
func (v *validator) routePath(at, path string) {
	switch {
	case path == "" && v.badPath(at+".path"):
		// its path is not a string: reported already
	case path == "":
		v.errAt(at, "route has no path (for example path = \"/\")")
	case !strings.HasPrefix(path, "/"):
		v.errAt(at+".path", "route path %q must start with \"/\"", path)
	case strings.ContainsAny(path, "?#\x00\\") || strings.Contains(path, "//"):
		v.errAt(at+".path", "route path %q must be a plain path without ?, #, \\ or //", path)
	case hasDotSegment(path):
		v.errAt(at+".path", "route path %q has a . or .. segment; requests are matched after those are resolved, so it could never match", path)
	}
}

// handler validates a route's handler at hp ("routes[2].handler"). nets
// are its networks as written (a proxy's trusted_proxies, a status
// page's allow), nil for a handler built in Go, whose are typed already.
func (v *validator) handler(hp string, h Handler, nets []string) {
	switch h := h.(type) {
	case *Static:
		v.static(hp, h)
	case *Proxy:
		v.proxy(hp, h, nets)
	case *FastCGI:
		v.fastcgi(hp, h)
	case *Status:
		v.status(hp, h, nets)
	case *Redirect:
		v.redirect(hp, h)
	case *Respond:
		v.respond(hp, h)
	}
}

func (v *validator) errAt(path string, format string, args ...any) {
	if v.badPath(path) {
		return
	}
	line, col := v.pos.at(path)
	v.errs = append(v.errs, &Error{File: v.file, Line: line, Col: col, Msg: shortenQuoted(fmt.Sprintf(format, args...))})
}

// abs resolves a path from the site file relative to the file's directory.
func (v *validator) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(v.dir, p)
}

// errAtValue is errAt pointing at the key's value rather than the key.
func (v *validator) errAtValue(path string, format string, args ...any) {
	if v.badPath(path) {
		return
	}
	line, col := v.pos.valueAt(path)
	v.errs = append(v.errs, &Error{File: v.file, Line: line, Col: col, Msg: shortenQuoted(fmt.Sprintf(format, args...))})
}

func (v *validator) has(path string) bool { _, ok := v.pos.indexed[path]; return ok }

// hasControl reports whether s has a NUL or another control character.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

func (v *validator) site(s *Site) {
	v.healthPath(s)
	named := map[string]int{} // normalized name → index of its first entry
	for i, n := range s.ServerNames {
		at := fmt.Sprintf("server_names[%d]", i)
		norm, err := normalizeName(n)
		if err != nil {
			v.errAt(at, "server name %q: %v", n, err)
			continue
		}
		// Host names compare case-insensitively (RFC 9110 section 4.2.3).
		if j, dup := named[norm]; dup {
			line, col := v.pos.at(fmt.Sprintf("server_names[%d]", j))
			v.errAt(at, "server name %q is listed twice in server_names (also at %d:%d)", n, line, col)
		} else {
			named[norm] = i
		}
		s.ServerNames[i] = norm
	}
	switch {
	case v.has("listen") && len(v.written.listen) == 0:
		v.errAt("listen", "listen is empty: name at least one address, as in listen = [\":80\"], or leave the key out for the default %s", DefaultListen)
	case v.has("tls") && len(v.written.tlsListen) == 0 && s.TLS.Cert == "":
		v.errAt("tls", "tls has no listen address (for example listen = [\":443\"])")
	}
	s.Listen = v.listen("listen", "listen", v.written.listen)
	s.TLS.Listen = v.listen("tls.listen", "tls listen", v.written.tlsListen)
	v.listenTwice(s)
	switch {
	case (s.TLS.Cert == "") != (s.TLS.Key == ""):
		v.errAt("tls", "tls needs both cert and key (or neither, for a generated self-signed certificate)")
	case s.TLS.Cert != "" && len(s.TLS.Listen) == 0:
		v.errAt("tls", "tls has a certificate but no listen address (for example listen = [\":443\"])")
	}
	v.acme(s)
	switch s.Log.Format {
	case "combined", "json":
	default:
		v.errAt("log.format", "log format %q: use \"combined\" or \"json\"", s.Log.Format)
	}
	if g := s.Global; g != nil {
		switch g.Budget.PHPPM {
		case "", "auto", "static", "ondemand":
		default:
			v.errAt("global.budget.php_pm", "php_pm %q: use \"auto\", \"static\" or \"ondemand\"", g.Budget.PHPPM)
		}
		if g.PHP != nil {
			v.php("global.php", g.PHP)
		}
		if g.Fan != nil {
			v.fan("global.fan", g.Fan)
		}
		v.clientBody(g)
		v.thermal("global.thermal", g.Thermal)
	}
	if s.PHP != nil {
		v.php("php", s.PHP)
	}
	c := s.Compression
	if c.ZstdLevel < 1 || c.ZstdLevel > 4 {
		v.errAtValue("compression.zstd_level", "zstd_level %d: use 1 (fastest) to 4 (best)", c.ZstdLevel)
	}
	if c.BrotliLevel < 0 || c.BrotliLevel > 11 {
		v.errAtValue("compression.brotli_level", "brotli_level %d: use 0 to 11", c.BrotliLevel)
	}
	if c.GzipLevel < 1 || c.GzipLevel > 9 {
		v.errAtValue("compression.gzip_level", "gzip_level %d: use 1 to 9", c.GzipLevel)
	}
	if len(s.Routes) == 0 && len(v.errs) == 0 && !v.badPath("routes") {
		msg := "site has no routes (add [[routes]] with a path and a handler)"
		if v.pos != nil && len(v.pos.src) == 0 {
			msg = "file is empty (0 bytes)"
		}
		v.errs = append(v.errs, &Error{File: v.file, Line: 1, Col: 1, Msg: msg})
	}
	seen := map[string]int{}
	for i, r := range s.Routes {
		if j, ok := seen[r.Path]; ok {
			v.errAt(fmt.Sprintf("routes[%d].path", r.index), "route path %q is already used by the route on line %d", r.Path, s.Routes[j].Line)
		}
		seen[r.Path] = i
	}
}

// normalizeName lower-cases a server name and checks its form: a host name,
// a "*." wildcard followed by a host name, or an IP address.
func normalizeName(n string) (string, error) {
	n = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(n), "."))
	if n == "" {
		return "", errors.New("empty name")
	}
	if strings.HasPrefix(n, "[") && strings.HasSuffix(n, "]") {
		n = n[1 : len(n)-1]
	}
	if _, err := netip.ParseAddr(n); err == nil {
		return n, nil
	}
	if strings.Contains(n, ":") {
		return "", errors.New("a server name has no port; ports come from listen")
	}
	host := strings.TrimPrefix(n, "*.")
	if strings.Contains(host, "*") {
		return "", errors.New("a wildcard is only allowed as the first label, as in \"*.example.org\"")
	}
	if err := checkHostName(host); err != nil {
		return "", err
	}
	return n, nil
}

// checkHostName checks a lower-case DNS name: dot-separated labels of
// letters, digits, hyphens and underscores (RFC 1123 section 2.1, with the
// underscore some local names use), at most 63 bytes each.
func checkHostName(host string) error {
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("not a valid host name")
		}
		for _, c := range label {
			if c >= utf8.RuneSelf {
				// An internationalized name goes on the wire, in SNI and
				// in Host, in its ASCII form (RFC 5890 A-labels).
				if a, err := idna.Lookup.ToASCII(host); err == nil {
					return fmt.Errorf("character %q is not allowed in a host name; write an internationalized name in its ASCII form, %q", c, a)
				}
				return fmt.Errorf("character %q is not allowed in a host name; write an internationalized name in its ASCII (xn--) form", c)
			}
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("character %q is not allowed in a host name", c)
			}
		}
	}
	return nil
}

// dirGiven checks that a directory key is set; that it is a directory is
// for CheckEnvironment.
func (v *validator) dirGiven(path, key, p string) {
	if p == "" {
		v.errAt(path, "%s: missing (a directory)", key)
	}
}

func (v *validator) static(at string, s *Static) {
	v.dirGiven(at, "root", s.Root)
	if len(s.Index) == 0 && v.has(at+".index") {
		v.errAt(at+".index", "index = [] lists no file: give at least one name or leave it out for the default %q", DefaultIndex)
	}
	for i, n := range s.Index {
		if n == "" || strings.ContainsAny(n, "/\\\x00") {
			v.errAt(fmt.Sprintf("%s.index[%d]", at, i), "index %q must be a plain file name", n)
		}
	}
	switch {
	case s.Fallback == "":
	case !strings.HasPrefix(s.Fallback, "/") || hasDotSegment(s.Fallback):
		v.errAt(at+".fallback", "fallback %q must be a path under root starting with \"/\"", s.Fallback)
	}
	for _, k := range sortedKeys(s.Headers) {
		val := s.Headers[k]
		if !validHeaderName(k) {
			v.errAt(at+".headers."+k, "header name %q is not a valid field name (RFC 9110 section 5.1)", k)
		} else if framingField(k) {
			v.errAt(at+".headers."+k, framingFieldMsg, k)
		} else if !validHeaderValue(val) {
			v.errAtValue(at+".headers."+k, "header %s: value %q has a control character (RFC 9110 section 5.5)", k, val)
		}
	}
	if !validHeaderValue(s.CacheControl) {
		v.errAt(at+".cache_control", "cache_control %q has a control character (RFC 9110 section 5.5)", s.CacheControl)
	}
}

// validHeaderValue: a field value has no control characters other than
// HTAB (RFC 9110 section 5.5).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Upstream is a parsed proxy upstream address.
type Upstream struct {
	Name    string // as written in the site file, for messages and logs
	Network string // "tcp" or "unix"
	Address string // "host:port" or a socket path
	TLS     bool   // "https://": spoken to over TLS (see Proxy.TLSCA)
}

// redactUserinfo is an upstream as written with any "user:password@"
// replaced by "…@", for messages: they end up in logs and on the status
// and fallback pages.
func redactUserinfo(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 || strings.Contains(rest[:at], "/") {
		return u
	}
	return scheme + "://…@" + rest[at+1:]
}

// ParseUpstream parses "host:port", "[v6]:port", "http://host:port",
// "https://host:port" (port 443 if left out) or "unix:/path.sock".
func ParseUpstream(s string) (Upstream, error) {
	t := strings.TrimSpace(s)
	s = t
	if p, ok := strings.CutPrefix(t, "unix:"); ok {
		if !filepath.IsAbs(p) {
			return Upstream{}, errors.New("unix socket path must be absolute, as in \"unix:/run/app.sock\"")
		}
		return Upstream{Name: s, Network: "unix", Address: p}, nil
	}
	if rest, secure, ok := cutSchemeTLS(t); ok {
		t = strings.TrimSuffix(rest, "/")
		if at := strings.LastIndexByte(t, '@'); at >= 0 && !strings.Contains(t[:at], "/") {
			return Upstream{}, errors.New("an upstream address takes no user name or password (\"user:password@\")")
		}
		if strings.Contains(t, "/") {
			return Upstream{}, errors.New("an upstream is an address, not a URL with a path")
		}
		if _, _, err := net.SplitHostPort(t); err != nil {
			port := "80"
			if secure {
				port = "443"
			}
			host := t
			if inner, ok := strings.CutPrefix(host, "["); ok {
				// Brackets hold an IPv6 address, whole (RFC 3986
				// section 3.2.2).
				v6, closed := strings.CutSuffix(inner, "]")
				if a, err := netip.ParseAddr(v6); !closed || err != nil || !a.Is6() {
					return Upstream{}, fmt.Errorf("%q is not an IPv6 address in brackets, as in \"[::1]\"", host)
				}
				host = v6
			} else if strings.ContainsAny(host, "[]") {
				return Upstream{}, fmt.Errorf("%q: a bracket belongs around an IPv6 address, as in \"[::1]\"", host)
			}
			t = net.JoinHostPort(host, port)
		}
		return hostPort(s, t, secure)
	} else if strings.Contains(t, "://") {
		return Upstream{}, errors.New("only http:// and https:// upstreams are supported")
	}
	return hostPort(s, t, false)
}

// hostPort is ParseUpstream's check of the "host:port" t of the upstream
// written as name.
func hostPort(name, t string, secure bool) (Upstream, error) {
	host, port, err := net.SplitHostPort(t)
	if err != nil || host == "" {
		return Upstream{}, errors.New("expected host:port, [v6]:port, http://host:port or unix:/path.sock")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return Upstream{}, fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		name := strings.ToLower(strings.TrimSuffix(host, "."))
		if checkHostName(name) != nil || allDigitsAndDots(name) {
			// A host name never has the dotted-decimal form
			// (RFC 1123 section 2.1): "10.0.0.300" is a mistyped address.
			return Upstream{}, fmt.Errorf("host %q is neither an IP address nor a host name", host)
		}
	}
	return Upstream{Name: name, Network: "tcp", Address: net.JoinHostPort(host, port), TLS: secure}, nil
}

func allDigitsAndDots(s string) bool {
	return strings.Trim(s, "0123456789.") == ""
}

// ParsePrefix parses a CIDR ("192.168.0.0/16") or a single address (a /32
// or /128). An IPv4-mapped IPv6 network ("::ffff:10.0.0.0/104") is
// unmapped to the IPv4 one, since client addresses are compared unmapped.
// A network with host bits set ("10.0.0.1/8") is an error naming the
// network meant, since it reads as either a host or a network; so is an
// IPv6 zone ("fe80::1%eth0"), since client addresses are matched without
// one.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	addr, bits, isNet := strings.Cut(s, "/")
	if i := strings.IndexByte(addr, '%'); i >= 0 {
		if a, err := netip.ParseAddr(addr); err == nil && a.Zone() != "" {
			plain := a.WithZone("").String()
			if isNet {
				plain += "/" + bits
			}
			return netip.Prefix{}, fmt.Errorf("%q: an IPv6 zone (%%%s) is not supported here: client addresses are matched without their zone; write %q", s, a.Zone(), plain)
		}
	}
	var p netip.Prefix
	if isNet {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a network like \"192.168.0.0/16\"", s)
		}
		if m := p.Masked(); m != p {
			return netip.Prefix{}, fmt.Errorf("%q has host bits set; did you mean %q (the network) or %q (the one address)?", s, m.String(), p.Addr().String())
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP address or network", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

func (v *validator) proxy(at string, p *Proxy, trusted []string) {
	if len(p.Upstreams) == 0 {
		v.errAt(at+".upstreams", "proxy needs at least one upstream (upstreams = [\"127.0.0.1:8080\"])")
	}
	anyTLS := false
	p.Targets = p.Targets[:0]
	for i, u := range p.Upstreams {
		a, err := ParseUpstream(u)
		if err != nil {
			v.errAt(fmt.Sprintf("%s.upstreams[%d]", at, i), "upstream %q: %v", redactUserinfo(u), err)
		}
		p.Targets = append(p.Targets, a)
		anyTLS = anyTLS || a.TLS
	}
	v.proxyTLS(at, p, anyTLS)
	switch p.LB {
	case "round_robin", "least_conn":
	default:
		v.errAt(at+".lb", "lb %q: use \"round_robin\" or \"least_conn\"", p.LB)
	}
	if trusted != nil {
		p.TrustedProxies = v.prefixes(at, "trusted_proxies", trusted)
	}
	if h := p.HostHeader; h != "" && (strings.ContainsAny(h, " /@?#") || !validHeaderValue(h)) {
		v.errAt(at+".host_header", "host_header %q must be a host name, optionally with a port", h)
	}
	if h := p.Health; h != nil && !strings.HasPrefix(h.Path, "/") {
		v.errAt(at+".health.path", "health path %q must start with \"/\"", h.Path)
	}
}

func (v *validator) fastcgi(at string, f *FastCGI) {
	v.dirGiven(at, "root", f.Root)
	if f.Address != FastCGIPHP {
		d, err := ParseFastCGIAddress(f.Address)
		if err != nil {
			v.errAt(at+".address", "address %q: %v", f.Address, err)
		}
		f.Dial = d
	}
	for i, n := range f.Index {
		if n == "" || strings.ContainsAny(n, "/\\\x00") {
			v.errAt(fmt.Sprintf("%s.index[%d]", at, i), "index %q must be a plain file name", n)
		}
	}
	for i, s := range f.SplitPath {
		if !strings.HasPrefix(s, ".") || len(s) < 2 || strings.Contains(s, "/") || hasControl(s) {
			v.errAt(fmt.Sprintf("%s.split_path[%d]", at, i), "split_path %q must be an extension like \".php\"", s)
		}
	}
	if fb := f.Fallback; fb != "" {
		script := false
		for _, e := range f.SplitPath {
			script = script || len(fb) > len(e) && strings.EqualFold(fb[len(fb)-len(e):], e)
		}
		if !strings.HasPrefix(fb, "/") || strings.HasSuffix(fb, "/") || strings.Contains(fb, "//") ||
			hasDotSegment(fb) || hasControl(fb) || !script {
			v.errAt(at+".fallback", "fallback %q must be the path of a script under the root, like \"/index.php\"", fb)
		}
	}
	for _, k := range sortedKeys(f.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			v.errAt(at+".env", "env name %q is not valid", k)
		} else if pairLen(k, f.Env[k]) > maxFastCGIPair {
			v.errAt(at+".env", "env %s is too long for one FastCGI record (name and value at most %d bytes)", k, maxFastCGIPair)
		}
	}
}

// maxFastCGIPair is the most one name-value pair may take: the content
// of one FastCGI record (FastCGI 1.0 section 3.3, 65535 bytes, less the
// 8-byte alignment Arka keeps).
const maxFastCGIPair = 65528

// pairLen is the encoded length of a FastCGI name-value pair (FastCGI
// 1.0 section 3.4): each length takes 1 byte below 128, else 4.
func pairLen(name, value string) int {
	l := func(n int) int {
		if n < 128 {
			return 1 + n
		}
		return 4 + n
	}
	return l(len(name)) + l(len(value))
}

// NetAddr is an address to connect to: Network "tcp" with "host:port",
// or "unix" with an absolute socket path.
type NetAddr struct {
	Network string
	Address string
}

// ParseFastCGIAddress parses the address of a FastCGI server:
// "unix:/path.sock" or "host:port" (not FastCGIPHP, which names no
// address).
func ParseFastCGIAddress(a string) (NetAddr, error) {
	if p, ok := strings.CutPrefix(a, "unix:"); ok {
		if !filepath.IsAbs(p) {
			return NetAddr{}, errors.New("unix socket path must be absolute")
		}
		return NetAddr{Network: "unix", Address: p}, nil
	}
	if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
		return NetAddr{}, errors.New("expected \"unix:/path.sock\", \"host:port\" or \"php\"")
	}
	return NetAddr{Network: "tcp", Address: a}, nil
}

func (v *validator) status(at string, s *Status, allow []string) {
	switch {
	case len(allow) > 0:
		s.Allow = v.prefixes(at, "allow", allow)
	case v.has(at + ".allow"): // written allow = []; left out: the default (normalize)
		v.errAt(at+".allow", "allow = [] lists no client: name the networks to let in, or leave allow out for the default (private networks and loopback)")
	}
}
