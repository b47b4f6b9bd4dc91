// Package proxy is Arka's reverse proxy handler: requests go to HTTP/1.1
// upstreams ("host:port", "[v6]:port", "http://host:port", "unix:/path")
// over kept-alive connections, balanced round robin or by least
// connections, with passive and optional active health checks, WebSocket
// pass-through (HTTP/1.1 Upgrade, and RFC 8441 extended CONNECT from HTTP/2
// clients when the engine enables it), Location rewriting like nginx's
// "proxy_redirect default" (location.go) and failures answered with 502 or
// 504.
//
// # Design
//
// The handler speaks HTTP/1.1 to upstreams itself rather than through
// net/http.Transport or httputil.ReverseProxy: it keeps a bounded LIFO pool
// of connections per upstream, each with its own bufio reader and writer,
// writes the request head straight from the client's header map into the
// connection's buffer (no outgoing header map, no request clone), and
// parses the response head and body framing itself (response.go: RFC 9112
// status line, field syntax, Content-Length / chunked / close-delimited,
// HEAD, 1xx, 204, 304, trailers), strictly and without a header map of its
// own. A request without a body runs on the handler's goroutine alone;
// Transport hands every request to two goroutines per connection.
//
// Measured with bench_test.go (Go 1.26.8, 2-core AMD EPYC VM shared with
// other jobs, loopback, 1 KiB responses); allocations are exact, times vary
// with the machine's load:
//
//	handler alone, canned upstream        allocs/op   B/op
//	  this package                          10 (*)    1.1 KB
//	  this package with http.ReadResponse   18 (*)    1.7 KB
//	  httputil.ReverseProxy, tuned           60 (*)    4.9 KB
//	  (*) 8 of them are the benchmark's: its request context (4) and
//	  context.AfterFunc on it (4; the engines' contexts do this without
//	  allocating, see wire.AfterFunc). The 2 left are the response's
//	  fields handed to the engine: one string, one []string.
//
//	client -> Go front -> Go upstream     allocs/op   CPU/op (whole process)
//	  direct to the upstream                 62        54-73 us
//	  through this package                   96       120-150 us
//	  through httputil.ReverseProxy          136      163-184 us
//
// # Where the time goes
//
// A perf profile of arka alone proxying small answers over plain HTTP/1.1
// (wrk, 16 connections; the upstream in another process) puts 37% of the
// CPU in write system calls (on loopback a write also delivers to the
// reader and wakes it), 11% in reads, 11% in the scheduler (findRunnable,
// park) and 11% in the runtime's sysmon, 6% in netpoll; parsing, header
// maps and allocation together are under 10%. So system calls and
// wake-ups, not parsing, decide the cost. perf stat counts per request:
// 2 writes (the request upstream, the response to the client) and, before
// wire.Sender, 3.9 reads: Go's net package reads before it waits, and the
// read after sending a request always fails (EAGAIN). The upstream read now
// waits first (wire.Sender): 3.0 reads. The remaining failing read is the
// client's next request, which cannot wait the same way: a client may
// pipeline its next request before our answer.
//
// Profile of December 2026 (perf record -g of arka alone under wrk, 64
// connections, small answer over plain HTTP/1.1, after response.go; the
// machine shared with other jobs): write system calls 37% (the request
// upstream 20%, the response to the client 17%; on loopback each write
// also runs the receiver's TCP input and wake-up), reads 11%, sysmon 9%,
// scheduler 7%; the proxy's own code apart from system calls is under 5%:
// response parsing 1.5% (readResponse less its read), copying the head to
// the engine 2%, writing the request head 1.5%, allocation 2%. perf stat
// per request: 1.96 writes and 2.89 reads (small answer); 2.98 writes and
// 3.97 reads for the 30 KB page, where the upstream's answer arrives in
// two reads and the engine writes the response in two (head and first
// 4 KiB through its buffer, then the rest). So precomputing the request
// head per upstream would save at most part of its 1.5%, and the system
// calls left are one per direction and hop, but for the client's failed
// read (the engine's) and the 30 KB page's second write (the engine's
// buffer). A 32 KiB read buffer per busy upstream connection (pooled,
// none while idle) took the 30 KB page from 3.9 to 2.9 reads per request,
// but raised arka's peak RSS under wrk from 27 to 36 MB (the live heap
// grows by the buffers and the collector's GOGC multiplies it): not done
// then; done in the third pass below, once the body no longer needed a
// copy buffer and a spool chunk besides.
//
// Second pass (perf stat and perf record of arka alone under wrk, 16 and
// 64 connections, the upstream in another process; the shared 2-core
// machine was loaded by other jobs throughout, so CPU and req/s figures
// moved 20-40 % from run to run and only counts and shares are given):
//   - the 30 KB page is written in one writev of head and body (package h1):
//     2.93 -> 1.94 writes per request;
//   - no liveness peek (recvfrom) or flush before the body's next read
//     when the last read filled its buffer and the length is known: the
//     rest is in the socket already (0.96 -> 0 recvfrom per request);
//   - the response-header deadline is moved about once a second per
//     connection (send) and stays armed over bodies (limitReader.Read
//     clears it if it passes there): deadline updates per request, whole
//     process, 1.00 -> 0.05 (small answer) and 2.05 -> 0.25 (30 KB);
//   - a head with the same text as the upstream's last one reuses its
//     string (response.text), so the engine copies the head it memoised:
//     its sendHeader 4.0 -> 2.2 % of the CPU;
//   - the client-gone watch no longer updates a timer per request (h1).
//
// arkabench -tests proxy-small-http,proxy-30k-http -servers arka,nginx
// -duration 5s -rounds 2, before and after in alternating runs, two each
// (Arka's CPU per request as a multiple of nginx's): 30 KB page 1.40x and
// 1.45x before, 1.02x and 1.07x after; small answer 1.44x and 1.75x
// before, 1.45x and 1.56x after (the load of other jobs moves it more
// than these changes). Peak RSS unchanged, 35-37 MB (nginx 25 MB).
//
// Since then (QA, December 2026) every kept connection is peeked at
// (recvfrom MSG_PEEK) when it is taken from the pool, not only those idle
// for 200 ms or more: an upstream's unsolicited bytes sent a moment after
// a complete response were delivered to the next client as its answer.
// That is one recvfrom per proxied request again, and it costs more than
// its system call: arka alone under wrk (64 connections, small answer,
// arkabench -servers arka, 5 s rounds, quiet machine, peek always against
// peek after 200 ms idle, two alternated pairs of two rounds) spent 26.3,
// 29.0, 27.6 and 24.5 us of CPU per request against 22.4, 21.0, 20.7 and
// 20.2 over plain HTTP, 36.2, 32.6, 26.3, 24.8 against 26.0, 24.5, 22.0,
// 24.2 over TLS; strace -c counts 1.00 recvfrom and 0.16 more reads that
// find nothing per request. Kept: a client must never get another's
// answer. nginx learns of such bytes from epoll while the connection is
// idle, at no cost per request; Go offers no way to ask its poller whether
// a descriptor turned readable without a system call.
//
// Left, small answer: write system calls 37 % (loopback delivery), reads,
// the scheduler and sysmon (the runtime's, not this package's); 2 writes
// and 2.9 reads per request, of which one is the engine's failing read of
// the client's next request.
//
// Third pass (December 2026; the shared 2-core machine at load average
// 13-20 throughout, so wall and CPU figures of whole runs moved by 20-50 %
// from run to run and only counts, shares and in-process CPU are given).
// Arka against nginx side by side (same upstream, wrk, 64 connections),
// CPU per request from /proc utime and stime: system time is the same
// (24-27 us against 24 us, small answer over plain HTTP/1.1), user time is
// not (18-27 us against 12 us). System calls per request, perf stat:
//
//	                          arka                     nginx
//	small, plain HTTP/1.1     2 write, 2.9 read        1 writev+1 writev, 2 recvfrom
//	                          0.16-0.21 epoll_pwait    0.10 epoll_wait
//	small, TLS to the client  2 write, 3.1 read        2 write(v), 2 read+1 recvfrom
//	30 KB, TLS to the client  4.1 write, 3.2 read      3 write(v), 2 read+7 readv+1 recvfrom
//
// So the system calls are as few as nginx's but for the engine's failing
// read of the client's next request (package h1's doc says why it stays)
// and, over TLS, one write per TLS record (crypto/tls writes each record
// by itself: the 30 KB page goes out in three). perf record of arka's user
// time: the runtime (scheduler, netpoll, sysmon, memmove) 9 % of all
// samples, package h1 5 %, maps and allocation 5 %, this package 4 %,
// package server 2.6 %, internal/poll and wire 4.5 %. This package's own
// CPU per request is 3-5 us of the 45-60 us arka spends (BenchmarkHandlerMem:
// the handler over an upstream connection in memory, no system calls).
// What changed:
//   - a buffered body of known length up to 32 KiB that comes without a
//     pause is gathered in one buffer and sent from it after the upstream
//     connection is pooled, instead of through a spool.Response (its
//     lock, condition variable, pooled chunk and a copy of the body):
//     BenchmarkHandlerMem 30 KB page 5.2 -> 4.0 us CPU per request;
//   - a connection reads a response head into a 32 KiB buffer taken from
//     a pool once the answer is there (none while idle or waiting for its
//     upstream; was 4 KiB each throughout), and a body that came whole
//     with its head goes to the client from that buffer without a copy:
//     the 30 KB page's reads 4.3 -> 3.1 per request. An event stream, a
//     long poll or a tunnel swaps it for a 4 KiB one (conn.shrink). Peak
//     RSS under wrk unchanged (30-36 MB, base and after), since the
//     buffer replaces the copy buffer and spool chunk such a response
//     took before.
//
// Fourth pass (December 2026; the shared 2-core machine at load average
// 10-17, so whole-run figures moved by 20-30 % from run to run; the
// in-process benchmarks below are the measure). perf record of arka under
// wrk (64 connections, small answer, plain HTTP/1.1): the kernel 62 % of
// its samples (the two writes with their loopback delivery and wake-ups,
// the reads, context switches on return from the writes 6.7 %), arka's
// code 37 %, of which this package 4-5 % (upstream.get 0.6 %, the head's
// reading and parsing 1.2 %, relay and copyHeader 0.7 %, writeHead 0.4 %),
// package h1 5 %, the scheduler and netpoll 5 %, maps and allocation 3 %.
// perf stat per request: 1.96 writes, 2.89 reads, 0.18 epoll_pwait, 0.04
// futex, no connect (every upstream connection is reused), 0.05 deadline
// updates (uprobe on runtime_pollSetDeadline) and 1.84 gopark (uprobe):
// one goroutine serves a request (no handoff) and parks twice, for the
// client and for the upstream, whose read never finds nothing
// (wire.Sender). What changed:
//   - a response head equal, byte for byte, to the upstream's last one
//     (one head per resource and second, Date being the only field that
//     moves) is taken from the upstream's memo of it (headMemo) instead of
//     being read line by line and parsed again: BenchmarkReadResponse
//     (reading the head and copying its fields to the engine's map)
//     540 -> 240 ns per small answer; and the memo keeps the fields as
//     copyHeader gives them to the engine (names and value slices, shared
//     read-only, as the server shares its Server field's), so such a head
//     costs no allocation and no field checks: 245 -> 170 ns of CPU, 1 ->
//     0 allocations;
//   - the clock is read twice per request (get, whose reading send reuses,
//     and put), monotonic only (monotime), where it was read five times,
//     twice with the wall clock (time.Now in send and put): clock reads
//     in BenchmarkHandlerMem's profile 200 -> 67 ns per request (a clock
//     read costs 45 ns on this VM).
//
// arkabench -tests proxy-small-http -servers arka,nginx -duration 5s
// -rounds 2, before and after alternating (B A B A), the machine at load
// average 23-27 from other jobs: Arka's CPU per request 28.9 and 32.2 us
// before, 25.9 and 25.7 us after; nginx's in the same runs 25.2, 22.5,
// 25.5 and 27.7 us (so the load moves a run by 10-20 %; the in-process
// figures above are the firmer ones). A memory profile of arka under wrk
// shows no allocation of this package per small answer (the engine's two
// remain: its request and its AfterFunc for the client-gone watch).
//
// Left, small answer over plain HTTP/1.1: this package's own code is
// 1-2 % of arka's samples; the rest is the kernel's (the two writes with
// their loopback delivery and wake-ups, the reads), package h1's (its
// failing read of the client's next request, 0.9 per request, and its
// parsing), the server's dispatch and the runtime's scheduler and netpoll
// (two parks per request: for the client and for the upstream, as
// nginx's two waits in epoll, which it batches over more events per
// call: 0.10 epoll_wait per request against Arka's 0.18 epoll_pwait).
//
// make bench-go (tests/bench): 13 allocations per proxied request over
// HTTP/1.1 (small answer, whole process), 33 over HTTP/2, with
// http.ReadResponse, which made 8 of them (header map, strings, Response,
// body reader, limit reader). response.go replaced it: the head's lines go
// into a buffer the connection keeps, and the engine gets them as
// substrings of one string (2 allocations; none for a head from the
// upstream's memo). The client-gone watch costs
// one allocation (wire.AfterFunc's stop).
package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/monotime"
	"github.com/arkaweb/arka/server/internal/realip"
	"github.com/arkaweb/arka/server/internal/spool"
	"github.com/arkaweb/arka/server/internal/wire"
)

// Options carry what the server knows and the site file does not say.
type Options struct {
	// Logger receives the error log: one line per upstream failure naming
	// site, route, upstream and cause. Nil discards.
	Logger *slog.Logger
	// Site names the site file in log lines.
	Site string
	// Keepalive is the idle-connection pool per upstream when the route
	// says keepalive = "auto" (from the board budget). Zero means
	// config.DefaultProxyKeepalive.
	Keepalive int
	// Trusted are the site's trusted_proxies, used when the route names
	// none of its own.
	Trusted []netip.Prefix
	// ClientIPHeader is the site's client_ip_header: the field that names
	// the client in a request from a trusted proxy, forwarded as
	// X-Real-IP.
	ClientIPHeader config.ClientIPHeader
	// TempDir is where request bodies too large for memory are spooled
	// when request buffering is on. Empty means os.TempDir().
	TempDir string
	// Spool bounds the spool files of all handlers together, and per
	// client; past it a request gets 503 with Retry-After. Nil: unbounded.
	Spool *spool.Budget
	// Allow is the Allow field (RFC 9110 section 10.2.1) of the handler's
	// own answer to an OPTIONS with Max-Forwards: 0, the methods the route
	// answers. Nil sends none.
	Allow []string
	// RequestID: the server sets each request's X-Request-Id before the
	// handler runs (the site's request_id). It is sent upstream whatever
	// the client's Connection field names.
	RequestID bool
}

// Handler proxies one route. Build it with New; it is safe for concurrent
// use. Close it when its configuration is retired.
type Handler struct {
	route      string
	strip      bool
	fwd        bool
	requestID  bool     // Options.RequestID
	allow      []string // Options.Allow
	hostHeader string
	self       []authority // names of the upstreams, for Location rewriting
	trusted    []netip.Prefix
	clientIP   config.ClientIPHeader // the field that names a trusted proxy's client
	leastConn  bool
	ups        []*upstream
	rr         atomic.Uint64

	tempDir       string
	spool         *spool.Budget
	keepalive     int
	headerTimeout time.Duration
	idleTimeout   time.Duration
	failTimeout   time.Duration
	dialer        net.Dialer

	log  *slog.Logger
	site string

	closed atomic.Bool
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bufs   sync.Pool // *[]byte, copy buffers

	buffering  bool // request_buffering: bodies read whole before an upstream connection is taken
	respBuffer bool // response_buffering: the upstream connection goes before a slow client has the response
}

// New builds the handler for route (the route's path prefix, such as
// "/proxy/") from a config.Proxy that config.Load (or config.Complete)
// normalized and validated: New checks none of it again. It starts the
// health checkers when cfg.Health is set.
func New(route string, cfg *config.Proxy, o Options) (*Handler, error) {
	if cfg == nil || len(cfg.Targets) == 0 {
		return nil, errors.New("proxy has no upstream (a config.Proxy that config.Load or config.Complete did not parse)")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Keepalive <= 0 {
		o.Keepalive = config.DefaultProxyKeepalive
	}
	h := &Handler{
		route:         route,
		strip:         cfg.StripPrefix,
		fwd:           cfg.ForwardHeadersEnabled(),
		requestID:     o.RequestID,
		allow:         o.Allow,
		hostHeader:    cfg.HostHeader,
		leastConn:     cfg.LB == "least_conn",
		tempDir:       o.TempDir,
		spool:         o.Spool,
		keepalive:     cfg.Keepalive.Or(o.Keepalive),
		headerTimeout: cfg.ResponseHeaderTimeout.D(),
		idleTimeout:   cfg.IdleTimeout.D(),
		failTimeout:   cfg.FailTimeout.D(),
		dialer: net.Dialer{
			Timeout:   cfg.ConnectTimeout.D(),
			KeepAlive: 30 * time.Second,
		},
		log:        o.Logger,
		site:       o.Site,
		buffering:  cfg.RequestBufferingEnabled(),
		respBuffer: cfg.ResponseBufferingEnabled(),
	}
	h.bufs.New = func() any { b := make([]byte, copyBufSize); return &b }
	h.trusted, h.clientIP = cfg.TrustedProxies, o.ClientIPHeader
	if len(h.trusted) == 0 {
		h.trusted = o.Trusted
	}
	base, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	for _, a := range cfg.Targets {
		h.ups = append(h.ups, newUpstream(h, a, base))
	}
	h.self = selfAuthorities(h.ups, h.hostHeader)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if hc := cfg.Health; hc != nil {
		for _, u := range h.ups {
			c := &healthCheck{
				path:     hc.Path,
				host:     h.hostHeader,
				interval: hc.Interval.D(),
				timeout:  hc.Timeout.D(),
			}
			if c.host == "" {
				c.host = u.address
				if u.network == "unix" {
					c.host = "localhost"
				}
			}
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				u.healthLoop(ctx, c)
			}()
		}
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.pruneLoop(ctx)
	}()
	return h, nil
}

// Close stops the health checkers and closes idle connections. Requests in
// flight finish; their connections are closed instead of pooled.
func (h *Handler) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	h.cancel()
	h.wg.Wait()
	for _, u := range h.ups {
		u.closeIdle()
	}
	return nil
}

// Stats returns each upstream's figures, in configuration order.
func (h *Handler) Stats() []UpstreamStats {
	out := make([]UpstreamStats, len(h.ups))
	for i, u := range h.ups {
		out[i] = u.stats()
	}
	return out
}

func (h *Handler) pruneLoop(ctx context.Context) {
	every := h.idleTimeout / 2
	if every < time.Second {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := monotime.Now()
			for _, u := range h.ups {
				u.prune(now)
			}
		}
	}
}

func (h *Handler) logAttrs(u *upstream, kv ...any) []any {
	return append([]any{"site", h.site, "route", h.route, "upstream", u.name}, kv...)
}

// pick chooses an upstream, avoiding prev (the one that just failed) and
// upstreams in a failure cool-down or failing their health check. When none
// is available it still picks one, so a recovered upstream is found.
func (h *Handler) pick(prev *upstream) *upstream {
	n := len(h.ups)
	if n == 1 {
		return h.ups[0]
	}
	now := monotime.Now()
	start := int(h.rr.Add(1) % uint64(n))
	var best *upstream
	for i := 0; i < n; i++ {
		u := h.ups[(start+i)%n]
		if u == prev || !u.available(now) {
			continue
		}
		if !h.leastConn {
			return u
		}
		if best == nil || u.active.Load() < best.active.Load() {
			best = u
		}
	}
	if best != nil {
		return best
	}
	u := h.ups[start]
	if u == prev {
		u = h.ups[(start+1)%n]
	}
	return u
}

// failure describes why an exchange with an upstream did not produce a
// response.
type failure struct {
	status  int    // 502 or 504
	cause   string // for the log line
	notSent bool   // nothing reached the upstream: any request may go elsewhere
	stale   bool   // a reused connection failed before any response byte
	gone    bool   // the client went away, or the response had started: say nothing
	client  bool   // the client's request was at fault (bad or too large body)
	aborted bool   // the client left while sending its body: abort, logged 499
}

var (
	clientGone = &failure{gone: true}
	// clientAborted: the client ended its connection (or stream) while
	// sending the request body; nothing was answered (logged 499).
	clientAborted = &failure{gone: true, aborted: true}
)

// clientBodyFailure answers a failure to read the client's body: 413 when
// it is over the site's max_body_size (RFC 9110 section 15.5.14), nothing
// when the client left, else 400 (malformed framing, RFC 9112 section 7.1).
// The upstream is not to blame for any of these.
func clientBodyFailure(r *http.Request, err error) *failure {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return &failure{status: http.StatusRequestEntityTooLarge, cause: "request body over max_body_size", client: true}
	case r.Context().Err() != nil || wire.ClientGone(err):
		return clientAborted
	case os.IsTimeout(err):
		// The client stopped sending (the engine's body read timeout).
		return &failure{status: http.StatusRequestTimeout, cause: "the client stopped sending its request body", client: true}
	}
	return &failure{status: http.StatusBadRequest, cause: "reading the request body: " + err.Error(), client: true}
}

// spoolFailure answers a failure to buffer the request body.
func (h *Handler) spoolFailure(w http.ResponseWriter, r *http.Request, err error) {
	var f *failure
	switch {
	case errors.Is(err, spool.ErrTooLarge):
		f = &failure{status: http.StatusRequestEntityTooLarge, cause: "request body too large to buffer", client: true}
	case err == spool.ErrBusy:
		// The spool's budget is spent (Options.Spool): this request is
		// refused, the server keeps its descriptors for the others. Not
		// logged here, as a client could flood the log: the access log
		// has each 503.
		w.Header().Set("Retry-After", "2")
		w.Header().Set("Connection", "close")
		errpage.Write(w, r, http.StatusServiceUnavailable)
		return
	case errors.As(err, new(*spool.WriteError)):
		h.log.Error("proxy: "+err.Error(), "site", h.site, "route", h.route)
		errpage.Write(w, r, http.StatusInternalServerError)
		return
	default:
		f = clientBodyFailure(r, err)
	}
	if f.aborted {
		panic(http.ErrAbortHandler) // logged 499, as in ServeHTTP
	}
	if f.gone {
		return
	}
	w.Header().Set("Connection", "close")
	errpage.Write(w, r, f.status)
}

// idempotent methods, RFC 9110 section 9.2.2.
func idempotent(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// ServeHTTP forwards r to an upstream and streams the answer back. A
// CONNECT is taken for an extended CONNECT (RFC 8441): the server refuses
// a plain one before any route (Arka is no forward proxy), and this
// handler answers 501 to one without :protocol = websocket.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		h.serveExtendedConnect(w, r)
		return
	}
	if r.Method == http.MethodOptions {
		// Max-Forwards (RFC 9110 section 7.6.2): at 0 the request goes no
		// further and Arka answers as its final recipient (section 9.3.7:
		// no content, Content-Length 0); a larger value is decremented
		// (writeHead).
		if sent, valid, zero := maxForwards(r.Header); sent && !valid {
			errpage.Write(w, r, http.StatusBadRequest)
			return
		} else if zero {
			hdr := w.Header()
			if h.allow != nil {
				hdr["Allow"] = h.allow
			}
			hdr["Content-Length"] = []string{"0"}
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	// Only a WebSocket upgrade (RFC 6455) goes to the upstream. Any other
	// (h2c, TLS/1.0, an application's own protocol) is dropped with the
	// other hop-by-hop fields and the request goes as a plain one: a
	// client cannot open a tunnel of its choice past the route.
	var upgrade string
	if r.ProtoMajor == 1 && wire.HasToken(r.Header["Connection"], "upgrade") {
		if v := r.Header["Upgrade"]; len(v) == 1 && wire.HasToken(v, "websocket") && !strings.Contains(v[0], ",") {
			upgrade = v[0]
		}
	}
	replay := idempotent(r.Method) && !hasBody(r) && upgrade == ""
	if h.buffering && upgrade == "" && hasBody(r) {
		// Request buffering (nginx's proxy_request_buffering): the body
		// arrives whole before an upstream connection is taken, so a slow
		// uploader holds none.
		mem, cp := h.bufs.Get().(*[]byte), h.bufs.Get().(*[]byte)
		b, err := spool.Read(r.Body, r.ContentLength, (*mem)[:syncBodyMax], spool.DefaultMax, h.tempDir, *cp, h.spool, r.RemoteAddr)
		h.bufs.Put(cp)
		defer h.bufs.Put(mem) // b.Mem aliases it
		if err != nil {
			h.spoolFailure(w, r, err)
			return
		}
		defer b.Close()
		r2 := new(http.Request)
		*r2 = *r
		r2.Body, r2.ContentLength = io.NopCloser(b.Reader()), b.Len
		r = r2
	}
	var prev *upstream
	for attempt := 0; ; attempt++ {
		u := h.pick(prev)
		f := h.exchange(w, r, u, upgrade, attempt > 0, replay)
		if f != nil && f.aborted {
			// No one to answer: the server logs 499 for a handler that
			// aborts having written nothing, as nginx does.
			panic(http.ErrAbortHandler)
		}
		if f == nil || f.gone {
			return
		}
		if f.client {
			w.Header().Set("Connection", "close")
			errpage.Write(w, r, f.status)
			return
		}
		again := attempt == 0 && (f.notSent && len(h.ups) > 1 || f.stale && replay)
		if !f.stale || !again {
			// A stale kept connection is silent only when the request goes
			// again on a new one; a request that is not replayed fails.
			h.log.Warn("proxy: upstream failed", h.logAttrs(u, "method", r.Method, "status", f.status, "retried", again, "cause", f.cause)...)
		}
		if !again {
			errpage.Write(w, r, f.status)
			return
		}
		prev = u
	}
}

var aLongTimeAgo = time.Unix(1, 0)

// copyBufSize is the size of the handler's pooled copy buffers (h.bufs).
const copyBufSize = 32 << 10

// exchange sends r to u over a pooled or new connection and relays the
// response. It returns nil when the response was relayed (or the client
// left), else why not.
func (h *Handler) exchange(w http.ResponseWriter, r *http.Request, u *upstream, upgrade string, fresh, replay bool) *failure {
	u.active.Add(1)
	done := false // the upstream's part is over (active counts what it serves)
	defer func() {
		if !done {
			u.active.Add(-1)
		}
	}()
	u.requests.Add(1)
	var c *conn
	if !fresh && upgrade == "" {
		c = u.get()
	}
	if c == nil {
		var err error
		c, err = u.dial(r.Context())
		if err != nil {
			if r.Context().Err() != nil {
				return clientGone
			}
			u.failures.Add(1)
			u.markDown()
			return &failure{status: statusFor(err), cause: "connect: " + describe(err, h.dialer.Timeout), notSent: true}
		}
	}
	// The client may leave at any time: unblock every read and write on
	// the upstream connection when it does.
	stop := wire.AfterFunc(r.Context(), c.abort)
	var rest relayed
	reusable, f := h.roundTrip(w, r, c, upgrade, &rest)
	if !stop() {
		reusable = false
	}
	if f != nil && !f.gone && !f.stale && !f.client {
		u.failures.Add(1)
	}
	if reusable {
		u.put(c)
	} else {
		c.close()
	}
	done = true
	u.active.Add(-1)
	// The upstream connection is free; the client gets the rest.
	rest.finish(w)
	return f
}

// relayed is what remains of a relayed response once the upstream has
// sent all of it (response buffering): the bytes the client has not taken
// yet, and the trailers, which follow them. A body that was whole in hand
// at once (relay's gathering) is whole, with its status and the pooled
// buffer it lies in; a longer or slower one went through out.
type relayed struct {
	out       *spool.Response
	trailer   http.Header
	announced []string

	whole  []byte
	status int
	bp     *[]byte
	bufs   *sync.Pool
	rd     *bufio.Reader // whole lies in its buffer (then bp is nil)
}

// finish gives the client the rest of the response, then the trailers.
func (rr *relayed) finish(w http.ResponseWriter) {
	if rr.out != nil {
		rr.out.Finish()
		rr.out = nil
	}
	if rr.bp != nil || rr.rd != nil {
		w.WriteHeader(rr.status)
		w.Write(rr.whole) // an error is the client's: nothing more to do
		if rr.bp != nil {
			rr.bufs.Put(rr.bp)
		} else {
			putReader(rr.rd)
		}
		rr.whole, rr.bp, rr.rd = nil, nil, nil
	}
	setTrailers(w.Header(), rr.trailer, rr.announced)
}

// setTrailers puts the upstream's trailers into the response header under
// their names: only announced ones are read (response.readTrailers).
func setTrailers(hdr, trailer http.Header, announced []string) {
	for k, vv := range trailer {
		if vv != nil && contains(announced, k) {
			hdr[k] = vv
		}
	}
}

// statusFor maps a connection error to 504 for timeouts, else 502.
func statusFor(err error) int {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// describe names a connection error's cause in a few words.
func describe(err error, timeout time.Duration) string {
	var ne net.Error
	var te *tlsError
	switch {
	case errors.As(err, &te):
		return te.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the upstream"
	case errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the upstream closed the connection"
	case errors.Is(err, syscall.ENOENT):
		return "no such socket"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out after " + timeout.String()
	}
	return err.Error()
}

// Body framing of the request sent upstream (RFC 9112 section 6).
type framing uint8

const (
	bodyNone    framing = iota
	bodyLength          // Content-Length
	bodyChunked         // Transfer-Encoding: chunked (unknown length, or trailers)
)

// syncBodyMax is the largest request body written before the response is
// read; a larger one (or one of unknown length) is written by a second
// goroutine while the response is awaited, so an early answer (413, 401)
// comes through and an upload streams.
const syncBodyMax = 16 << 10

// requestFraming decides the framing of the request body sent upstream,
// its length (-1 when chunked), and the names of the client's trailer
// fields that go after a chunked body (relayedTrailers; nil for none).
func requestFraming(r *http.Request) (mode framing, cl int64, trailers []string) {
	if !hasBody(r) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			return bodyLength, 0, nil
		}
		if _, ok := r.Header["Content-Length"]; ok {
			return bodyLength, 0, nil
		}
		return bodyNone, 0, nil
	}
	if len(r.Trailer) > 0 {
		trailers = relayedTrailers(r)
	}
	if len(trailers) > 0 || r.ContentLength < 0 {
		return bodyChunked, -1, trailers
	}
	return bodyLength, r.ContentLength, nil
}

// roundTrip writes the request, reads the response head and relays the
// response. reusable reports that the connection is clean and may be
// pooled.
func (h *Handler) roundTrip(w http.ResponseWriter, r *http.Request, c *conn, upgrade string, rest *relayed) (reusable bool, f *failure) {
	mode, cl, trailers := requestFraming(r)
	h.writeHead(c.bw, r, upgrade, mode, cl, trailers, "")

	var bodyDone chan error
	var st *headState
	// A small body goes out with the head only when it is already here
	// (request buffering): read from the client now, it would hold the
	// upstream connection while a slow client sends it, and a route with
	// request_buffering = false must stream whatever the size.
	if mode == bodyLength && cl <= syncBodyMax && (cl == 0 || h.buffering) {
		if cl > 0 {
			// Small bodies go out with the head, in as few writes as fit.
			bp := h.bufs.Get().(*[]byte)
			n, rerr := io.ReadFull(r.Body, (*bp)[:cl])
			var err error
			if rerr == nil {
				_, err = c.bw.Write((*bp)[:n])
			}
			h.bufs.Put(bp)
			if rerr != nil {
				return false, clientBodyFailure(r, rerr)
			}
			if r.Context().Err() != nil {
				return false, clientGone
			}
			if err != nil {
				return false, h.sendFailure(c, err)
			}
		}
		if err := h.send(c); err != nil {
			return false, h.sendFailure(c, err)
		}
	} else if mode == bodyNone || mode == bodyLength && cl == 0 {
		if err := h.send(c); err != nil {
			return false, h.sendFailure(c, err)
		}
	} else {
		c.headBy = 0 // writeBody sets the deadline exactly
		if c.readDeadline {
			// Left armed by the last response: the head may come only
			// after the whole body is sent.
			c.nc.SetReadDeadline(time.Time{})
			c.readDeadline = false
		}
		if err := c.bw.Flush(); err != nil {
			return false, h.sendFailure(c, err)
		}
		// Let the engine read the client's body while the response is
		// written (HTTP/1.1; HTTP/2 always can).
		_ = http.NewResponseController(w).EnableFullDuplex()
		st = &headState{}
		bodyDone = make(chan error, 1)
		go func() { bodyDone <- h.writeBody(c, r, mode, cl, trailers, st) }()
	}

	resp, err := h.readHead(w, r, c)
	if st != nil {
		st.mu.Lock()
		st.done = true
		st.mu.Unlock()
	}
	if err != nil {
		var berr error
		if bodyDone != nil {
			c.kill()
			berr = <-bodyDone
		}
		var cbe *clientBodyError
		switch {
		case errors.As(berr, &cbe):
			return false, clientBodyFailure(r, cbe.err)
		case r.Context().Err() != nil:
			return false, clientGone
		case berr != nil && !errors.Is(berr, os.ErrDeadlineExceeded):
			return false, &failure{status: statusFor(berr), cause: "sending the request body: " + describe(berr, h.headerTimeout)}
		}
		return false, h.headFailure(c, err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		c.nc.SetReadDeadline(time.Time{})
		c.readDeadline = false
	}
	// A body still to come may come slowly (a long poll, an event stream)
	// and has no deadline, but the response-header deadline is left armed
	// for the next request (send moves it about once a second): should it
	// pass while the body is read, the read clears it and goes on
	// (limitReader.Read). Clearing it here and setting it again for the
	// next request were two timer updates per request of the 30 KB page.
	c.lr.body = true

	if resp.StatusCode == http.StatusSwitchingProtocols {
		if upgrade == "" || bodyDone != nil {
			return false, &failure{status: http.StatusBadGateway, cause: "101 Switching Protocols to a request that asked for no upgrade"}
		}
		h.switchProtocols(w, r, c, resp)
		return false, nil
	}

	reusable, f = h.relay(w, r, c, resp, rest)
	if f != nil {
		return false, f
	}
	if bodyDone != nil {
		// The response is complete; the upload may not be, if the upstream
		// answered early. Stop it and do not reuse the connection then.
		select {
		case err := <-bodyDone:
			if err != nil {
				reusable = false
			}
		default:
			reusable = false
			c.kill()
			_ = http.NewResponseController(w).SetReadDeadline(aLongTimeAgo)
			<-bodyDone
		}
	}
	return reusable, nil
}

// send sends the request in c.bw whole and arms the response-header
// timeout, then waits for the answer without a failing read first
// (wire.Sender): the request line's read system call that Go's net package
// would spend learning that nothing came yet. With bytes already buffered
// from the upstream (none should be), it only flushes.
//
// The deadline is moved only when the one in force (left by the last
// response, which was whole in the buffer) is more than a second (an
// eighth of a shorter timeout) nearer than the timeout asks: a busy
// connection then updates the runtime's timer about once a second rather
// than once a request (1.74 deadline updates per request before, proxied
// small answer and 30 KB page together). Should that deadline pass before
// the timeout's end (c.headBy), the head's read sets it to that end and
// waits on (conn.headEarly): a silent upstream gets 504 after the
// timeout, never up to a second before it.
//
// The clock is read monotonic only (monotime), and not again for a pooled
// connection (get read it microseconds before): the wall clock that
// time.Now reads besides is read only when the deadline moves.
func (h *Handler) send(c *conn) error {
	now := c.clock
	if now == 0 {
		now = monotime.Now()
	}
	c.clock = 0
	t := now + int64(h.headerTimeout)
	c.headBy = t
	if !c.readDeadline || time.Duration(t-c.rdl) >= min(time.Second, h.headerTimeout/8) {
		c.nc.SetReadDeadline(time.Now().Add(h.headerTimeout))
		c.rdl, c.readDeadline = t, true
	}
	if c.br != nil && c.br.Buffered() > 0 {
		return c.bw.Flush()
	}
	return c.send.Send()
}

// sendFailure classifies an error writing the request head or a short body.
func (h *Handler) sendFailure(c *conn, err error) *failure {
	return &failure{status: statusFor(err), cause: "sending the request: " + describe(err, h.headerTimeout), stale: c.reused}
}

// headFailure classifies an error reading the response head.
func (h *Handler) headFailure(c *conn, err error) *failure {
	nothing := c.lr.n == maxResponseHeaderBytes
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &failure{status: http.StatusGatewayTimeout, cause: "no response header within " + h.headerTimeout.String()}
	}
	if nothing && c.reused && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
		return &failure{status: http.StatusBadGateway, cause: "kept-alive connection closed by the upstream", stale: true}
	}
	if errors.Is(err, errHeaderTooLarge) {
		return &failure{status: http.StatusBadGateway, cause: "bad response: " + err.Error()}
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return &failure{status: http.StatusBadGateway, cause: describe(err, 0) + " before a response"}
	}
	return &failure{status: http.StatusBadGateway, cause: "bad response: " + err.Error()}
}

// headState lets the body writer start the response-header timeout once
// the request is fully sent, unless the response already arrived.
type headState struct {
	mu   sync.Mutex
	done bool
}

// clientBody records errors reading the client's body, to tell them from
// errors writing to the upstream.
type clientBody struct {
	r   io.Reader
	err error
}

// clientBodyError wraps an error reading the client's body.
type clientBodyError struct{ err error }

func (e *clientBodyError) Error() string {
	return "reading the request body from the client: " + e.err.Error()
}
func (e *clientBodyError) Unwrap() error { return e.err }

func (b *clientBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// writeBody streams the request body to the upstream (on its own
// goroutine), with the client's trailer fields named in trailers after a
// chunked one, then starts the response-header timeout.
func (h *Handler) writeBody(c *conn, r *http.Request, mode framing, cl int64, trailers []string, st *headState) error {
	bp := h.bufs.Get().(*[]byte)
	defer h.bufs.Put(bp)
	buf := *bp
	src := &clientBody{r: r.Body}
	var err error
	if mode == bodyLength {
		err = h.copyOut(c, buf, io.LimitReader(src, cl), false)
	} else {
		err = h.copyOut(c, buf, src, true)
		if err == nil {
			c.bw.WriteString("0\r\n")
			for _, k := range trailers {
				for _, v := range r.Trailer[k] {
					writeField(c.bw, k, v)
				}
			}
			c.bw.WriteString("\r\n")
			err = c.bw.Flush()
		}
	}
	if src.err != nil {
		c.kill() // the upstream must not wait for the rest
		return &clientBodyError{src.err}
	}
	if err != nil {
		c.kill()
		return err
	}
	st.mu.Lock()
	if !st.done {
		c.rdl, c.readDeadline = monotime.Now()+int64(h.headerTimeout), true
		c.nc.SetReadDeadline(time.Now().Add(h.headerTimeout))
	}
	st.mu.Unlock()
	return nil
}

// copyOut copies src to the upstream, as chunks when chunked, flushing each
// piece so a streamed upload reaches the upstream as it arrives. A write
// that makes no progress for the response-header timeout fails.
func (h *Handler) copyOut(c *conn, buf []byte, src io.Reader, chunked bool) error {
	var hdr [20]byte
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(h.headerTimeout))
			if chunked {
				c.bw.Write(strconv.AppendInt(hdr[:0], int64(n), 16))
				c.bw.WriteString("\r\n")
			}
			c.bw.Write(buf[:n])
			if chunked {
				c.bw.WriteString("\r\n")
			}
			if err := c.bw.Flush(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			c.nc.SetWriteDeadline(time.Time{})
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// readHead reads the response head, relaying informational responses
// (103 Early Hints) and dropping 100 Continue.
func (h *Handler) readHead(w http.ResponseWriter, r *http.Request, c *conn) (*response, error) {
	c.attach()
	c.lr.limited, c.lr.n, c.lr.body = true, maxResponseHeaderBytes, false
	defer func() { c.lr.limited = false }()
	resp := &c.resp
	for {
		if err := resp.readResponse(c.br, r.Method); err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			// Trailers share the head's limit with it.
			resp.hdrLeft = c.lr.n + int64(c.br.Buffered())
			return resp, nil
		}
		if resp.StatusCode == http.StatusContinue {
			continue
		}
		// The 1xx goes out with the fields the server set for this
		// response (Server, X-Request-Id, ...) plus the upstream's own
		// 1xx fields, less framing and hop-by-hop ones and never in
		// place of the server's; then the map is as it was, so the final
		// response carries exactly the fields it would have had without
		// the 1xx (RFC 8297 section 2, RFC 9110 section 15.2).
		hdr := w.Header()
		uh := resp.Header()
		var tokens connTokens
		tokens.parse(uh["Connection"])
		var arr [8]string
		added := arr[:0]
		for k, vv := range uh {
			if skipInterimField(k) || tokens.n > 0 && tokens.has(k) {
				continue
			}
			if _, ok := hdr[k]; ok {
				continue
			}
			added = append(added, k)
			hdr[k] = vv
		}
		w.WriteHeader(resp.StatusCode)
		for _, k := range added {
			delete(hdr, k)
		}
	}
}

// target returns the request target's path sent upstream: the client's
// encoded path (wire.ClientPath: encoded slashes and the client's other
// escapes kept), less the route prefix when stripping.
func (h *Handler) target(r *http.Request) string {
	p := wire.ClientPath(r.URL)
	if !h.strip || h.route == "/" {
		return p
	}
	pre := strings.TrimSuffix(h.route, "/")
	if strings.HasPrefix(p, pre) && (len(p) == len(pre) || p[len(pre)] == '/') {
		if p = p[len(pre):]; p == "" {
			p = "/"
		}
		return p
	}
	// The client encoded part of the prefix ("/pr%6Fxy/a"): skip as many
	// bytes of the encoded path as the prefix has decoded (routing matched
	// the decoded path), keeping the rest as the client wrote it.
	i := 0
	for n := 0; n < len(pre) && i < len(p); n++ {
		if p[i] == '%' && i+2 < len(p) {
			i += 3
		} else {
			i++
		}
	}
	rest := p[i:]
	if rest == "" || rest[0] != '/' {
		rest = "/" + rest
	}
	return rest
}

// writeHead writes the request line and header fields: the client's fields
// less hop-by-hop ones (RFC 9110 section 7.6.1) and those the proxy
// rewrites, then Host, the forwarding fields, upgrade and framing, with
// trailers announced in the Trailer field of a chunked body.
func (h *Handler) writeHead(bw *bufio.Writer, r *http.Request, upgrade string, mode framing, cl int64, trailers []string, wsKey string) {
	method := r.Method
	if wsKey != "" {
		method = http.MethodGet // RFC 8441 section 5: CONNECT becomes an HTTP/1.1 upgrade
	}
	bw.WriteString(method)
	bw.WriteByte(' ')
	bw.WriteString(h.target(r))
	if r.URL.RawQuery != "" || r.URL.ForceQuery || strings.IndexByte(r.RequestURI, '?') >= 0 {
		// An empty query ("/a?") is sent as it came: the target is
		// preserved byte for byte.
		bw.WriteByte('?')
		bw.WriteString(r.URL.RawQuery)
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	host := r.Host
	if h.hostHeader != "" {
		bw.WriteString(h.hostHeader)
	} else if host != "" {
		bw.WriteString(host)
	} else {
		bw.WriteString("localhost")
	}
	bw.WriteString("\r\n")
	var tokens connTokens
	tokens.parse(r.Header["Connection"])
	for k, vv := range r.Header {
		switch requestField(k) {
		case fieldCopy:
			// Names with an underscore are dropped, as nginx does by
			// default (underscores_in_headers off): applications that
			// map "-" and "_" to the same name (CGI's HTTP_*, many
			// frameworks) would take "X_Forwarded_For" for the
			// X-Forwarded-For this proxy vouches for.
			if k == "" || k[0] == ':' || strings.IndexByte(k, '_') >= 0 || tokens.n > 0 && tokens.has(k) {
				continue
			}
			for _, v := range vv {
				writeField(bw, k, v)
			}
		case fieldTE:
			if wire.HasToken(vv, "trailers") {
				bw.WriteString("Te: trailers\r\n")
			}
		case fieldMaxFwd:
			if tokens.n > 0 && tokens.has(k) {
				continue
			}
			if r.Method == http.MethodOptions {
				// One intermediary less (RFC 9110 section 7.6.2); ServeHTTP
				// answered a 0 itself and refused an invalid value.
				writeDecremented(bw, vv[0])
				continue
			}
			// Defined for OPTIONS and TRACE only (dispatch refuses TRACE):
			// passed on as sent with other methods.
			for _, v := range vv {
				writeField(bw, k, v)
			}
		case fieldID:
			// With request_id the server set it (the client's valid id or
			// a new one): Arka's field, which the client's Connection
			// field cannot remove (RFC 9110 section 7.6.1 is about the
			// fields their sender nominated). Else the client's own.
			if h.requestID || tokens.n == 0 || !tokens.has(k) {
				for _, v := range vv {
					writeField(bw, k, v)
				}
			}
		}
	}
	if h.fwd {
		f := forwarded{ip: realip.Peer(r.RemoteAddr), proto: "http"}
		if r.TLS != nil {
			f.proto = "https"
		}
		f.trusted = realip.Trusted(h.trusted, f.ip)
		f.client = f.ip
		if f.trusted {
			f.client = realip.Client(r.RemoteAddr, r.Header, h.trusted, h.clientIP)
		}
		writeForwarded(bw, r.Header, host, &f)
	}
	if upgrade != "" {
		bw.WriteString("Connection: Upgrade\r\nUpgrade: ")
		bw.WriteString(upgrade)
		bw.WriteString("\r\n")
		if wsKey != "" {
			writeField(bw, "Sec-WebSocket-Key", wsKey)
		}
	}
	switch mode {
	case bodyLength:
		var b [20]byte
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(b[:0], cl, 10))
		bw.WriteString("\r\n")
	case bodyChunked:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
		if len(trailers) > 0 {
			bw.WriteString("Trailer: ")
			for i, k := range trailers {
				if i > 0 {
					bw.WriteString(", ")
				}
				bw.WriteString(k)
			}
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("\r\n")
}

// relay copies the response to the client: header fields less hop-by-hop
// ones, the status, the body as it arrives, then trailers. It reports
// whether the upstream connection ended cleanly and may be reused. With
// response buffering the body goes through a spool.Response, and what the
// client has not taken when the upstream has sent everything is left in
// rest, with the trailers, for after the connection is released.
func (h *Handler) relay(w http.ResponseWriter, r *http.Request, c *conn, resp *response, rest *relayed) (bool, *failure) {
	hdr := w.Header()
	var tokens connTokens
	tokens.parse(resp.copyHeader(hdr))
	if tokens.n > 0 {
		// Fields named in Connection are hop-by-hop too.
		for _, f := range resp.fields {
			if k := resp.raw[f.name.start:f.name.end]; tokens.has(string(k)) {
				delete(hdr, string(k))
			}
		}
	}
	if _, ok := hdr["Content-Type"]; !ok {
		// The upstream sent none: the client gets none either, rather
		// than a guess (a nil value tells the engine not to sniff).
		hdr["Content-Type"] = nil
	}
	if loc := hdr["Location"]; len(loc) == 1 {
		if v, ok := h.rewriteLocation(loc[0], r, c); ok {
			hdr["Location"] = []string{v}
		}
	}
	announced := resp.announced
	if len(announced) > 0 {
		hdr["Trailer"] = announced
	}
	buffered := spool.Buffering(h.respBuffer, hdr)
	reset := resp.StatusCode == http.StatusResetContent
	if reset {
		// No content in a 205 (RFC 9110 section 15.3.6): what the
		// upstream sent is read and dropped.
		hdr["Content-Length"] = []string{"0"}
		delete(hdr, "Trailer")
		announced, buffered = nil, false
	}
	if !resp.hasBody() {
		w.WriteHeader(resp.StatusCode)
		return !resp.Close, nil
	}
	// The body is not here yet (a long poll, an event stream that starts
	// later): the client has the header now. Else, buffered, the status
	// goes out with the first bytes the buffer passes on (HoldStatus):
	// until then a body the upstream breaks is answered 502.
	early := c.br.Buffered() == 0
	held := buffered && !early // the status is held (a 502 is still possible)
	// Gathering: a buffered body of known length that fits a copy buffer
	// is read into one while it comes without waiting; whole, it goes to
	// the client from there (relayed.finish) once the upstream connection
	// is back in the pool, without a spool.Response (its lock, chunk and
	// copy); when it came with the head, from the read buffer itself. A
	// body that pauses midway goes on through the spool as any other.
	gathering := held && !reset && resp.ContentLength >= 0 && resp.ContentLength <= copyBufSize
	if gathering {
		if body, ok := resp.bufferedBody(); ok {
			// All here in one read: the client gets it from the read
			// buffer, which goes with it (the connection takes another
			// for its next request).
			clean := !resp.Close && c.br.Buffered() == 0
			rest.whole, rest.status, rest.rd = body, resp.StatusCode, c.br
			c.br = nil
			return clean, nil
		}
	}
	bp := h.bufs.Get().(*[]byte)
	buf := *bp
	defer func() {
		if rest.bp != bp {
			h.bufs.Put(bp)
		}
	}()
	var dst io.Writer = w
	if !held {
		w.WriteHeader(resp.StatusCode)
	}
	if buffered && !gathering {
		rest.out = spool.NewResponse(w, h.tempDir, h.spool, r.RemoteAddr)
		if held {
			rest.out.HoldStatus(resp.StatusCode)
		}
		dst = rest.out
	}
	if reset {
		dst = io.Discard
	}

	var rc *http.ResponseController
	if early {
		rc = http.NewResponseController(w)
		rc.Flush()
	}
	var written int64
	for {
		var n int
		var rerr error
		if gathering {
			n, rerr = resp.Read(buf[written:])
			written += int64(n)
			if rerr == io.EOF {
				rest.whole, rest.status, rest.bp, rest.bufs = buf[:written], resp.StatusCode, bp, &h.bufs
				return !resp.Close, nil
			}
			if rerr == nil && c.br.Buffered() == 0 && !c.lr.full {
				// The next read would wait for the upstream.
				gathering = false
				rest.out = spool.NewResponse(w, h.tempDir, h.spool, r.RemoteAddr)
				rest.out.HoldStatus(resp.StatusCode)
				dst = rest.out
				rest.out.Write(buf[:written]) // no error: nothing is passed on yet
			}
		} else {
			n, rerr = resp.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return false, nil // the client left
				}
				written += int64(n)
			}
			if resp.framing != respLength {
				// An event stream or a long poll: the rest comes in reads
				// into buf, and a small read buffer will do while it
				// lasts. (A body of known length keeps the large one: its
				// last read, through the buffer, finds any bytes the
				// upstream sent past its end, and put refuses the
				// connection; a read of exactly what is left would not.)
				c.shrink()
			}
		}
		if rerr == io.EOF {
			break
		}
		if gathering && rerr == nil {
			continue
		}
		if rerr != nil {
			if r.Context().Err() != nil {
				return false, nil
			}
			cause := "response body cut short: " + describe(rerr, 0)
			if rest.out != nil && rest.out.Discard() {
				rest.out = nil // nothing was passed on, nor will be
			}
			if rest.out == nil && held {
				// Nothing reached the client: answer 502 (or 504) as for
				// a bad head, without the upstream's fields.
				for _, f := range resp.fields {
					delete(hdr, string(resp.raw[f.name.start:f.name.end]))
				}
				delete(hdr, "Content-Type")
				delete(hdr, "Location")
				delete(hdr, "Trailer")
				return false, &failure{status: statusFor(rerr), cause: cause}
			}
			h.log.Warn("proxy: upstream failed", h.logAttrs(c.up, "method", r.Method, "status", resp.StatusCode,
				"cause", cause)...)
			c.up.failures.Add(1)
			// Make the engine abort the response (close the connection or
			// reset the stream) rather than end it as if it were complete,
			// once the client has what came.
			c.nc.Close()
			rest.finish(w)
			panic(http.ErrAbortHandler)
		}
		// Flush when the next read would wait for the upstream: server-sent
		// events and long polls reach the client as they are written.
		if c.br.Buffered() == 0 && (resp.ContentLength < 0 || written < resp.ContentLength) {
			if resp.ContentLength >= 0 && c.lr.full {
				// The last read filled the buffer: the rest of a body of
				// known length is most likely in the socket already (a
				// 30 KB page comes in two reads), and a flush or a peek
				// now would cost a system call for nothing. Should the
				// upstream pause right at that boundary, the bytes wait
				// for its next ones. Streams of unknown length (events,
				// long polls) are always flushed.
				continue
			}
			if rest.out != nil {
				// Buffered: unless bytes or the end of the stream are
				// already waiting (a non-blocking peek, only until the
				// first flush), so a body cut short right away is still
				// answered 502.
				if held && c.alive() {
					held = false // Flush sends the status
					rest.out.Flush()
				}
				continue
			}
			if rc == nil {
				rc = http.NewResponseController(w)
			}
			rc.Flush()
		}
	}
	if rest.out != nil {
		rest.trailer, rest.announced = resp.Trailer, announced
	} else {
		setTrailers(hdr, resp.Trailer, announced)
	}
	return !resp.Close, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
