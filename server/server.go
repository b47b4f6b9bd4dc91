// Package server is Arka's HTTP engine and request path: listeners (HTTP/1.1,
// TLS with HTTP/2), virtual hosts by Host and SNI, routes by longest prefix,
// middleware (request ids, access log, counters, content coding) and the
// handlers in its sub-packages. A configuration is compiled into an
// immutable table and swapped atomically on reload.
//
// # TLS: what is offered, and where the time goes
//
// TLS 1.2 and 1.3 (min_version "1.3" per site), TLS 1.2 with ECDHE and AEAD
// suites only (tls12CipherSuites); key exchange groups, TLS 1.3 suites and
// session tickets are crypto/tls's defaults, as Caddy's: the hybrid
// post-quantum X25519MLKEM768, SecP256r1MLKEM768 and SecP384r1MLKEM1024,
// then X25519, P-256, P-384, P-521, the group a client
// sent a key share for picked first so that no HelloRetryRequest is
// needed; tickets encrypted with keys crypto/tls rotates itself, one new
// ticket per handshake, resumption with (EC)DHE only (psk_dhe_ke, so a
// resumed session keeps forward secrecy). Records carry up to 16 KiB from
// the first byte (DynamicRecordSizingDisabled), as nginx's default
// ssl_buffer_size.
//
// A new TLS connection that resumes a session (the bench test newconn-tls:
// wrk, OpenSSL 3.0, one request per connection with Connection: close).
// What wrk and the servers negotiate (its records relayed and decoded,
// 2026-12): TLS 1.3 with both Arka and nginx; wrk offers the groups
// X25519, P-256, X448, P-521, P-384 and ffdhe2048-8192 but a key share for
// X25519 only, and psk_dhe_ke resumption with the ticket of its previous
// connection, from its second connection on. So both servers do the same
// key exchange (X25519) and, resuming, no certificate signature (the same
// ECDSA P-256 certificate serves full handshakes). Arka picks
// TLS_AES_128_GCM_SHA256, nginx (OpenSSL's order) TLS_AES_256_GCM_SHA384.
// Each sends one NewSessionTicket per resumed handshake (nginx two after a
// full one, Arka one), which wrk uses for its next connection; crypto/tls
// sends it in the same write as the server's Finished (its flight is one
// write), so it costs its sealing and the ticket's encryption (4 % of
// Arka's CPU, and 64 of the allocations below), not a system call.
//
// Where a resumed connection's CPU goes (ARKA_CPUPROFILE under wrk -t2
// -c64, 15 s, shared 2-core machine; 0.31-0.35 ms of CPU per connection
// for Arka, 0.43-0.52 ms for nginx with 2 workers in alternated runs):
//   - 36 % X25519: the ephemeral key and the shared secret, two scalar
//     multiplications. Go's take 55-66 us of CPU each here, OpenSSL's 38
//     us (openssl speed ecdhx25519): the same work costs Arka about 50 us
//     more per connection than nginx, inside crypto/tls. P-256 would be
//     cheaper in Go (16 us for the key, which has a fixed-base table, and
//     about 56 us for the secret) and is as strong (128-bit security), but
//     wrk sends no P-256 key share: picking it would cost a
//     HelloRetryRequest (a second ClientHello and a round trip more), so a
//     client's X25519 share is taken as it comes.
//   - 18 % system calls: about 18 per connection (strace -c -f; nginx's
//     workers about 20): accept4, getsockname, one setsockopt
//     (TCP_NODELAY; TCP keep-alive is inherited from the listening socket,
//     listenTCP), two epoll_ctl, about five reads (the client's Finished,
//     the request, its close_notify, EAGAINs; the ClientHello is there at
//     accept, TCP_DEFER_ACCEPT), two
//     writes (the server's flight with its ticket; the answer with
//     close_notify, see h1's closeWrite), close; the rest is the
//     scheduler's futex and nanosleep.
//   - 15-20 % the rest of crypto/tls: HKDF of the key schedule
//     (HMAC-SHA256, 7 %), the ticket's decryption and the new one's
//     encryption, AES-GCM set-up.
//   - 12 % allocation and collection: about 440 allocations per resumed
//     connection, 390 of them in crypto/tls's handshake, the rest the
//     HTTP/1.1 engine's (BenchmarkTLSResumedConn with -memprofile).
//   - 1-3 % stack growth and scheduling: one goroutine per connection, a
//     tlsWorker reused from connection to connection, handed each by the
//     accept loop.
//
// Time to first byte of such a connection, one client, sequential
// connections (Go's client, X25519, resuming; shared machine): median
// 0.54-0.66 ms for Arka, 0.78-1.4 ms for nginx.
//
// A full handshake adds the certificate's signature (ECDSA P-256, fast in
// Go; an RSA 2048 key costs about 1 ms a handshake) and, for clients that
// offer it (current browsers, OpenSSL 3.5), ML-KEM-768 encapsulation:
// 0.52-0.53 ms of CPU per connection against nginx's 0.65-0.68 ms
// (openssl s_time -new, two clients, same certificate; resuming with
// -reuse 0.38-0.39 against 0.46-0.47).
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/board/fan"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/acme"
	"github.com/arkaweb/arka/server/internal/encoding"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/fastcgi"
	"github.com/arkaweb/arka/server/internal/h1"
	"github.com/arkaweb/arka/server/internal/h2"
	"github.com/arkaweb/arka/server/internal/limits"
	"github.com/arkaweb/arka/server/internal/monotime"
	"github.com/arkaweb/arka/server/internal/realip"
	"github.com/arkaweb/arka/server/internal/spool"
	"github.com/arkaweb/arka/server/internal/static"
	"github.com/arkaweb/arka/server/internal/wire"
	"github.com/arkaweb/arka/server/status"
)

// Options configure a Server. Zero values take the documented defaults.
type Options struct {
	// StateDir holds generated files (self-signed certificates). Required
	// when a TLS site has no certificate of its own.
	StateDir string
	// SpoolDir is where request bodies larger than the in-memory buffer
	// are spooled (unlinked files) by FastCGI and proxy routes. Empty
	// means <StateDir>/tmp, created 0700 by New; if that fails or there
	// is no StateDir, os.TempDir().
	SpoolDir string
	// Logger receives the error log: one line per event, naming site,
	// route and cause. Default: slog to standard error.
	Logger *slog.Logger
	// Cache bounds the static-file caches (see static.CacheOptions).
	Cache static.CacheOptions
	// Board and Budget describe the machine (package board). Budget sets
	// cache sizes and the defaults of "auto" pool sizes; a zero Budget
	// takes the package defaults.
	Board  board.Board
	Budget board.Budget
	// Thermal, when set, says when the board is too hot: optional CPU work
	// (brotli, high compression levels) then stops, and the status page
	// shows its state. Its owner feeds it readings (board.Thermal.Run).
	Thermal *board.Thermal
	// FanState, when set, returns the state of the GPIO case fan (package
	// board/fan) for the status page, nil while none is driven. The fan's
	// owner feeds it the temperature and may replace it on reload
	// (cmd/arka: the thermal ticker's readings, board.Thermal.Run).
	FanState func() *fan.State
	// Conditions, when set, are what the appliance is doing and why
	// (package board/led); the status page shows them as the activity LED
	// does. The server raises "site:NAME" conditions itself (SetConfigError).
	Conditions *led.Conditions
	// LEDName, when set, returns the LED class name of the activity LED
	// Arka drives now, "" when none (no LED, or [global] led = false).
	LEDName func() string
	// BoardRoot is the directory that stands for "/" when the sensors are
	// read (/proc, /sys); default "/". Tests point it at fixture trees.
	BoardRoot string
	// DiskPath is the writable partition whose free space the status page
	// shows (default StateDir).
	DiskPath string

	// Client limits, the same for HTTP/1.1 and HTTP/2 (one
	// server/internal/limits.Limits is built from them and given to both
	// engines; zero means the default, negative none):
	// ReadHeaderTimeout bounds sending a request head and the wait for a
	// new connection's first request (default 20 s); IdleTimeout closes
	// connections with no request in progress (default 75 s, as nginx's
	// keepalive_timeout); MaxHeaderBytes bounds the request header (default
	// 32 KiB; larger gets 431, RFC 6585 section 5). WriteTimeout
	// bounds a send that makes no progress (default 60 s, nginx's
	// send_timeout): over HTTP/2 a stream without flow-control window for
	// that long is reset, and a connection none of whose streams
	// progresses is closed. The request body limits are settings
	// ([global] body_timeout and body_min_rate, config/clientbody.go),
	// applied by Apply.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	WriteTimeout      time.Duration
	// MaxConns bounds the connections open at once per listen address; 0
	// means no bound. cmd/arka derives it from the board's memory.
	MaxConns int
	// ShutdownTimeout bounds the wait for in-flight requests on shutdown
	// and for an old configuration's requests after a reload (default 10 s).
	ShutdownTimeout time.Duration
	// Listen binds a listen address (default listenTCP: net.Listen with
	// TCP keep-alive set on the listening socket), for tests that
	// hand over sockets they bound themselves.
	Listen func(network, address string) (net.Listener, error)
	// PHP is the php-fpm Arka runs itself (package appliance/device/phpfpm), used
	// by fastcgi routes whose address is "php" or empty, and shown on the
	// status page. Nil when Arka runs none: such routes are then errors.
	PHP PHP
	// KeepServing serves what can be served instead of failing Apply: a
	// site whose certificate or key does not load gets a self-signed one,
	// an address that cannot be bound is retried with backoff (see
	// degrade.go); both are reported by Problems and Readiness. cmd/arka
	// sets it with -appliance.
	KeepServing bool
	// ACME tunes the certificate manager of sites whose certificates come
	// from an ACME CA (package acme; its StateDir and Logger are this
	// server's). The zero value takes its defaults.
	ACME acme.Options
}

// FileCacheValid is how long the static-file cache trusts what it knew
// about a file (static.DefaultValid): a file replaced on disk is served
// new at most this long after. cmd/arka-init waits this long after
// repointing a deployed site before it answers the deploy.
const FileCacheValid = static.DefaultValid

// PHP is the php-fpm pool Arka runs itself, as the server sees it.
type PHP interface {
	// Address is the pool's FastCGI address ("unix:/path.sock"), or ""
	// while Arka runs no php-fpm.
	Address() string
	// MaxChildren is pm.max_children: the default max_conns of routes to
	// the pool, so that requests queue in Arka's FIFO, not in php-fpm.
	MaxChildren() int
	// Status is php-fpm's own view of the pool (its status page), or nil
	// while it does not answer.
	Status() []status.PHPFPMPool
}

// Server runs listeners for a configuration and swaps configurations on
// reload. Create it with New, then call Apply.
type Server struct {
	o      Options
	limits limits.Limits // the engines' client limits, from o
	log    *slog.Logger
	cache  *static.Cache
	pools  *encoding.Pools

	started time.Time
	history *status.History
	rates   rateTracker

	mu        sync.Mutex // serializes Apply and Shutdown
	table     *table
	served    atomic.Pointer[table] // s.table, for readers that must not take mu
	fcgiPools fastcgi.Pools         // one pool per FastCGI address, kept across reloads
	spool     *spool.Budget         // spooled request bodies (spoolBudget), kept across reloads
	listeners map[string]*listener
	sinks     map[string]*logSink
	stats     map[string]*RouteStats
	statsMu   sync.Mutex
	done      chan struct{}
	closed    bool
	pending   map[string]bool // addresses to bind again (KeepServing); under mu
	retrying  bool            // retryBinds runs; under mu

	probMu   sync.Mutex
	problems map[string]string            // see SetProblem
	serving  string                       // see SetServing
	siteErrs map[string][]string          // see SetConfigError: site file -> its mistakes
	acme     atomic.Pointer[acme.Manager] // created by the first Apply with ACME sites

	clock     clock     // see clockjump.go; tests set their own before the first Apply
	clockOnce sync.Once // starts clockLoop at the first Apply
}

// New returns a Server that serves nothing until Apply.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.DiskPath == "" {
		o.DiskPath = o.StateDir
	}
	if o.Listen == nil {
		o.Listen = listenTCP
	}
	if o.SpoolDir == "" && o.StateDir != "" {
		// Request bodies are spooled to disk under the state directory
		// (on the appliance /perm), never to a RAM-backed /tmp.
		d := filepath.Join(o.StateDir, "tmp")
		if err := os.MkdirAll(d, 0o700); err == nil {
			o.SpoolDir = d
		} else {
			o.Logger.Warn("request bodies will be spooled to the system's temporary directory", "err", err)
		}
	}
	if b := o.Budget; b.OpenFileCacheBytes > 0 && o.Cache.FileBytes == 0 {
		o.Cache.FileBytes = b.OpenFileCacheBytes + b.ContentCacheBytes
		o.Cache.VariantBytes = b.CompressedBytes
	}
	s := &Server{
		o: o, log: o.Logger,
		limits: limits.Limits{
			ReadHeader: o.ReadHeaderTimeout, Idle: o.IdleTimeout, HeaderBytes: o.MaxHeaderBytes,
			Write: o.WriteTimeout,
			Body:  limits.NewBody(config.DefaultBodyTimeout, config.DefaultBodyMinRate),
		},
		started:   time.Now(),
		history:   status.NewHistory(),
		cache:     static.NewCache(o.Cache),
		pools:     &encoding.Pools{},
		listeners: map[string]*listener{},
		sinks:     map[string]*logSink{},
		stats:     map[string]*RouteStats{},
		done:      make(chan struct{}),
		clock:     systemClock{start: time.Now()},
		spool:     spoolBudget(o.Budget),
	}
	go s.flushLoop()
	go s.sampleLoop()
	return s
}

// constrained reports whether the board is hot.
func (s *Server) constrained() bool { return s.o.Thermal != nil && s.o.Thermal.Hot() }

// Check compiles sites without binding, generating or opening anything
// that persists: the `arka -t` dry run. It returns config.Errors.
func (s *Server) Check(sites []*config.Site) error {
	t, err := s.build(sites, true)
	if err != nil {
		return err
	}
	t.close()
	return nil
}

// Apply compiles sites and makes them the served configuration, as one
// transaction. First everything the new configuration needs is prepared
// while the old one keeps serving: handlers, certificates, and a socket
// for every listen address (the socket of an address that stays is kept,
// also when the address switches between plain HTTP and TLS). Only when
// all of that succeeded is the new configuration swapped in; otherwise
// nothing changes, every address keeps serving what it served, and the
// error says why. After the swap, listeners for removed addresses shut
// down gracefully, and requests already in flight finish on the
// configuration they started on, whose handlers are closed when the last
// of them ends.
func (s *Server) Apply(sites []*config.Site) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("server is shut down")
	}
	s.clockOnce.Do(func() { go s.clockLoop() })
	t, err := s.build(sites, false)
	if err != nil {
		return err
	}
	s.setACME(sites, t)
	// Prepare: nothing old is touched.
	next := map[string]*listener{}
	var fresh []*listener    // on sockets bound now
	var switched []*listener // on an old listener's socket, TLS switched on or off
	for _, addr := range sortedAddrs(t.vhosts) {
		vh := t.vhosts[addr]
		old, ok := s.listeners[addr]
		switch {
		case ok && old.tls == vh.tls:
			next[addr] = old
		case ok:
			l := s.newListener(addr, old.sock.raw, vh.tls)
			switched = append(switched, l)
			next[addr] = l
		default:
			raw, err := s.o.Listen("tcp", addr)
			if err != nil && s.o.KeepServing {
				defer s.bindLater(addr, listenError(sites, addr, vh.tls, fmt.Errorf("listen %s: %w", addr, err)))
				continue
			}
			if err != nil {
				for _, l := range fresh {
					l.sock.raw.Close()
				}
				t.close()
				return listenError(sites, addr, vh.tls, fmt.Errorf("listen %s: %w", addr, err))
			}
			l := s.newListener(addr, raw, vh.tls)
			fresh = append(fresh, l)
			next[addr] = l
		}
	}
	// Commit: nothing below fails.
	body := config.GlobalOf(sites).ClientBody()
	s.limits.Body.Set(body.Timeout, body.MinRate)
	for addr, l := range next {
		l.vh.Store(t.vhosts[addr])
	}
	for _, l := range fresh {
		l.start(s.log)
	}
	old := s.table
	// A listener that goes keeps the old table alive until it has shut
	// down: its open connections may still start requests.
	retire := func(l *listener) {
		if old != nil {
			old.refs.Add(1)
		}
		go func() {
			l.shutdown(s.o.ShutdownTimeout)
			if old != nil {
				old.release()
			}
		}()
	}
	for _, l := range switched {
		prev := s.listeners[l.addr]
		prev.detach()
		l.start(s.log)
		retire(prev)
	}
	for addr, l := range s.listeners {
		if next[addr] == nil {
			retire(l)
		}
	}
	s.table, s.listeners = t, next
	s.served.Store(t)
	s.applyProblems(t)
	for addr := range s.pending {
		if t.vhosts[addr] == nil || s.listeners[addr] != nil {
			delete(s.pending, addr)
			s.SetProblem("listen "+addr, "")
		}
	}
	s.applyACME(sites, t)
	retired := s.retireSinks(t)
	if old != nil {
		// The old table's handlers, and the log files only it wrote to,
		// are closed when its last request ends.
		old.onClose = append(old.onClose, func() {
			for _, k := range retired {
				k.close()
			}
		})
		old.release()
	} else {
		for _, k := range retired {
			k.close()
		}
	}
	return nil
}

// sortedAddrs returns the listen addresses in a fixed order, so that which
// bind fails first (and is reported) does not depend on map order.
func sortedAddrs(m map[string]*vhosts) []string {
	out := make([]string, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// listenError locates a failure to bind addr at the first site file line
// that names it.
func listenError(sites []*config.Site, addr string, isTLS bool, err error) error {
	msg := err.Error()
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		msg = fmt.Sprintf("cannot listen on %s: %v", addr, oe.Err)
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			msg = fmt.Sprintf("cannot listen on %s: %v", addr, se.Err)
		}
	}
	for _, cs := range sites {
		list, key := cs.Listen, "listen"
		if isTLS {
			list, key = cs.TLS.Listen, "tls.listen"
		}
		for i, a := range list {
			if a.String() == addr {
				line, col := cs.Position(fmt.Sprintf("%s[%d]", key, i))
				return config.Errors{{File: cs.File, Line: line, Col: col, Msg: msg}}
			}
		}
	}
	return err
}

// Addrs returns the bound listen addresses (useful with port 0).
func (s *Server) Addrs() map[string]net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]net.Addr{}
	for a, l := range s.listeners {
		m[a] = l.ln.Addr()
	}
	return m
}

// URLs returns a URL for each listener, sorted ("http://127.0.0.1:8080/",
// "https://localhost:443/" for a wildcard address), for people to click.
func (s *Server) URLs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.listeners {
		host, port, _ := net.SplitHostPort(l.ln.Addr().String())
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			host = "localhost"
		}
		scheme := "http"
		if l.tls {
			scheme = "https"
		}
		out = append(out, scheme+"://"+net.JoinHostPort(host, port)+"/")
	}
	sort.Strings(out)
	return out
}

// Shutdown stops accepting, waits for in-flight requests up to ctx, closes
// handlers and flushes logs.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var wg sync.WaitGroup
	for _, l := range s.listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.shutdown(s.o.ShutdownTimeout)
		}()
	}
	wg.Wait()
	if s.table != nil {
		// The listeners' wait is over: close the handlers even if a
		// request still runs on them.
		s.table.close()
	}
	if m := s.acme.Load(); m != nil {
		m.Close()
	}
	close(s.done)
	for _, k := range s.sinks {
		k.close()
	}
	s.cache.Close()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// ReopenLogs reopens access-log files, for log rotation.
func (s *Server) ReopenLogs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.sinks {
		if err := k.reopen(); err != nil {
			s.log.Error("reopening access log", "path", k.path, "err", err)
		}
	}
}

// sink returns the shared sink for a log path, opening it if new.
func (s *Server) sink(t *table, path string) (*logSink, error) {
	if path == "" {
		path = "-"
	}
	if k, ok := s.sinks[path]; ok {
		t.sinks[path] = k
		return k, nil
	}
	if k, ok := t.sinks[path]; ok {
		return k, nil
	}
	k, err := openSink(path)
	if err != nil {
		return nil, err
	}
	t.sinks[path] = k
	return k, nil
}

// retireSinks makes t's sinks the server's and returns those no longer
// used, for the caller to close once nothing writes to them.
func (s *Server) retireSinks(t *table) []*logSink {
	var retired []*logSink
	for p, k := range s.sinks {
		if t.sinks[p] == nil {
			retired = append(retired, k)
		}
	}
	s.sinks = t.sinks
	return retired
}

func (s *Server) flushLoop() {
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-tk.C:
			s.mu.Lock()
			for _, k := range s.sinks {
				k.flush()
			}
			s.mu.Unlock()
		}
	}
}

// routeStats returns the counters of a route, kept across reloads.
func (s *Server) routeStats(cs *config.Site, cr *config.Route) *RouteStats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	name := "default"
	if len(cs.ServerNames) > 0 {
		name = cs.ServerNames[0]
	}
	k := cs.File + "\x00" + cr.Path + "\x00" + cr.Handler.Type()
	if st, ok := s.stats[k]; ok {
		return st
	}
	st := &RouteStats{Site: name, Route: cr.Path, Handler: cr.Handler.Type(), file: cs.File}
	s.stats[k] = st
	return st
}

// RouteStats returns the counters of every route seen, sorted by site and
// route. A site's "-" row (responses no route made: a path refused, no
// route, requests the engines could not parse) is there once it counted
// one.
func (s *Server) RouteStats() []*RouteStats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	out := make([]*RouteStats, 0, len(s.stats))
	for _, st := range s.stats {
		if st.Route == siteRoute.Path && st.Requests.Load() == 0 {
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Site != out[j].Site {
			return out[i].Site < out[j].Site
		}
		return out[i].Route < out[j].Route
	})
	return out
}

// CacheStats reports the static caches' figures.
func (s *Server) CacheStats() static.CacheStats { return s.cache.Stats() }

// listener is one bound address with its engines: Arka's HTTP/1.1 engine
// (package h1) and, for TLS connections that negotiate "h2", its HTTP/2
// engine (package h2).
type listener struct {
	addr string
	tls  bool
	sock *socket      // the bound socket, which may outlive this listener
	ln   net.Listener // sock, bounded by Options.MaxConns
	// stopped is closed when the accept loop has returned.
	stopped chan struct{}
	h1      *h1.Server
	h2      *h2.Server // nil on a plain HTTP listener
	tlsc    *tls.Config
	// tlsc13 is tlsc with TLS 1.3 as the minimum, for the handshakes of
	// sites that ask for it.
	tlsc13 *tls.Config
	hsTO   time.Duration
	vh     atomic.Pointer[vhosts]

	hsMu        sync.Mutex
	handshaking map[net.Conn]struct{} // TLS handshakes in progress

	// nextTLS hands an accepted TLS connection to a waiting tlsWorker;
	// idleTLS counts those waiting.
	nextTLS chan net.Conn
	idleTLS atomic.Int32
}

// makeRoom closes up to n connections that hold a slot under the
// connection limit without using it, most harmless first: idle HTTP/1.1
// keep-alive connections, HTTP/2 connections with no running handler,
// HTTP/1.1 connections still sending their request head, TLS handshakes in
// progress; when from is valid, only connections from that network (a
// client's, see clientNet). It returns how many it closed.
func (l *listener) makeRoom(n int, from netip.Prefix) int {
	var match func(string) bool
	if from.IsValid() {
		match = func(remote string) bool {
			ap, err := netip.ParseAddrPort(remote)
			return err == nil && from.Contains(ap.Addr().Unmap())
		}
	}
	k := l.h1.CloseIdle(n, match)
	if k < n && l.h2 != nil {
		k += l.h2.CloseIdle(n-k, match)
	}
	if k < n {
		k += l.h1.CloseReadingHead(n-k, match)
	}
	if k < n {
		l.hsMu.Lock()
		for c := range l.handshaking {
			if k >= n {
				break
			}
			if match != nil && !match(c.RemoteAddr().String()) {
				continue
			}
			c.Close()
			delete(l.handshaking, c)
			k++
		}
		l.hsMu.Unlock()
	}
	return k
}

// newListener sets up the engines for a bound socket; start serves it.
func (s *Server) newListener(addr string, raw net.Listener, isTLS bool) *listener {
	sock := &socket{raw: raw}
	l := &listener{addr: addr, tls: isTLS, sock: sock, ln: sock, hsTO: s.limits.ReadHeaderTimeout(), stopped: make(chan struct{})}
	var limited *limitListener
	if s.o.MaxConns > 0 {
		limited = newLimitListener(sock, s.o.MaxConns)
		l.ln = limited
	}
	if isTLS {
		l.tlsc = &tls.Config{
			MinVersion: tls.VersionTLS12,
			// http/1.0 too: a client offering only it (curl --http1.0)
			// would otherwise fail the handshake (RFC 7301 section 3.2).
			// acme-tls/1 last: only an ACME CA validating a TLS-ALPN-01
			// challenge offers it (RFC 8737 section 6.2).
			NextProtos:     []string{"h2", "http/1.1", "http/1.0", acme.ALPNProto},
			GetCertificate: l.certificate,
			// Records of up to 16 KiB from the first byte, as nginx's
			// default ssl_buffer_size: crypto/tls would otherwise cut
			// the first 128 KiB of a connection into records of about
			// one TCP segment (1.2 KiB, then growing), each sealed and
			// written with its own system call, so a small page on a
			// new connection went out in two records and two writes.
			DynamicRecordSizingDisabled: true,
		}
		l.tlsc.CipherSuites = tls12CipherSuites
		// Sites with [tls] min_version = "1.3" get this one, by SNI.
		l.tlsc13 = l.tlsc.Clone()
		l.tlsc13.MinVersion = tls.VersionTLS13
		l.tlsc.GetConfigForClient = l.configForClient
		l.nextTLS = make(chan net.Conn)
	}
	l.h1 = &h1.Server{Handler: l, Limits: s.limits, Logger: s.log, Rejected: l.rejected}
	if limited != nil {
		limited.makeRoom = l.makeRoom
	}
	if isTLS {
		l.h2 = &h2.Server{Handler: l, Limits: s.limits, Logger: s.log, Rejected: l.rejected}
	}
	return l
}

// start runs the accept loop.
func (l *listener) start(log *slog.Logger) {
	go func() {
		defer close(l.stopped)
		l.serve(log)
	}()
}

// detach stops l's accept loop without closing its socket, for another
// listener to serve it; connections l accepted stay l's. Its shutdown then
// leaves the socket open.
func (l *listener) detach() {
	l.sock.detached.Store(true)
	if d, ok := l.sock.raw.(interface{ SetDeadline(time.Time) error }); ok {
		d.SetDeadline(time.Unix(1, 0)) // wakes a blocked Accept
		<-l.stopped
		d.SetDeadline(time.Time{})
	}
}

// socket is a bound listening socket. When an address switches between
// plain HTTP and TLS on reload, the old listener's socket is detached and
// served by the new one, so that the address never stops accepting and a
// reload that fails later has closed nothing.
type socket struct {
	raw      net.Listener
	detached atomic.Bool
}

func (s *socket) Accept() (net.Conn, error) {
	c, err := s.raw.Accept()
	if err != nil {
		if s.detached.Load() {
			return nil, net.ErrClosed
		}
		return nil, err
	}
	// Reads and writes without the runtime's system call bookkeeping
	// (wire.Raw), for plain HTTP and beneath TLS alike.
	return wire.Raw(c), nil
}

// Close closes the socket unless another listener took it over.
func (s *socket) Close() error {
	if s.detached.Load() {
		return nil
	}
	return s.raw.Close()
}

func (s *socket) Addr() net.Addr { return s.raw.Addr() }

func (l *listener) serve(log *slog.Logger) {
	var err error
	if l.tls {
		err = l.acceptTLS(log)
	} else {
		err = l.h1.Serve(l.ln)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		log.Error("listener stopped", "addr", l.addr, "err", err)
	}
}

// acceptTLS accepts TCP connections, completes each TLS handshake, and
// hands connections that negotiated "h2" to the h2 engine and the rest to
// the h1 engine. Accept errors are waited out (wire.Accept) and logged at
// most once a second; only a closed listener ends it.
func (l *listener) acceptTLS(log *slog.Logger) error {
	var delay time.Duration
	onError := wire.LogAcceptErrors(log, "addr", l.addr)
	for {
		c, err := wire.Accept(l.ln, &delay, onError)
		if err != nil {
			return err
		}
		l.handOver(c)
	}
}

func (l *listener) handshake(c net.Conn) {
	l.hsMu.Lock()
	if l.handshaking == nil {
		l.handshaking = map[net.Conn]struct{}{}
	}
	l.handshaking[c] = struct{}{}
	l.hsMu.Unlock()
	// Under the TLS connection, a BatchConn: the HTTP/2 engine sends the
	// records of a large write with one system call instead of one each.
	tc := tls.Server(&wire.BatchConn{Conn: c}, l.tlsc)
	if l.hsTO > 0 {
		tc.SetDeadline(time.Now().Add(l.hsTO))
	}
	err := tc.Handshake()
	l.hsMu.Lock()
	delete(l.handshaking, c)
	l.hsMu.Unlock()
	if err != nil {
		// Plain HTTP sent to the HTTPS port: say so, as nginx and net/http
		// do, instead of closing without a word.
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader[:]) {
			const body = "Client sent an HTTP request to an HTTPS server.\n"
			re.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\nDate: "+time.Now().UTC().Format(http.TimeFormat)+
				"\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "+strconv.Itoa(len(body))+
				"\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"+body)
			re.Conn.Close()
			method, _, _ := strings.Cut(string(re.RecordHeader[:]), " ")
			l.rejected(&http.Request{Method: method, RemoteAddr: c.RemoteAddr().String(), Header: http.Header{}}, http.StatusBadRequest, int64(len(body)))
		}
		tc.Close()
		return
	}
	tc.SetDeadline(time.Time{})
	st := tc.ConnectionState()
	if st.NegotiatedProtocol == acme.ALPNProto {
		// A TLS-ALPN-01 validation: the handshake was all (RFC 8737 section 3).
		tc.Close()
		return
	}
	if st.NegotiatedProtocol == "h2" {
		l.h2.ServeConn(tc, &st)
		return
	}
	l.h1.ServeConn(tc, &st)
}

func (l *listener) shutdown(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l.ln.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.h1.Shutdown(ctx)
	}()
	if l.h2 != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.h2.Shutdown(ctx)
		}()
	}
	wg.Wait()
}

// acquire returns the virtual hosts to serve a request with, holding a
// reference on their table until release: a reload that swaps in a new
// table closes the old one's handlers only when its last request ended.
func (l *listener) acquire() *vhosts {
	for {
		vh := l.vh.Load()
		vh.t.refs.Add(1)
		if l.vh.Load() == vh {
			return vh
		}
		// Swapped meanwhile: the old table may be closing.
		vh.t.release()
	}
}

// certificate picks the certificate for a TLS handshake by SNI: the site
// named, else the default site, else the first site on this address.
func (l *listener) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	vh := l.vh.Load()
	if vh == nil {
		return nil, errors.New("no configuration")
	}
	if vh.acme != nil {
		if c, ok, err := vh.acme.Certificate(hello); ok {
			return c, err
		}
	}
	if s := vh.match(hello.ServerName); s != nil && s.tlsCert() != nil {
		return s.tlsCert(), nil
	}
	if vh.first != nil && vh.first.tlsCert() != nil {
		return vh.first.tlsCert(), nil
	}
	for _, s := range vh.exact {
		if c := s.tlsCert(); c != nil {
			return c, nil
		}
	}
	return nil, errors.New("no certificate")
}

var serverHeader = []string{"arka"}

// StatusClientClosedRequest is the status logged, and counted as 4xx, for a
// request whose client went away before any response was written: nginx's
// non-standard 499. It is never sent (there is nobody to send it to).
const StatusClientClosedRequest = 499

// ServeHTTP dispatches one request: virtual host, path normalization, route,
// then the route's handler wrapped in request id, counters and access log.
// Every response is counted and logged with the status the client saw,
// whoever made it: the route's handler, or this dispatch itself (no site,
// a path refused, a slash redirect, no route, a body too large), the
// latter counted on the site's "-" row (see site.stats).
//
// The clock is read twice per request, monotonic only (the start, shared
// with handlers through the recorder, and the end); the wall clock only
// when the request is logged.
func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := monotime.Start(w) // the engine's clock reading, if it has one
	vh := l.acquire()
	defer vh.t.release()
	w.Header()["Server"] = serverHeader
	rec := recorders.Get().(*recorder)
	rec.w, rec.status, rec.bytes = w, 0, 0
	rec.req, rec.hdr, rec.applied = r, nil, false
	rec.pages, rec.intercept, rec.swallow = nil, false, false
	rec.start = start
	st := vh.match(r.Host)
	if st != nil {
		rec.pages = st.pages // dispatch's own errors get the site's pages too
	}
	var rt *route
	var reqID string
	defer func() {
		// Count and log the request even when the handler aborted it
		// (panic(http.ErrAbortHandler) for a response cut short); the
		// panic goes on to the engine, which closes the connection.
		p := recover()
		status, n := rec.status, rec.bytes
		if r.Method == http.MethodHead {
			n = 0 // the engine drops what a handler writes for HEAD: nothing was sent
		}
		switch {
		case (status == 0 || status == http.StatusContinue || status == http.StatusEarlyHints) &&
			(p == http.ErrAbortHandler || p == nil && r.Context().Err() != nil):
			// The client went away before any response was written, and
			// the handler saw it (it waited on the request's context, or
			// its body read failed and it aborted with
			// http.ErrAbortHandler): nobody received a response. Logged
			// 499, as nginx does.
			status = StatusClientClosedRequest
		case p != nil && status == 0:
			status = http.StatusInternalServerError
		case status == 0:
			status = http.StatusOK
		}
		rec.w, rec.req, rec.hdr, rec.pages = nil, nil, nil, nil
		recorders.Put(rec)
		ls := st
		if ls == nil {
			ls = vh.first // no site for this Host: the address's first site logs it
		}
		d := time.Duration(monotime.Now() - start)
		switch {
		case rt != nil:
			rt.stats.observe(status, d, n)
		case ls != nil:
			ls.stats.observe(status, d, n)
		}
		if ls != nil && ls.log != nil {
			ls.log.log(r, status, n, time.Now().Add(-d), d, reqID)
		}
		if p != nil {
			panic(p)
		}
	}()
	l.dispatch(rec, r, vh, st, &rt, &reqID)
}

// dispatch is ServeHTTP's choice of the response: it sets *rt to the route
// that serves r (nil when dispatch answers itself) and *reqID to its
// request id.
func (l *listener) dispatch(w *recorder, r *http.Request, vh *vhosts, st *site, rt **route, reqID *string) {
	if !l.tls && vh.acme != nil && vh.acme.ServeHTTPChallenge(w, r) {
		return // HTTP-01 (RFC 8555 section 8.3), before any site or route
	}
	if r.Method == http.MethodConnect && !extendedConnect(r) {
		// A plain CONNECT asks for a tunnel to its authority (RFC 9110
		// section 9.3.6): Arka is no forward proxy, on any site or route.
		// Without a 2xx an HTTP/1.1 connection stays in HTTP: its next
		// request is served.
		refuseMethod(w, r, allowMethods)
		return
	}
	if st == nil {
		// No site for this host and no default: 421 over TLS, where the
		// connection was made for another name (RFC 9110 section 15.5.20),
		// else 404 (as nginx would with no matching server).
		if l.tls {
			errpage.Write(w, r, http.StatusMisdirectedRequest)
		} else {
			errpage.Write(w, r, http.StatusNotFound)
		}
		return
	}
	if r.TLS != nil && r.TLS.ServerName != "" && !strings.EqualFold(hostOnly(r.Host), r.TLS.ServerName) && vh.match(r.TLS.ServerName) != st {
		// HTTP/2 connection reuse across names that this certificate
		// (chosen by SNI) need not cover.
		errpage.Write(w, r, http.StatusMisdirectedRequest)
		return
	}
	if st.tls13 && r.TLS != nil && r.TLS.Version < tls.VersionTLS13 {
		// A handshake without SNI (a client that connected by address)
		// got the address's default configuration, which may allow
		// TLS 1.2: a site with min_version 1.3 is not served over it.
		errpage.Write(w, r, http.StatusMisdirectedRequest)
		return
	}
	if l.tls {
		if st.hsts != nil {
			w.Header()["Strict-Transport-Security"] = st.hsts
		}
	} else if st.httpsPort != "" || st.hsts != nil {
		if st.httpsPort != "" && redirectHTTPS(w, r, st.httpsPort, st.trusted) {
			return
		}
		if st.hsts != nil && realip.ForwardedHTTPS(r, st.trusted) {
			// A TLS-terminating proxy in trusted_proxies: the client's
			// connection is HTTPS, so the field reaches it over HTTPS.
			w.Header()["Strict-Transport-Security"] = st.hsts
		}
	}
	if !normalizeURL(r.URL) {
		if r.Method == http.MethodOptions && r.RequestURI == "*" {
			w.Header()["Allow"] = allowMethods
			w.WriteHeader(http.StatusNoContent)
			return
		}
		errpage.Write(w, r, http.StatusBadRequest)
		return
	}
	route, redirect := st.matchRoute(r.URL.Path)
	if r.Method == http.MethodConnect || r.Method == http.MethodTrace {
		// An extended CONNECT (RFC 8441): a tunnel only a proxy route
		// opens (see route.tunnels). A TRACE (RFC 9110 section 9.3.8):
		// no route answers it, as nginx does: an upstream or script that
		// echoes it reflects the request's cookies and credentials to
		// whoever made the client send it, and a proxy would have to
		// honour Max-Forwards (section 7.6.2) on its way. The route a
		// slash redirect names decides for either.
		to := route
		if redirect != "" {
			to = st.route(redirect)
		}
		if to != nil && (r.Method == http.MethodTrace || !to.tunnels) {
			*rt = to
			refuseMethod(w, r, to.allow)
			return
		}
	}
	if redirect != "" {
		*rt = st.route(redirect)
		loc := redirect
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", loc)
		code := http.StatusMovedPermanently
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			code = http.StatusPermanentRedirect // keeps the method and body (RFC 9110 section 15.4.9)
		}
		errpage.Write(w, r, code)
		return
	}
	if route == nil {
		errpage.Write(w, r, http.StatusNotFound)
		return
	}
	*rt = route
	if st.maxBody > 0 && r.Body != nil && r.Body != http.NoBody {
		// RFC 9110 section 15.5.14: refuse a declared length at once; cap
		// a streamed (chunked) body as it is read.
		if r.ContentLength > st.maxBody {
			w.Header().Set("Connection", "close")
			errpage.Write(w, r, http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, st.maxBody)
	}
	if st.reqID {
		*reqID = requestID(r, route.trusted)
		w.Header()["X-Request-Id"] = []string{*reqID}
	}
	w.hdr, w.intercept = route.hdr, route.intercept
	route.h.ServeHTTP(w, r)
}

// allowMethods are the methods Arka's routes answer (the Allow field of
// OPTIONS *, of a 405 to a CONNECT or a TRACE and of a proxy route's own
// answer to an OPTIONS with Max-Forwards: 0, RFC 9110 section 10.2.1),
// but for static routes and the status page, which answer fewer
// (route.allow). CONNECT is not among them: a plain CONNECT is always
// refused, an extended one (RFC 8441) opens a tunnel on proxy routes
// only. Nor is TRACE, which every route refuses.
var allowMethods = []string{"GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS"}

// extendedConnect reports whether r, a CONNECT, is an extended CONNECT
// (RFC 8441 section 4: HTTP/2 with :protocol, as the h2 engine presents
// it), which names a resource by its path, rather than a plain one
// (RFC 9112 section 3.2.3, RFC 9113 section 8.5), which names only an
// authority to tunnel to.
func extendedConnect(r *http.Request) bool {
	return r.ProtoMajor >= 2 && len(r.Header[":protocol"]) > 0
}

// refuseMethod answers a CONNECT or a TRACE 405 with allow as the Allow
// field (RFC 9110 sections 9.3.6, 9.3.8 and 15.5.6).
func refuseMethod(w http.ResponseWriter, r *http.Request, allow []string) {
	w.Header()["Allow"] = allow
	errpage.Write(w, r, http.StatusMethodNotAllowed)
}

// rejected counts and logs a response an engine wrote itself, for a
// request it could not parse (400, 408, 414, 431, 505...; h1.Server and
// h2.Server's Rejected), or the listener's answer to plain HTTP on a TLS
// port. r holds what is known: the client's address and, when the request
// line was read, method, target and protocol. The site is the one its Host
// names if known, else the address's default or first site; the
// response is counted on that site's "-" row.
func (l *listener) rejected(r *http.Request, status int, n int64) {
	vh := l.vh.Load()
	if vh == nil {
		return
	}
	st := vh.match(r.Host)
	if st == nil {
		st = vh.first
	}
	if st == nil {
		return
	}
	now := time.Now()
	st.stats.observe(status, 0, n)
	if st.log != nil {
		st.log.log(r, status, n, now, 0, "")
	}
}

// looksLikeHTTP reports whether the first bytes of a TLS record header are
// the start of a plain HTTP request line instead.
func looksLikeHTTP(hdr []byte) bool {
	switch string(hdr) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE", "TRACE":
		return true
	}
	return false
}
