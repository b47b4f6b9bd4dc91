package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/status"
)

// Degraded operation (Options.KeepServing): instead of refusing a whole
// configuration, the server serves what it can and reports the rest as
// problems on the status page and in Readiness.
//
//   - a TLS certificate or key that does not load: on a reload, that site
//     keeps the certificate it served from its files before; at start (or
//     when it had none), it is served with a self-signed certificate (as if
//     it named none);
//   - an address that cannot be bound: the other listeners serve, and the
//     address is tried again after 1 s, doubling to at most a minute.
//
// Problem keys: "config" (set by the caller with SetConfigError or
// SetProblem), "tls "+file and "listen "+address (kept by the server). The
// site files named by "config" mistakes and "tls" problems are also LED
// conditions, "site:NAME" (siteconds.go).

// Bind retry bounds for Options.KeepServing.
const (
	bindRetryFirst = time.Second
	bindRetryMax   = time.Minute
)

// SetServing records which configuration the server runs
// (status.ServingAsWritten, ServingLastGood or ServingFallback): the status
// page and Readiness show it.
func (s *Server) SetServing(mode string) {
	s.probMu.Lock()
	defer s.probMu.Unlock()
	s.serving = mode
}

// SetProblem records a problem under key (msg: one line; several lines are
// kept as they are), or clears it when msg is "".
func (s *Server) SetProblem(key, msg string) {
	s.probMu.Lock()
	defer s.probMu.Unlock()
	s.setProblemLocked(key, msg)
}

func (s *Server) setProblemLocked(key, msg string) {
	if s.problems == nil {
		s.problems = map[string]string{}
	}
	if msg == "" {
		delete(s.problems, key)
	} else {
		s.problems[key] = msg
	}
}

// Problems returns the current problems, one entry per line, the
// configuration's first, then the others by key.
func (s *Server) Problems() []string {
	s.probMu.Lock()
	defer s.probMu.Unlock()
	keys := make([]string, 0, len(s.problems))
	for k := range s.problems {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if (keys[i] == "config") != (keys[j] == "config") {
			return keys[i] == "config"
		}
		return keys[i] < keys[j]
	})
	var out []string
	for _, k := range keys {
		out = append(out, strings.Split(strings.TrimRight(s.problems[k], "\n"), "\n")...)
	}
	return out
}

// Readiness reports whether the server runs its configuration as written,
// with every listener bound and every certificate loaded.
func (s *Server) Readiness() status.Readiness {
	p := s.Problems()
	s.probMu.Lock()
	mode := s.serving
	s.probMu.Unlock()
	if mode == "" {
		mode = status.ServingAsWritten
	}
	return status.Readiness{PID: os.Getpid(), Time: time.Now().UTC(), Config: mode, Problems: p,
		Ready: mode == status.ServingAsWritten && len(p) == 0 && s.served.Load() != nil}
}

// tlsFallback is build's answer to a certificate or key that does not
// load under Options.KeepServing: a self-signed certificate for the site,
// and the problem, located at the site's tls.cert or tls.key.
func (s *Server) tlsFallback(t *table, cs *config.Site, cause error) (*tls.Certificate, error) {
	c, err := selfSigned(s.o.StateDir, cs.ServerNames, s.clock.Wall())
	if c == nil {
		return nil, err
	}
	if err != nil {
		s.warnNotStored(cs.File, err)
	}
	// cause is LoadCertificate's, located at the site's tls.cert or tls.key.
	if t.problems == nil {
		t.problems = map[string]string{}
	}
	t.problems["tls "+cs.File] = cause.Error() + "; serving a self-signed certificate for this site instead"
	s.log.Error("certificate did not load; serving a self-signed one instead", "site", cs.File, "err", cause)
	return c, nil
}

// servedCert is the certificate the served configuration loaded from the
// files of cs's site (the same site file), nil when it serves none from
// files (no such site, a self-signed or ACME certificate). s.mu is held.
func (s *Server) servedCert(cs *config.Site) *tls.Certificate {
	if s.table == nil {
		return nil
	}
	return s.table.certs[cs.File]
}

// keepCert is build's answer to a certificate or key that no longer loads
// on a reload under Options.KeepServing when the site served one from its
// files before: the site keeps serving prev, and the problem, located at
// the site's tls.cert, says so.
func (s *Server) keepCert(t *table, cs *config.Site, cause error, prev *tls.Certificate) *tls.Certificate {
	what := "the certificate loaded before"
	if leaf := certLeaf(prev); leaf != nil {
		what = fmt.Sprintf("the certificate loaded before (%s, valid until %s)", leaf.Subject, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if t.problems == nil {
		t.problems = map[string]string{}
	}
	t.problems["tls "+cs.File] = cause.Error() + "; this site keeps serving " + what
	s.log.Error("certificate did not load; the site keeps the one loaded before", "site", cs.File, "err", cause)
	return prev
}

// certLeaf is c's first certificate parsed, nil if it does not parse.
func certLeaf(c *tls.Certificate) *x509.Certificate {
	if c.Leaf != nil {
		return c.Leaf
	}
	if len(c.Certificate) == 0 {
		return nil
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}

// applyProblems makes t's certificate problems the server's (after t is
// swapped in).
func (s *Server) applyProblems(t *table) {
	s.probMu.Lock()
	defer s.probMu.Unlock()
	for k := range s.problems {
		if strings.HasPrefix(k, "tls ") {
			delete(s.problems, k)
		}
	}
	for k, v := range t.problems {
		s.setProblemLocked(k, v)
	}
	s.siteConditionsLocked()
}

// bindLater records an address Apply could not bind under
// Options.KeepServing and starts the retry loop. s.mu is held.
func (s *Server) bindLater(addr string, err error) {
	if s.pending == nil {
		s.pending = map[string]bool{}
	}
	s.pending[addr] = true
	s.SetProblem("listen "+addr, err.Error()+" (other addresses serve; retrying)")
	s.log.Error("cannot listen; the other addresses serve, this one is retried", "addr", addr, "err", err)
	if !s.retrying {
		s.retrying = true
		go s.retryBinds()
	}
}

// retryBinds tries the pending addresses again after 1 s, 2 s, 4 s, … up
// to a minute between tries, until all are bound or no longer configured.
// Its timers measure monotonic time: a clock set backwards does not stretch
// them.
func (s *Server) retryBinds() {
	delay := bindRetryFirst
	for {
		tm := time.NewTimer(delay)
		select {
		case <-s.done:
			tm.Stop()
			return
		case <-tm.C:
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		for addr := range s.pending {
			var vh *vhosts
			if s.table != nil {
				vh = s.table.vhosts[addr]
			}
			if vh == nil || s.listeners[addr] != nil {
				delete(s.pending, addr)
				s.SetProblem("listen "+addr, "")
				continue
			}
			raw, err := s.o.Listen("tcp", addr)
			if err != nil {
				s.SetProblem("listen "+addr, listenError(s.table.sites, addr, vh.tls, fmt.Errorf("listen %s: %w", addr, err)).Error()+
					fmt.Sprintf(" (other addresses serve; retrying every %s)", min(2*delay, bindRetryMax)))
				continue
			}
			l := s.newListener(addr, raw, vh.tls)
			l.vh.Store(vh)
			s.listeners[addr] = l
			l.start(s.log)
			delete(s.pending, addr)
			s.SetProblem("listen "+addr, "")
			s.log.Info("now listening", "addr", addr)
		}
		if len(s.pending) == 0 {
			s.retrying = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		delay = min(2*delay, bindRetryMax)
	}
}

// FallbackSite is the site cmd/arka -appliance serves when no
// configuration loads: on the plain and TLS addresses given (TLS with a
// self-signed certificate), the status page at /status (loopback and
// private networks) and everywhere else 503 Service Unavailable with a page
// listing the problems (to those networks' clients; see problemsPage).
func FallbackSite(listen, tlsListen []string) (*config.Site, error) {
	var b strings.Builder
	q := func(l []string) string {
		var s []string
		for _, a := range l {
			s = append(s, fmt.Sprintf("%q", a))
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	fmt.Fprintf(&b, "default = true\nlisten = %s\n", q(listen))
	if len(tlsListen) > 0 {
		fmt.Fprintf(&b, "[tls]\nlisten = %s\n", q(tlsListen))
	}
	b.WriteString("[[routes]]\npath = \"/status\"\nhandler = { type = \"status\" }\n")
	cs, err := config.Parse("(fallback site)", []byte(b.String()))
	if err != nil {
		return nil, err
	}
	cs.Routes = append(cs.Routes, config.Route{Path: "/", Handler: &config.Builtin{Name: problemsHandlerType}})
	return cs, nil
}

// problemsHandlerType is the handler of FallbackSite's "/" route, and
// unavailableHandlerType of a site made Unavailable; site files cannot
// name them.
const (
	problemsHandlerType    = "arka-problems"
	unavailableHandlerType = "arka-unavailable"
)

// identityKeys are the keys of a site file that say which requests are
// its site's (RFC 9110 section 7.4): its names, addresses and TLS
// certificate. UnavailableFile keeps them.
var identityKeys = []string{"default", "server_names", "listen", "tls"}

// UnavailableFile returns site files standing in for f, a site file with
// a mistake, in cmd/arka -appliance's partial serving, in order of
// preference: f's keys identityKeys and one route (to be made Unavailable
// once parsed); then, when f has [tls] keys besides listen, the same with
// tls.listen only (a self-signed certificate), in case a mistake is in
// [tls]. The first that config.ParseFiles accepts with the other site
// files (which checks them together) gives f's names, addresses and
// certificate to a site answering 503, so that f's visitors learn the site
// is down for now rather than get another site's pages or a 404. The
// error says why f does not decode far enough to know them (a TOML syntax
// error, a file past config.CheckTOML's bounds): then its names are
// unknown.
func UnavailableFile(f config.File) ([]config.File, error) {
	var doc map[string]any
	if _, err := config.DecodeTOML(f.Name, []byte(f.Data), &doc); err != nil {
		return nil, err
	}
	id := map[string]any{}
	for _, k := range identityKeys {
		if v, ok := doc[k]; ok {
			id[k] = v
		}
	}
	tries := []map[string]any{id}
	if t, ok := id["tls"].(map[string]any); ok && len(t) > 1 {
		lean := maps.Clone(id)
		lean["tls"] = map[string]any{}
		if l, ok := t["listen"]; ok {
			lean["tls"] = map[string]any{"listen": l}
		}
		tries = append(tries, lean)
	}
	var out []config.File
	for _, doc := range tries {
		var b bytes.Buffer
		if err := toml.NewEncoder(&b).Encode(doc); err != nil {
			return nil, err
		}
		b.WriteString("\n[[routes]]\npath = \"/\"\nhandler = { type = \"respond\", status = 503 }\n")
		out = append(out, config.File{Name: f.Name, Data: b.String()})
	}
	return out, nil
}

// Unavailable makes cs, parsed from a file of UnavailableFile, answer
// every request with 503 Service Unavailable and Retry-After (RFC 9110
// sections 15.6.4 and 10.2.3), the page of problemsPage.
func Unavailable(cs *config.Site) {
	cs.Routes = []config.Route{{Path: "/", Handler: &config.Builtin{Name: unavailableHandlerType}}}
}

// problemsPage answers 503 with the server's problems. Only clients the
// status page lets in by default (loopback and private networks,
// config.DefaultStatusAllow) see what is wrong: a site file's mistakes
// quote its paths and values, which are not for the whole internet.
// For a site made Unavailable (site set) the page says that this site's
// file has a mistake rather than the whole configuration.
type problemsPage struct {
	s    *Server
	site bool
}

// problemsAllow is who may read the problems (see problemsPage).
var problemsAllow = config.DefaultStatusAllowPrefixes()

// showProblems reports whether the client of r may read the problems: its
// connection comes from loopback or a private network (problemsAllow) and
// not through a proxy. A request that names a client in a forwarding field
// (Forwarded, RFC 7239; X-Forwarded-For; X-Real-IP) or carries Via (RFC
// 9110 section 7.6.3) came through one: behind nginx or cloudflared on the
// same machine or LAN every visitor's connection is a local one. The page
// has no site configuration (no trusted_proxies) to resolve the client
// with, so it does not try.
func showProblems(r *http.Request) bool {
	for _, f := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip", "Via"} {
		if len(r.Header[f]) > 0 {
			return false
		}
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, p := range problemsAllow {
		if p.Contains(a.WithZone("")) {
			return true
		}
	}
	return false
}

func (p problemsPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	b.WriteString("<!doctype html><meta charset=utf-8><title>Arka: configuration problem</title>\n")
	b.WriteString("<h1>This site is not available</h1>\n<p>")
	if p.site {
		b.WriteString("This site is down for now: its site file has a mistake. Arka serves this page until it loads.")
	} else {
		b.WriteString("Arka could not load its configuration and serves this page until it can.")
	}
	if showProblems(r) {
		b.WriteString(" What is wrong:</p>\n<pre>")
		for _, line := range p.s.Problems() {
			b.WriteString(html.EscapeString(line) + "\n")
		}
		b.WriteString("</pre>\n<p>Correct the site file, then reload Arka (SIGHUP, or restart it; on an appliance, deploy the site again or reboot).</p>\n")
	} else {
		b.WriteString(" What is wrong is shown on this page to clients on the device's own networks (not through a proxy), and in the log.</p>\n")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Retry-After", "60")
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.Method != http.MethodHead {
		w.Write([]byte(b.String()))
	}
}
