// Package fastcgi runs scripts through a FastCGI server such as php-fpm:
// an http.Handler with its own FastCGI 1.0 client, a pool of kept
// connections and a bounded FIFO queue in front of it.
//
// One Handler serves one route. It maps the request path to a script
// under the document root (see resolve), sends the request as FastCGI
// records with the CGI meta-variables of RFC 3875 section 4.1 as PARAMS
// and the body as STDIN, and turns the script's STDOUT, a CGI response
// (RFC 3875 section 6), into the HTTP response. STDERR goes to the error
// log, never to the client.
//
// The pool keeps at most max_conns connections to the FastCGI server, open
// and reused (FCGI_KEEP_CONN), and never more: php-fpm ties one worker to
// each open connection, so more connections than workers only hide
// requests in php-fpm's listen backlog. Requests beyond max_conns wait in
// one queue of at most queue.size, in arrival order; a full queue or a
// wait longer than queue.timeout is 503 with Retry-After.
//
// Responses are not compressed here: the server's content-coding
// middleware wraps the handler.
//
// # Where the time goes
//
// Measured on the shared 2-core machine (load 10 to 20 from other work, so
// figures that contention does not move: system calls, allocations,
// profile shares), a tiny script and a 25 KB page for wrk over HTTP/1.1
// with TLS, 64 connections, 32 php-fpm workers:
//
//   - php-fpm's own CPU is about half of the total, and the same for Arka
//     and nginx: its workers make the same system calls per request
//     behind either (6 reads, one per record header and body, for
//     BEGIN_REQUEST, PARAMS, the empty PARAMS and STDIN; 2 writes for the
//     tiny script, 5 for the page: php-fpm sends in 8 KiB pieces). Arka
//     sends what nginx sends, the fewest records, in one write, on kept
//     connections (FCGI_KEEP_CONN, one per worker); both pools are
//     configured alike by tests/bench.
//   - Arka's part (perf, tiny script): the handler is 43% of its CPU,
//     mostly system calls: the write to php-fpm 9%, the read of its answer
//     11%; TLS and the h1 engine most of the rest; sysmon and the
//     scheduler about a fifth. System calls per tiny request, in this
//     package: 1 write (the whole request), 1 read (32 KiB buffer: the
//     whole answer and END_REQUEST). The MSG_PEEK recvfrom that checked a
//     kept connection before use is left to TCP and streamed bodies (see
//     exchange.run), and the script's stat (1 per request, 2.5 to 5.5 us)
//     is remembered for statTTL.
//   - The page: passing each 8 KiB piece on as it came made 3 to 4 client
//     writes per page, chunked, through the response buffer's goroutine
//     (spool.Response.drain: 23% of Arka's CPU, with its wake-ups). Pieces
//     that follow within holdDelay are now gathered, and a page goes out
//     whole after END_REQUEST with a Content-Length: 2 TLS records.
//   - Allocations (make bench-go, BenchmarkFastCGI): 2 per request, both
//     the h1 engine's; none in this package (buffers are pooled per
//     request, response fields that repeat use shared values).
//   - Second pass (perf record -g of Arka under wrk, tiny script, load
//     about 19): the handler is 49% of Arka's CPU, of which the read of
//     php-fpm's answer is 17% and the write of the request 11%, nearly
//     all in the kernel: waking the php-fpm worker (and, on the read,
//     unix_write_space waking it again), and Arka's thread preempted on
//     its way back from those calls. nginx makes the same two calls, so
//     this part cannot shrink here. The user-space rest (16%) is flat,
//     nothing above 1%. What was taken out of it: the CGI header was
//     copied into its own buffer with the start of the body, which was
//     then copied again (now parsed where it lies: body bytes are copied
//     once, from the read buffer to the output); each request moved both
//     deadlines of the connection (now kept while less than
//     read_timeout/8 old, as Read does); each queued request armed and
//     stopped a timer of its own and updated a map three times (now one
//     timer for the queue and one look-up; BenchmarkQueue).
//   - The queue (64 clients, 32 workers): three of four requests wait in
//     it, granted in arrival order under pool.mu. Wait times: p50 under
//     0.5 ms, p99 under 4 to 8 ms; the time a request holds its
//     connection (php-fpm running it, Arka reading the answer) p50 2 to 4
//     ms, p99 16 to 32 ms. The tail is there, in the scheduling of 32
//     php-fpm workers and Arka on 2 shared cores, not in the hand-off.
//
// Third pass (the bench's php-page and php-page-br, 27 KB page over
// HTTP/1.1 with TLS, 64 connections, 32 static workers per pool; CPU of
// each process from /proc/PID/stat during arkabench runs, load 10 to 20
// from other work, so per-request figures move by 10 to 20% from run to
// run; shares and system call counts hold):
//
//   - The whole tree's CPU is about 0.28 ms per page for Arka and its
//     php-a pool, 0.27 to 0.32 ms for nginx and php-b: php-fpm's workers
//     are 60 to 65% of it behind either, 0.18 to 0.20 ms per request,
//     the same within the noise. What they do per request is the same
//     too (strace of a worker): 6 reads (header and body of
//     BEGIN_REQUEST and PARAMS, the empty PARAMS and STDIN records), one
//     write per 8 KiB of output, and php-fpm's own signal, timer, chdir
//     and lock calls. Arka's PARAMS are 469 bytes (nginx's fastcgi_params:
//     546), so the $_SERVER php-fpm builds is no larger. Nothing Arka
//     sends can make that part smaller: FastCGI needs the four records.
//   - Arka's own part, about 0.10 ms, is nginx's (0.10 to 0.11 ms), and
//     mostly the kernel's (pprof of a whole run): the write to the client
//     39% (the system calls 31%, AES-GCM 7%), the read of php-fpm's
//     answer 22%, the write of the request 6%, the client's request 6%;
//     this package's own code (CGI header, params, queue) is under 5%.
//     System calls per page (perf stat, strace of the reads): nginx 1
//     writev, 6 readv (php-fpm's answer in 4 and 8 KiB buffers), 2
//     writes, 2 reads, 1 recvfrom; Arka 2 writes (the request, the
//     response) and 3 reads: the client's request, php-fpm's whole
//     answer (held for holdDelay, see conn.readHeld: about one read in 40
//     of it finds nothing yet, EAGAIN), and the h1 engine's read for the
//     next request, which fails (EAGAIN) before it waits. There were 4
//     writes: the h1 engine's 4 KiB buffer with the head went over TLS
//     as one record, the rest of the body as two more, each record its
//     own system call (crypto/tls). The h1 engine now holds the
//     wire.BatchConn under the TLS connection across that write, as the
//     HTTP/2 engine does, and the three go in one (h1's writeBatched):
//     Arka's CPU per page 0.26-0.32 -> 0.20-0.25 ms in paired runs.
//   - The page compressed for browsers: zstd at level 1 was 45 to 50% of
//     Arka's CPU. A page of known length now goes to the encoding
//     middleware whole, which keeps the coded form of the last bodies it
//     coded and sends it again for the same bytes (see encoding's
//     reuse.go): on php-page-br Arka's CPU per request went from 0.27 to
//     0.37 ms to 0.18 to 0.25 ms (0.68-0.81x nginx's to 0.45-0.62x), a
//     little below the uncompressed page's. The goal, 0.38x, would leave
//     about 0.19 ms per request for the whole tree: php-fpm's share
//     alone.
//
// Fourth pass (php-tiny and php-page-br as the bench runs them: wrk over
// HTTP/1.1 with TLS, 64 connections, 32 static workers per pool, unix
// sockets and kept connections for both servers; load 10 to 26 from
// other work). CPU of each process from perf stat -p (task-clock) over 6 s
// in the middle of arkabench runs, requests counted from the pool's own
// writes; per request:
//
//   - The tiny script, Arka and nginx run AT THE SAME TIME (each with its
//     own pool and wrk, so that both see the same contention; 3 rounds):
//     Arka 48-68 us, its php-fpm 64-72 us, the tree 112-137 us; nginx
//     54-65 us, its php-fpm 68-77 us, the tree 122-142 us: Arka's tree
//     0.92-0.97x nginx's, at 1.09-1.21x its requests per second. Run one
//     after the other (the bench's way, 5 pairs) the load swings more than
//     the difference: Arka's own part 0.96x nginx's, php-fpm behind it
//     1.07x, the tree 1.02x, as in the last full bench.
//   - php-fpm does the same work behind both (strace of a worker): 27
//     system calls per tiny request (6 reads: the record headers and
//     bodies; 2 writes: STDOUT with END_REQUEST in one, and its log pipe;
//     8 rt_sigaction, 3 setitimer, 2 chdir, getcwd, 2 fcntl locks, 2
//     times, rt_sigprocmask). The PARAMS are equivalent: Arka sends 19
//     variables in 469 bytes, nginx's fastcgi_params 22 in 501 (nginx
//     adds empty CONTENT_TYPE, CONTENT_LENGTH and REMOTE_USER). Context
//     switches of the pool per request: 1.5 behind Arka, 1.7 to 1.8
//     behind nginx. What php-fpm costs is php-fpm's: about 55% of the
//     tree on the tiny script, 67% on the page.
//   - Arka's own system calls per tiny request (perf stat of sys_enter):
//     about 3 reads (the client's request, php-fpm's answer, and the h1
//     engine's read that finds nothing and waits), 2 writes, under 0.1
//     epoll_pwait; nginx 2 reads, 1 recvfrom, 1 writev, 1 write, 0.2
//     epoll_wait. perf record -g of both: a third of each server's
//     samples are the kernel's wake-ups and context switches; taking
//     php-fpm's answer off the socket wakes the worker, which sleeps in
//     read() for its next request, through unix_write_space (the
//     sender's buffer space is freed): 8.6% of Arka's samples, 10.4% of
//     nginx's.
//   - Tried and not kept: peeking at the first read of each answer
//     (MSG_PEEK) and taking the bytes off the socket only after the next
//     request is written, when the worker is awake anyway. The wake-up
//     left the profile (8.6% to under 0.5%) and the pool switched 2 to 5%
//     less per request, but Arka made one system call more per request
//     (the peek, then the read that takes the bytes) and switched 15 to
//     40% more, and in 10 rounds with and without it running at the same
//     time its own CPU per request was higher in 7 (tree 98-138 us
//     without, 111-149 us with, in the last 6): a loss, not kept.
//   - The page compressed for browsers (5 pairs run one after the other):
//     Arka 87 us of its own per request, its php-fpm 178 us; nginx 287 to
//     361 us (brotli at level 4), its php-fpm 179 to 221 us: Arka's tree
//     0.45-0.57x nginx's. The seed's 0.38x would be 177 to 221 us for
//     the whole tree, which is what php-fpm alone spends on the page
//     behind either server: out of reach for any server in front of it.
package fastcgi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/internal/fcgi"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/lograte"
	"github.com/arkaweb/arka/server/internal/spool"
	"github.com/arkaweb/arka/server/internal/wire"
)

// DefaultMaxSpool is the largest request body spooled for a script when
// Options.MaxSpool is 0; larger ones get 413.
const DefaultMaxSpool = spool.DefaultMax

// retryAfter is the Retry-After value, in seconds, of a 503 from a full
// queue or a queue timeout (RFC 9110 section 10.2.3).
const retryAfter = "2"

// Options are what the server gives a handler besides its route's config.
type Options struct {
	// Logger receives the error log: one line per failed request, naming
	// the route, the address and the cause, and the scripts' STDERR.
	// Lines are rate-limited. Nil discards them.
	Logger *slog.Logger

	// DefaultMaxConns and DefaultQueueSize apply when the route says
	// max_conns = "auto" or queue.size = "auto" (or leaves them out): the
	// board budget. Zero means config.DefaultFastCGIMaxConns and
	// config.DefaultFastCGIQueueSize.
	DefaultMaxConns  int
	DefaultQueueSize int

	// PHPAddress is the address of the php-fpm that Arka runs itself
	// ("unix:/path.sock" or "host:port"), used when the route's address is
	// config.FastCGIPHP. Without it such a route is an error.
	PHPAddress string
	// PHPMaxConns is the default max_conns of routes to PHPAddress: the
	// pool's pm.max_children, so that requests beyond it wait in the
	// handler's FIFO queue rather than in php-fpm's listen backlog. Zero
	// means DefaultMaxConns.
	PHPMaxConns int
	// PHPMaxBody is the largest request body of routes to PHPAddress, in
	// bytes: the post_max_size of Arka's php-fpm (config.PHP.PostMaxSize),
	// beyond which PHP discards a body. Larger ones get 413 before a byte
	// of them is read or spooled. Zero means no such limit.
	PHPMaxBody int64

	// ServerSoftware is SERVER_SOFTWARE, such as "arka/0.3.0". Default "arka".
	ServerSoftware string

	// Static serves requests for existing files under the root that are not
	// scripts (images, CSS of a PHP application), like the "$uri" step of
	// nginx's try_files. Nil answers them 404.
	Static http.Handler

	// TempDir is where bodies of unknown length are spooled (see body.go).
	// Empty means os.TempDir().
	TempDir string
	// MaxSpool bounds such bodies, in bytes. Zero means DefaultMaxSpool.
	MaxSpool int64
	// Spool bounds the spool files of all handlers together, and per
	// client; past it a request gets 503 with Retry-After. Nil: unbounded.
	Spool *spool.Budget

	// Dial opens connections to the FastCGI server; nil uses net.Dialer.
	// The context carries connect_timeout.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)

	// Pools, when set, shares one connection pool among all handlers that
	// use the same FastCGI address (see Pools); the server passes the same
	// Pools to every handler it builds, across reloads. Nil gives the
	// handler a pool of its own.
	Pools *Pools
}

// Handler is the FastCGI handler of one route. It is safe for concurrent
// use. Close it when the route goes away.
type Handler struct {
	route   string
	address string // as configured, for logs and stats
	network string // "unix" or "tcp"
	addr    string

	docRoot      string // DOCUMENT_ROOT
	root         string // docRoot without a trailing slash, to join paths to
	index        []string
	splitExts    []string
	fallback     string // URL path of the front controller, or ""
	fallbackFile string
	static       http.Handler
	tempDir      string
	maxSpool     int64
	maxBody      int64 // Options.PHPMaxBody for routes to Arka's php-fpm, else 0
	spool        *spool.Budget
	buffering    bool // request_buffering: bodies read whole before a connection is taken
	respBuffer   bool // response_buffering: the worker goes before a slow client has the response

	staticParams []byte // encoded pairs sent with every request
	envParams    []byte // the route's env, sent last so it can override

	maxConns     int
	queueSize    int
	readTimeout  time.Duration
	queueTimeout time.Duration

	elog  *lograte.Log
	pools *Pools
	pool  *pool

	// In-flight requests, for Shutdown.
	inflight atomic.Int64
	closing  atomic.Bool
	idle     chan struct{} // signalled when inflight drops while closing
	putOnce  sync.Once

	stats     statCache // recent stat results under root
	lastLocal atomic.Pointer[localStrings]
	lastAddrs atomic.Pointer[addrBlock]
	interned  internCache
	reqBufs   sync.Pool // *reqBuf
	copyBufs  sync.Pool // *[]byte of copyBufSize

	requests, errs, aborted, redialed atomic.Uint64
}

// reqBuf holds one request's buffers, reused through a sync.Pool.
type reqBuf struct {
	w    []byte // BEGIN_REQUEST, PARAMS and, for small bodies, STDIN
	hdr  []byte // the CGI header block as it arrives
	body []byte // a small request body
	errb []byte // one STDERR record
	out  []byte // response body bytes held for one write (outBufferSize, made once)
	x    exchange
}

// copyBufSize holds one full STDIN record: header, content, padding.
const copyBufSize = fcgi.HeaderLen + 65528 + 8

// New builds the handler for route (the route's path prefix, for logs and
// stats) from a config.FastCGI that config.Load (or config.Complete)
// normalized and validated, and whose root config.CheckEnvironment found:
// New checks none of it again. Its errors are about what only the server
// knows: a route on Arka's own php-fpm when that does not run.
func New(route string, cfg *config.FastCGI, opts Options) (*Handler, error) {
	if cfg == nil {
		return nil, fmt.Errorf("fastcgi route %s: no handler config", route)
	}
	h := &Handler{route: route, static: opts.Static, tempDir: opts.TempDir, maxSpool: opts.MaxSpool, spool: opts.Spool}
	fail := func(format string, args ...any) (*Handler, error) {
		return nil, fmt.Errorf("fastcgi route %s: %s", route, fmt.Sprintf(format, args...))
	}

	h.address = cfg.Address
	target := cfg.Dial
	if cfg.UsesPHP() {
		if opts.PHPAddress == "" {
			return fail("address %q means Arka's own php-fpm, which is not running here: add php = { fpm = \"auto\" } (or the path of php-fpm) to the site or [global], or give the address of a FastCGI server (\"unix:/path.sock\" or \"host:port\")", cfg.Address)
		}
		d, err := config.ParseFastCGIAddress(opts.PHPAddress)
		if err != nil {
			return fail("php-fpm address %q: %v", opts.PHPAddress, err)
		}
		h.address, target = opts.PHPAddress, d
		if opts.PHPMaxConns > 0 {
			opts.DefaultMaxConns = opts.PHPMaxConns
		}
	}
	if target.Network == "" {
		return fail("address %q was not parsed (a config.FastCGI that config.Load or config.Complete did not normalize)", cfg.Address)
	}
	// Arka's own php-fpm (by name or by its address): its pm.max_children
	// is known, so the pool need not probe for it.
	known := 0
	if h.address == opts.PHPAddress && opts.PHPAddress != "" {
		known = opts.PHPMaxConns
		h.maxBody = opts.PHPMaxBody
	}
	h.network, h.addr = target.Network, target.Address

	h.docRoot = filepath.Clean(cfg.Root)
	h.root = strings.TrimSuffix(h.docRoot, "/")
	h.splitExts = cfg.SplitPath
	h.index = cfg.Index
	if f := cfg.Fallback; f != "" {
		h.fallback, h.fallbackFile = f, h.root+f
	}

	software := opts.ServerSoftware
	if software == "" {
		software = "arka"
	}
	h.staticParams = encodeStatic(h.docRoot, software)
	for _, k := range sortedKeys(cfg.Env) {
		h.envParams = appendPair(h.envParams, k, cfg.Env[k])
	}

	// "auto" is the board budget, which the server knows.
	h.maxConns = cfg.MaxConns.Or(orDefault(opts.DefaultMaxConns, config.DefaultFastCGIMaxConns))
	h.queueSize = cfg.Queue.Size.Or(orDefault(opts.DefaultQueueSize, config.DefaultFastCGIQueueSize))
	h.queueTimeout = cfg.Queue.Timeout.D()
	h.readTimeout = cfg.ReadTimeout.D()
	connectTimeout := cfg.ConnectTimeout.D()
	if h.tempDir == "" {
		h.tempDir = os.TempDir()
	}
	if h.maxSpool <= 0 {
		h.maxSpool = DefaultMaxSpool
	}
	if h.maxBody > 0 {
		h.maxSpool = min(h.maxSpool, h.maxBody)
	}
	h.buffering = cfg.RequestBufferingEnabled()
	h.respBuffer = cfg.ResponseBufferingEnabled()

	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h.elog = lograte.New(logger.With("route", route, "address", h.address))

	dial := opts.Dial
	if dial == nil {
		d := &net.Dialer{}
		dial = d.DialContext
	}
	network, addr, readTimeout := h.network, h.addr, h.readTimeout
	h.pools = opts.Pools
	if h.pools == nil {
		h.pools = &Pools{}
	}
	h.idle = make(chan struct{}, 1)
	h.pool = h.pools.get(h.address)
	h.pool.configure(h, h.maxConns, h.queueSize, known, func(ctx context.Context) (*conn, error) {
		if connectTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, connectTimeout)
			defer cancel()
		}
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// Reads and writes without the runtime's syscall bookkeeping.
		return newConn(wire.Raw(nc), readTimeout), nil
	}, func(msg string, args ...any) { h.elog.Write(slog.LevelWarn, msg, args...) })
	h.reqBufs.New = func() any { return &reqBuf{w: make([]byte, 0, 2048), hdr: make([]byte, 0, 1024)} }
	h.copyBufs.New = func() any { b := make([]byte, copyBufSize); return &b }
	return h, nil
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// Stats is a snapshot of a handler's pool and counters, for the status
// page. Handlers of one FastCGI address share their pool (see Pools), so
// they report the same pool figures. Gauges are consistent with each
// other; counters count since New (pool counters since the pool began).
type Stats struct {
	Route     string
	Address   string
	MaxConns  int // connections allowed (max_conns)
	Limit     int // connections allowed now: MaxConns, or the capacity php-fpm showed (see Capped)
	QueueSize int // requests allowed to wait

	Open   int // connections open or being opened
	Busy   int // connections serving a request
	Idle   int // open connections waiting for a request (0 whenever Queued > 0)
	Queued int // requests waiting for a connection

	Rejected uint64 // pool: 503 at once, the queue was full
	TimedOut uint64 // pool: 503 after queue.timeout in the queue
	Capped   uint64 // pool: times a new connection got no php-fpm worker and the pool stopped growing

	// Pool: requests that waited in the queue, their total and longest
	// wait (whether they then got a connection or a 503).
	QueueWaits       uint64
	QueueWaitTotal   time.Duration
	QueueWaitLongest time.Duration

	Requests uint64 // requests for a script
	Errors   uint64 // 502, 503 and 504 for any other reason: connect, protocol, read timeout
	Aborted  uint64 // clients that went away before their response was complete
	Redialed uint64 // stale kept connections replaced before a request was sent
}

// Stats returns the current figures.
func (h *Handler) Stats() Stats {
	ps := h.pool.stats()
	waits, total, longest := h.pool.queueWait()
	return Stats{
		QueueWaits: uint64(waits), QueueWaitTotal: total, QueueWaitLongest: longest,
		Route: h.route, Address: h.address, MaxConns: ps.max, Limit: ps.limit, QueueSize: ps.queueMax,
		Open: ps.open, Busy: ps.busy, Idle: ps.idle, Queued: ps.queued,
		Rejected: h.pool.rejected.Load(), TimedOut: h.pool.timedOut.Load(), Capped: h.pool.capped.Load(),
		Requests: h.requests.Load(), Errors: h.errs.Load(), Aborted: h.aborted.Load(), Redialed: h.redialed.Load(),
	}
}

// Close stops taking requests (new ones get 503) and waits for the
// handler's requests in flight to finish. The last handler of a pool to
// close also closes the pool's connections. See Shutdown to bound the
// wait.
func (h *Handler) Close() error { return h.Shutdown(context.Background()) }

// Shutdown is Close with a deadline: when ctx ends first it returns ctx's
// error, and if this was the pool's last handler, requests still queued
// get 503 and connections still in use are closed under their requests
// (which then fail with 502).
func (h *Handler) Shutdown(ctx context.Context) error {
	h.closing.Store(true)
	var err error
	for h.inflight.Load() > 0 && err == nil {
		select {
		case <-h.idle:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	h.putOnce.Do(func() {
		h.pool.unconfigure(h)
		if h.pools.put(h.pool) {
			if perr := h.pool.shutdown(ctx); err == nil {
				err = perr
			}
		}
	})
	return err
}

// enter counts a request in; false means the handler is closing.
func (h *Handler) enter() bool {
	h.inflight.Add(1)
	if h.closing.Load() {
		h.exit()
		return false
	}
	return true
}

func (h *Handler) exit() {
	if h.inflight.Add(-1) == 0 && h.closing.Load() {
		select {
		case h.idle <- struct{}{}:
		default:
		}
	}
}

func (h *Handler) logf(format string, args ...any) {
	h.elog.Write(slog.LevelError, "fastcgi: "+fmt.Sprintf(format, args...))
}

func (h *Handler) getReqBuf() *reqBuf { return h.reqBufs.Get().(*reqBuf) }

func (h *Handler) putReqBuf(rb *reqBuf) {
	const keep = 64 << 10 // buffers grown past this are not kept
	if cap(rb.w) > keep || cap(rb.hdr) > keep+maxHeaderBytes {
		return
	}
	rb.w, rb.hdr, rb.errb = rb.w[:0], rb.hdr[:0], rb.errb[:0]
	rb.x = exchange{}
	h.reqBufs.Put(rb)
}

func (h *Handler) getCopyBuf() *[]byte  { return h.copyBufs.Get().(*[]byte) }
func (h *Handler) putCopyBuf(b *[]byte) { h.copyBufs.Put(b) }

// ServeHTTP runs the script for r. It expects r.URL.Path normalized by the
// server (decoded, without dot segments) and r.RequestURI as sent.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.enter() {
		w.Header().Set("Retry-After", retryAfter)
		errpage.Write(w, r, http.StatusServiceUnavailable)
		return
	}
	defer h.exit()
	rb := h.getReqBuf()
	defer h.putReqBuf(rb)
	x := &rb.x
	*x = exchange{h: h, w: w, r: r, rb: rb}
	switch h.resolve(r.URL.Path, wire.EncodedSlashAt(r.URL), &x.t) {
	case resNotFound:
		errpage.Write(w, r, http.StatusNotFound)
		return
	case resSlash:
		u := wire.ClientPath(r.URL) + "/"
		if r.URL.RawQuery != "" {
			u += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", u)
		code := http.StatusMovedPermanently
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// 308 keeps the method and body; after a 301 clients turn a
			// POST into a GET (RFC 9110 sections 15.4.2 and 15.4.9).
			code = http.StatusPermanentRedirect
		}
		errpage.Write(w, r, code)
		return
	case resStatic:
		if h.static != nil {
			h.static.ServeHTTP(w, r)
		} else {
			errpage.Write(w, r, http.StatusNotFound)
		}
		return
	}
	h.requests.Add(1)

	if err := h.readBody(r, rb, &x.body); err != nil {
		h.bodyError(w, r, &x.t, err)
		return
	}
	defer x.body.close()

	// The request head, and for small bodies the whole request, in one
	// buffer: one write to the FastCGI server.
	var pw fcgi.ParamsWriter
	pw.Begin(fcgi.AppendBeginRequest(rb.w[:0], 1, fcgi.RoleResponder, fcgi.FlagKeepConn), 1)
	err := h.appendParams(&pw, r, &x.t, x.body.length)
	rb.w = pw.End()
	if err != nil {
		errpage.Write(w, r, http.StatusRequestHeaderFieldsTooLarge)
		return
	}
	switch x.body.kind {
	case bodyBuffered:
		rb.w = fcgi.AppendStream(rb.w, fcgi.TypeStdin, 1, rb.body)
		rb.w = fcgi.AppendHeader(rb.w, fcgi.TypeStdin, 1, 0, 0)
	case bodyNone:
		rb.w = fcgi.AppendHeader(rb.w, fcgi.TypeStdin, 1, 0, 0)
	}

	c, err := h.pool.acquire(r.Context(), r, h.queueTimeout, h, h.queueSize)
	if err != nil {
		h.acquireError(w, r, &x.t, err)
		return
	}
	x.run(c)
}

func (h *Handler) acquireError(w http.ResponseWriter, r *http.Request, t *target, err error) {
	switch {
	case err == errQueueFull || err == errQueueTimeout:
		// Counted by the pool (status page, Prometheus) and logged through
		// the rate-limited error log, so a flood of 503s cannot flood it.
		if err == errQueueTimeout {
			h.elog.Write(slog.LevelWarn, "fastcgi: 503: waited queue.timeout for a connection", "script", t.scriptName, "timeout", h.queueTimeout)
		} else {
			h.elog.Write(slog.LevelWarn, "fastcgi: 503: queue full", "script", t.scriptName, "queue_size", h.queueSize)
		}
		w.Header().Set("Retry-After", retryAfter)
		errpage.Write(w, r, http.StatusServiceUnavailable)
	case err == errClosing:
		h.errs.Add(1)
		w.Header().Set("Retry-After", retryAfter)
		errpage.Write(w, r, http.StatusServiceUnavailable)
	case r.Context().Err() != nil:
		h.aborted.Add(1) // the client left while waiting
	default:
		h.errs.Add(1)
		h.elog.Write(slog.LevelError, "fastcgi: cannot connect: "+err.Error(), "script", t.scriptName)
		errpage.Write(w, r, http.StatusBadGateway)
	}
}

func (h *Handler) bodyError(w http.ResponseWriter, r *http.Request, t *target, err error) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || err == errBodyTooLarge:
		w.Header().Set("Connection", "close") // the rest of the body is not read
		errpage.Write(w, r, http.StatusRequestEntityTooLarge)
	case err == spool.ErrBusy:
		// The spool's budget is spent (Options.Spool): this request is
		// refused, the server keeps its descriptors for the others.
		h.errs.Add(1)
		h.elog.Write(slog.LevelWarn, "fastcgi: "+err.Error()+": 503", "script", t.scriptName)
		w.Header().Set("Retry-After", retryAfter)
		w.Header().Set("Connection", "close")
		errpage.Write(w, r, http.StatusServiceUnavailable)
	case r.Context().Err() != nil || wire.ClientGone(err):
		// The client left mid-upload: nobody to answer (logged 499).
		h.aborted.Add(1)
		panic(http.ErrAbortHandler)
	case os.IsTimeout(err):
		// The client stopped sending its body (the engine's body read
		// timeout, like nginx's client_body_timeout).
		errpage.Write(w, r, http.StatusRequestTimeout)
	case errors.As(err, new(*spool.WriteError)):
		h.errs.Add(1)
		h.elog.Write(slog.LevelError, "fastcgi: "+err.Error(), "script", t.scriptName)
		errpage.Write(w, r, http.StatusInternalServerError)
	default:
		// The client sent a broken body (malformed chunked framing).
		errpage.Write(w, r, http.StatusBadRequest)
	}
}
