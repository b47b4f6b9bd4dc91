// Package acme gets, renews and serves certificates from an ACME CA (RFC
// 8555; Let's Encrypt by default) for the public names of TLS sites, with
// the HTTP-01 (RFC 8555 section 8.3) and TLS-ALPN-01 (RFC 8737)
// challenges answered by Arka's own listeners.
//
// The ACME protocol, renewal windows (with ACME Renewal Information), the
// CA's rate limits, storage locking and OCSP stapling come from
// github.com/caddyserver/certmagic, Caddy's certificate manager. Measured
// against golang.org/x/crypto/acme/autocert on `GOOS=linux GOARCH=arm64 go
// build -trimpath -ldflags='-s -w' ./cmd/arka` (2026-12-01): the binary
// was 14.35 MB without either, 15.14 MB with autocert (+0.79 MB) and
// 16.84 MB with certmagic (+2.49 MB); heap allocated by package
// initialisation (GODEBUG=inittrace=1) was 370 KB, +9 KB and +43 KB. The
// extra 1.7 MB buys what autocert lacks and Arka would otherwise write
// itself: obtaining in the background at start (autocert obtains during
// the first handshake, which then waits), control of which challenge runs
// where, events for the status page (last error, what is being obtained),
// loading and renewing from storage with a renewal window and ACME Renewal
// Information, rate-limit awareness and OCSP stapling.
//
// What Arka adds on top: which names are managed (config.ACMEEligible),
// the first certificate of each name obtained in the background with
// exponential backoff and jitter (a CA's "retry after" honoured), nothing
// ordered while the clock is not yet synchronised, a corrupt stored
// certificate moved aside and obtained again (a corrupt stored account
// moved aside and registered again), and a status per name.
// Renewal is certmagic's maintenance loop, which swaps the new certificate
// into the cache the handshakes read, without a reload.
package acme

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
)

// Options configure a Manager. Zero values take the documented defaults.
type Options struct {
	// StateDir is Arka's state directory; certificates, keys and the ACME
	// account live in StateDir/acme (directories 0700, files 0600).
	StateDir string
	// Logger receives one line per obtained, renewed or failed certificate.
	Logger *slog.Logger
	// ClockSynced reports whether the system clock can be trusted (see
	// ClockSynced); until it does, nothing is ordered and stored
	// certificates are not judged. Default ClockSynced.
	ClockSynced func() bool
	// RetryMin and RetryMax bound the wait between failed attempts to get
	// a name's first certificate: RetryMin doubling up to RetryMax, each
	// with up to 25% jitter. Defaults 1 minute and 6 hours.
	RetryMin, RetryMax time.Duration
	// RenewCheckInterval is how often certificates are checked for renewal
	// (default 10 minutes, certmagic's).
	RenewCheckInterval time.Duration
	// RenewalWindowRatio is the part of a certificate's lifetime, at its
	// end, in which it is renewed when the CA gives no renewal window of
	// its own (default 1/3: day 60 of a 90-day certificate).
	RenewalWindowRatio float64
}

// Site is one site's request for certificates: its public names and CA,
// and where its listeners are bound, for the challenges.
type Site struct {
	Names  []string // lower-case DNS names, one certificate each
	Email  string   // contact for the CA account, "" for none
	CA     string   // ACME directory URL
	CARoot string   // PEM file of extra roots to trust for the CA, or ""
	// CARootCerts are CARoot's certificates (config.CheckEnvironment
	// read the file).
	CARootCerts []*x509.Certificate
	// HTTPAddr is a bound plain listener of the site (host:port) where the
	// HTTP-01 challenge is answered, "" for none (HTTP-01 is then off);
	// TLSAddr a bound TLS listener, for TLS-ALPN-01 ("" turns it off).
	HTTPAddr, TLSAddr string
}

// Manager keeps the certificates of the managed names. Create it with New;
// Apply sets the names; the TLS listeners call Certificate and the plain
// ones ServeHTTPChallenge.
type Manager struct {
	o     Options
	log   *slog.Logger
	cache *certmagic.Cache
	dir   string

	mu     sync.Mutex
	groups map[string]*group // by issuer settings
	names  map[string]*name  // managed names
	served atomic.Pointer[map[string]*name]
	// anyGroup is a group for certificates of names no longer managed.
	anyGroup atomic.Pointer[group]
	closed   bool
	clockC   chan struct{} // closed once the clock is synchronised
	clock    atomic.Bool
	done     chan struct{}
}

// group is one certmagic configuration: the names sharing CA, account
// and challenge addresses.
type group struct {
	key    string
	site   Site
	magic  *certmagic.Config
	issuer *certmagic.ACMEIssuer
	// obtain is magic with the issuer wrapped in noPrompt, for the
	// obtains and renewals Arka runs itself (certmagic's "interactive"
	// ones, which would otherwise ask for an email on standard input).
	obtain *certmagic.Config
}

// noPrompt is an ACME issuer whose pre-check never prompts on the
// terminal: Arka is a server, and the email comes from the site file.
type noPrompt struct{ *certmagic.ACMEIssuer }

func (n noPrompt) PreCheck(ctx context.Context, names []string, _ bool) error {
	return n.ACMEIssuer.PreCheck(ctx, names, false)
}

// name is the state of one managed name.
type name struct {
	name   string
	g      *group
	cancel context.CancelFunc

	// served is the certificate the last handshake got from certmagic's
	// cache, reused for a second so that a handshake costs one map lookup
	// and a clock reading (a renewed certificate is picked up within it).
	served atomic.Pointer[servedCert]

	mu          sync.Mutex
	state       string // "waiting for clock", "obtaining", "valid", "error", "renewing"
	lastErr     string
	lastErrAt   time.Time
	nextAttempt time.Time
	attempts    int
}

// New returns a Manager that manages nothing until Apply.
func New(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.ClockSynced == nil {
		o.ClockSynced = ClockSynced
	}
	if o.RetryMin <= 0 {
		o.RetryMin = time.Minute
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 6 * time.Hour
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = o.RetryMin
	}
	m := &Manager{
		o:      o,
		log:    o.Logger.With("component", "acme"),
		dir:    filepath.Join(o.StateDir, "acme"),
		groups: map[string]*group{},
		names:  map[string]*name{},
		clockC: make(chan struct{}),
		done:   make(chan struct{}),
	}
	empty := map[string]*name{}
	m.served.Store(&empty)
	m.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   m.configForCert,
		RenewCheckInterval: o.RenewCheckInterval,
		Logger:             zapLogger(m.log),
	})
	go m.watchClock()
	return m
}

// Dir is where certificates, keys and accounts are stored.
func (m *Manager) Dir() string { return m.dir }

// configForCert is certmagic's GetConfigForCert. certmagic calls it with
// its cache locked, so it takes no lock of the Manager's (Apply holds m.mu
// while it removes names from the cache).
func (m *Manager) configForCert(c certmagic.Certificate) (*certmagic.Config, error) {
	names := *m.served.Load()
	for _, n := range c.Names {
		if st, ok := names[n]; ok {
			return st.g.magic, nil
		}
	}
	if g := m.anyGroup.Load(); g != nil {
		return g.magic, nil // a name no longer managed: any config can load its assets
	}
	return nil, errors.New("no ACME configuration")
}

// watchClock closes clockC once the clock is synchronised, checking every
// few seconds, and says so while it waits.
func (m *Manager) watchClock() {
	said := false
	for !m.o.ClockSynced() {
		if !said {
			m.log.Warn("the system clock is not synchronised yet (no NTP answer); certificates are neither ordered nor judged until it is")
			said = true
		}
		select {
		case <-m.done:
			return
		case <-time.After(2 * time.Second):
		}
	}
	if said {
		m.log.Info("the system clock is synchronised; managing certificates")
	}
	m.clock.Store(true)
	close(m.clockC)
}

// Apply makes sites the managed set: names new to it are loaded from
// storage or obtained in the background, names no longer in it stop being
// renewed, and names kept are left alone (a valid certificate is never
// ordered again), unless their CA or challenge addresses changed.
func (m *Manager) Apply(sites []Site) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("acme: manager is closed")
	}
	want := map[string]*group{}
	groups := map[string]*group{}
	for _, s := range sites {
		key := groupKey(s)
		g := groups[key]
		if g == nil {
			g = m.groups[key]
		}
		if g == nil {
			var err error
			if g, err = m.newGroup(key, s); err != nil {
				return err
			}
		}
		groups[key] = g
		for _, n := range s.Names {
			want[n] = g
		}
	}
	var removed []certmagic.SubjectIssuer
	for n, st := range m.names {
		if g, ok := want[n]; ok && g == st.g {
			continue
		}
		st.cancel()
		delete(m.names, n)
		removed = append(removed, certmagic.SubjectIssuer{Subject: n})
		m.log.Info("no longer managing a certificate", "name", n)
	}
	if len(removed) > 0 {
		m.cache.RemoveManaged(removed)
	}
	for n, g := range want {
		if _, ok := m.names[n]; ok {
			continue
		}
		m.log.Info("managing a certificate", "name", n, "ca", g.site.CA)
		ctx, cancel := context.WithCancel(context.Background())
		st := &name{name: n, g: g, cancel: cancel, state: "starting"}
		m.names[n] = st
		go m.manage(ctx, st)
	}
	m.groups = groups
	for _, g := range groups {
		m.anyGroup.Store(g)
		break
	}
	served := make(map[string]*name, len(m.names))
	for n, st := range m.names {
		served[n] = st
	}
	m.served.Store(&served)
	return nil
}

func groupKey(s Site) string {
	return strings.Join([]string{s.CA, s.Email, s.CARoot, s.HTTPAddr, s.TLSAddr}, "\x00")
}

func (m *Manager) newGroup(key string, s Site) (*group, error) {
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return nil, fmt.Errorf("acme: state directory: %w", err)
	}
	os.Chmod(m.dir, 0o700)
	g := &group{key: key, site: s}
	cfg := certmagic.Config{
		RenewalWindowRatio: m.o.RenewalWindowRatio,
		Storage:            &certmagic.FileStorage{Path: m.dir},
		Logger:             zapLogger(m.log),
		OnEvent:            m.onEvent,
		ShouldEmitFunc:     func(event string) bool { return event != "tls_get_certificate" },
	}
	g.magic = certmagic.New(m.cache, cfg)
	tmpl := certmagic.ACMEIssuer{
		CA:                      s.CA,
		TestCA:                  s.CA, // never fall back to another CA by ourselves
		Email:                   s.Email,
		Agreed:                  true,
		DisableHTTPChallenge:    s.HTTPAddr == "",
		DisableTLSALPNChallenge: s.TLSAddr == "",
		// Distributed solving stays on: with it off, certmagic answers
		// any token for a managed name ("blindly"), which RFC 8555
		// section 8.3 advises against.
		Logger: zapLogger(m.log),
	}
	// The challenges are answered by Arka's own listeners: point
	// certmagic's solvers at them, so that it finds the port taken (by
	// Arka) and never binds one itself.
	if s.HTTPAddr != "" {
		host, port, err := net.SplitHostPort(s.HTTPAddr)
		if err != nil {
			return nil, err
		}
		tmpl.ListenHost = host
		tmpl.AltHTTPPort, _ = strconv.Atoi(port)
	}
	if s.TLSAddr != "" {
		host, port, err := net.SplitHostPort(s.TLSAddr)
		if err != nil {
			return nil, err
		}
		if tmpl.ListenHost == "" {
			tmpl.ListenHost = host
		}
		tmpl.AltTLSALPNPort, _ = strconv.Atoi(port)
	}
	if s.CARoot != "" {
		if len(s.CARootCerts) == 0 {
			return nil, fmt.Errorf("acme: ca_root %s was not read (config.CheckEnvironment reads it)", s.CARoot)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		for _, c := range s.CARootCerts {
			pool.AddCert(c)
		}
		tmpl.TrustedRoots = pool
	}
	g.issuer = certmagic.NewACMEIssuer(g.magic, tmpl)
	g.magic.Issuers = []certmagic.Issuer{g.issuer}
	g.obtain = certmagic.New(m.cache, cfg)
	g.obtain.Issuers = []certmagic.Issuer{noPrompt{g.issuer}}
	return g, nil
}

// manage gets a name its first certificate: from storage, else from the
// CA, retrying with backoff until it has one; certmagic renews it from
// then on.
func (m *Manager) manage(ctx context.Context, st *name) {
	if !m.clock.Load() {
		st.set("waiting for clock", nil, time.Time{})
		select {
		case <-ctx.Done():
			return
		case <-m.clockC:
		}
	}
	for {
		err := m.loadOrObtain(ctx, st)
		if err == nil || ctx.Err() != nil {
			return
		}
		wait := m.backoff(st.attempts, err)
		st.set("error", err, time.Now().Add(wait))
		m.log.Error("could not get a certificate; will try again", "name", st.name, "ca", st.g.site.CA,
			"attempt", st.attempts, "retry_in", wait.Round(time.Second).String(), "err", errText(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (m *Manager) loadOrObtain(ctx context.Context, st *name) error {
	cfg := st.g.magic
	c, err := cfg.CacheManagedCertificate(ctx, st.name)
	switch {
	case err == nil:
		m.log.Info("certificate loaded from storage", "name", st.name, "not_after", c.Leaf.NotAfter)
		st.set("valid", nil, time.Time{})
		return m.renewIfNeeded(ctx, st, c)
	case !errors.Is(err, fs.ErrNotExist):
		// Stored but unusable (a torn write, a bad disk): keep the files
		// for inspection, out of the way, and obtain a new one.
		m.log.Warn("stored certificate is unusable; obtaining a new one", "name", st.name, "err", err)
		m.moveAside(ctx, st)
	}
	st.attempts++
	st.set("obtaining", nil, time.Time{})
	m.checkAccount(st)
	if err := st.g.obtain.ObtainCertSync(ctx, st.name); err != nil {
		return err
	}
	c, err = cfg.CacheManagedCertificate(ctx, st.name)
	if err != nil {
		return fmt.Errorf("loading the obtained certificate: %w", err)
	}
	st.attempts = 0
	st.set("valid", nil, time.Time{})
	m.log.Info("certificate obtained", "name", st.name, "issuer", issuerName(c.Leaf), "not_after", c.Leaf.NotAfter)
	return nil
}

// renewIfNeeded renews a stored certificate that is already in its renewal
// window (certmagic's maintenance would too, but only at its next check).
func (m *Manager) renewIfNeeded(ctx context.Context, st *name, c certmagic.Certificate) error {
	if !c.NeedsRenewal(st.g.magic) {
		return nil
	}
	st.attempts++
	st.set("renewing", nil, time.Time{})
	m.checkAccount(st)
	if err := st.g.obtain.RenewCertSync(ctx, st.name, false); err != nil {
		if c.Expired() {
			return err
		}
		// The stored certificate still serves; certmagic's maintenance
		// retries the renewal with its own backoff.
		st.set("valid", err, time.Time{})
		return nil
	}
	st.attempts = 0
	if _, err := st.g.magic.CacheManagedCertificate(ctx, st.name); err != nil {
		return err
	}
	st.set("valid", nil, time.Time{})
	return nil
}

// moveAside renames a name's stored certificate directory to *.corrupt-TIME.
func (m *Manager) moveAside(ctx context.Context, st *name) {
	key := certmagic.StorageKeys.CertsSitePrefix(st.g.issuer.IssuerKey(), st.name)
	dir := filepath.Join(m.dir, filepath.FromSlash(key))
	dst := dir + ".corrupt-" + time.Now().UTC().Format("20060102T150405")
	if err := os.Rename(dir, dst); err != nil {
		m.log.Warn("cannot move the unusable certificate aside; deleting it", "dir", dir, "err", err)
		st.g.magic.Storage.Delete(ctx, key)
	}
}

// checkAccount moves the stored ACME account of st's issuer (certmagic's
// acme/CA/users/EMAIL directory: the account's key and registration) aside
// to *.corrupt-TIME when a file of it does not decode (a torn write, a bad
// SD card), so that certmagic registers a new account instead of failing
// every order on the old one, for ever: an account holds nothing that
// cannot be made again.
func (m *Manager) checkAccount(st *name) {
	email := st.g.issuer.Email
	if email == "" {
		email = "default" // certmagic's name for an account without a contact
	}
	dir := filepath.Join(m.dir, "acme", certmagic.StorageKeys.Safe(st.g.issuer.IssuerKey()), "users", certmagic.StorageKeys.Safe(email))
	files, err := os.ReadDir(dir)
	if err != nil {
		return // none stored yet (or unreadable: certmagic says why)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		switch {
		case err != nil:
		case strings.HasSuffix(f.Name(), ".key"):
			_, err = certmagic.PEMDecodePrivateKey(b)
		case strings.HasSuffix(f.Name(), ".json") && !json.Valid(b):
			err = errors.New("not JSON")
		}
		if err == nil {
			continue
		}
		dst := dir + ".corrupt-" + time.Now().UTC().Format("20060102T150405")
		m.log.Warn("stored ACME account is unusable; registering a new one", "file", filepath.Join(dir, f.Name()), "err", err, "moved_to", dst)
		if err := os.Rename(dir, dst); err != nil {
			m.log.Warn("cannot move the unusable account aside; deleting it", "dir", dir, "err", err)
			os.RemoveAll(dir)
		}
		return
	}
}

// backoff is the wait after the n-th failed attempt: RetryMin doubling up
// to RetryMax, plus up to 25% jitter, and at least what a rate-limited
// CA asked for.
func (m *Manager) backoff(n int, err error) time.Duration {
	d := m.o.RetryMin
	for i := 1; i < n && d < m.o.RetryMax; i++ {
		d *= 2
	}
	d = min(d, m.o.RetryMax)
	d += time.Duration(rand.Int64N(int64(d)/4 + 1))
	if after, ok := retryAfter(err, time.Now()); ok && after > d {
		d = after
	}
	return d
}

// retryAfterRE finds the time a CA names in a rate-limit problem detail
// ("... retry after 2026-12-01 15:04:05 UTC: see https://...").
var retryAfterRE = regexp.MustCompile(`retry after (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC`)

// retryAfter returns how long a rate-limited CA asked to wait (RFC 8555
// section 6.6: problem type rateLimited), or an hour when it names no time.
func retryAfter(err error, now time.Time) (time.Duration, bool) {
	var p acme.Problem
	if err == nil || !errors.As(err, &p) || p.Type != acme.ProblemTypeRateLimited {
		return 0, false
	}
	if m := retryAfterRE.FindStringSubmatch(p.Detail); m != nil {
		if t, err := time.Parse(time.DateTime, m[1]); err == nil && t.After(now) {
			return t.Sub(now), true
		}
	}
	return time.Hour, true
}

// onEvent records certmagic's events on the names' status.
func (m *Manager) onEvent(_ context.Context, event string, data map[string]any) error {
	id, _ := data["identifier"].(string)
	if id == "" {
		return nil
	}
	st := (*m.served.Load())[id]
	if st == nil {
		return nil
	}
	renewal, _ := data["renewal"].(bool)
	switch event {
	case "cert_obtaining":
		if renewal {
			st.set("renewing", nil, time.Time{})
		}
	case "cert_obtained":
		if renewal {
			st.set("valid", nil, time.Time{})
			m.log.Info("certificate renewed", "name", id)
		}
	case "cert_failed":
		err, _ := data["error"].(error)
		if err == nil {
			err = errors.New("failed")
		}
		if renewal {
			st.set("valid", err, time.Now().Add(m.renewCheck()))
			m.log.Error("could not renew a certificate; the current one keeps serving", "name", id, "err", errText(err))
		}
	}
	return nil
}

func (m *Manager) renewCheck() time.Duration {
	if m.o.RenewCheckInterval > 0 {
		return m.o.RenewCheckInterval
	}
	return certmagic.DefaultRenewCheckInterval
}

func (st *name) set(state string, err error, next time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.state = state
	if err != nil {
		st.lastErr, st.lastErrAt = errText(err), time.Now()
	} else if state == "valid" {
		st.lastErr, st.lastErrAt = "", time.Time{}
	}
	st.nextAttempt = next
}

// errText is an error for people: the CA's problem type and detail
// (RFC 7807) when there is one, not the wrapping.
func errText(err error) string {
	var p acme.Problem
	if errors.As(err, &p) {
		s := p.Detail
		if t := strings.TrimPrefix(p.Type, "urn:ietf:params:acme:error:"); t != "" {
			s = t + ": " + s
		}
		for _, sub := range p.Subproblems {
			s += "; " + sub.Detail
		}
		return s
	}
	return err.Error()
}

// Certificate returns the certificate for a TLS handshake when its SNI
// name is managed and has one, or the TLS-ALPN-01 challenge certificate
// (RFC 8737 section 3) for the CA's validation handshake. ok is false when
// the Manager has nothing for this handshake: the caller serves its own
// (self-signed) certificate then.
func (m *Manager) Certificate(hello *tls.ClientHelloInfo) (c *tls.Certificate, ok bool, err error) {
	if len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == ALPNProto {
		if g := m.groupOf(strings.ToLower(hello.ServerName)); g != nil {
			if c, err := g.magic.GetCertificate(hello); err == nil {
				return c, true, nil
			}
		}
		return nil, true, fmt.Errorf("acme: no tls-alpn-01 challenge for %q", hello.ServerName)
	}
	names := *m.served.Load()
	if len(names) == 0 {
		return nil, false, nil
	}
	n := hello.ServerName
	st := names[n]
	if st == nil {
		if st = names[strings.ToLower(n)]; st == nil {
			return nil, false, nil
		}
	}
	now := time.Now()
	if sc := st.served.Load(); sc != nil && now.Sub(sc.at) < servedFor {
		return sc.c, true, nil
	}
	c, err = st.g.magic.GetCertificate(hello)
	if err != nil || c == nil || len(c.Certificate) == 0 {
		return nil, false, nil
	}
	st.served.Store(&servedCert{c: c, at: now})
	return c, true, nil
}

type servedCert struct {
	c  *tls.Certificate
	at time.Time
}

// servedFor is how long a certificate taken from certmagic's cache is
// served without asking again.
const servedFor = time.Second

// ALPNProto is the ALPN protocol of the TLS-ALPN-01 challenge (RFC 8737
// section 6.2); TLS listeners must offer it and close such connections
// after the handshake.
const ALPNProto = "acme-tls/1"

// groupOf returns the group of a managed name, or nil. Challenges are
// answered only for managed names: another site's
// /.well-known/acme-challenge/ (a certbot webroot) stays its own.
func (m *Manager) groupOf(host string) *group {
	if st := (*m.served.Load())[host]; st != nil {
		return st.g
	}
	return nil
}

// ChallengePath is where HTTP-01 challenges are asked (RFC 8555 section 8.3).
const ChallengePath = "/.well-known/acme-challenge/"

// ServeHTTPChallenge answers an HTTP-01 challenge request for a managed
// name and reports whether it did; other requests are left to the caller.
func (m *Manager) ServeHTTPChallenge(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, ChallengePath) {
		return false
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	g := m.groupOf(strings.ToLower(strings.TrimSuffix(host, ".")))
	return g != nil && g.issuer.HandleHTTPChallenge(w, r)
}

// Status is one managed certificate as the status page shows it.
type Status struct {
	Name        string    `json:"name"`
	State       string    `json:"state"` // waiting for clock, obtaining, valid, renewing, error
	CA          string    `json:"ca"`
	Issuer      string    `json:"issuer,omitempty"`
	NotBefore   time.Time `json:"not_before,omitzero"`
	NotAfter    time.Time `json:"not_after,omitzero"`
	NextRenewal time.Time `json:"next_renewal,omitzero"` // when renewal is due (or the next try after a failure)
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// Statuses returns every managed name's status, sorted by name.
func (m *Manager) Statuses() []Status {
	names := *m.served.Load()
	out := make([]Status, 0, len(names))
	for n, st := range names {
		st.mu.Lock()
		s := Status{Name: n, State: st.state, CA: st.g.site.CA, LastError: st.lastErr,
			LastErrorAt: st.lastErrAt, NextRenewal: st.nextAttempt}
		st.mu.Unlock()
		if !m.clock.Load() {
			s.State = "waiting for clock"
		}
		for _, c := range m.cache.AllMatchingCertificates(n) {
			if c.Leaf == nil || c.Leaf.NotAfter.Before(s.NotAfter) {
				continue
			}
			s.Issuer, s.NotBefore, s.NotAfter = issuerName(c.Leaf), c.Leaf.NotBefore, c.Leaf.NotAfter
			if s.NextRenewal.IsZero() {
				s.NextRenewal = m.renewalDue(c)
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// renewalDue is when a certificate enters its renewal window (without
// the CA's ACME Renewal Information, which may move it earlier).
func (m *Manager) renewalDue(c certmagic.Certificate) time.Time {
	ratio := m.o.RenewalWindowRatio
	if ratio <= 0 {
		ratio = certmagic.DefaultRenewalWindowRatio
	}
	life := c.Leaf.NotAfter.Sub(c.Leaf.NotBefore)
	return c.Leaf.NotAfter.Add(-time.Duration(float64(life) * ratio))
}

func issuerName(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	if c.Issuer.CommonName != "" {
		return c.Issuer.CommonName
	}
	return c.Issuer.String()
}

// ClockWaiting reports whether the Manager is waiting for the clock.
func (m *Manager) ClockWaiting() bool { return !m.clock.Load() }

// Close stops obtaining and renewing.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	for _, st := range m.names {
		st.cancel()
	}
	close(m.done)
	m.cache.Stop()
}
