// Package h1 is Arka's HTTP/1.1 engine (RFC 9112). It serves
// http.Handlers like net/http does, with the same *http.Request and
// http.ResponseWriter contracts (Flusher, Hijacker, io.ReaderFrom for
// sendfile, http.ResponseController deadlines), but does less per request:
// connection state, buffers, the request URL and header map are reused
// across the requests of a connection; a request costs one allocation (two
// when its text differs from the previous request on the connection);
// and no background read is started unless a handler asks to learn of the
// client going away (by waiting on the request context).
//
// HTTP/2 is not served here: the caller hands TLS connections that
// negotiate "h2" to package h2.
//
// # Where the time goes
//
// CPU profile of arka serving the 1.3 KB page over HTTP/1.1 with TLS
// (wrk, 64 connections, 8 s, shared 2-core machine; ARKA_CPUPROFILE),
// at the start of this work: system calls 45 % (the response's write,
// with the loopback delivery the kernel charges to it, 37 %; reads 10 %),
// AES-GCM 5 %, request parsing (readRequest) 12 %, the server's dispatch
// and the static handler 12 %, writing the header fields 2.5-5 %, read
// and write deadlines 3 %, allocations 3 %, the scheduler 4 %. Since:
// the fields of a response that repeats the previous one's strings are
// copied from it (fieldMemo), Host stays out of the header map, a
// repeated request's text, and the request with its context, cost one
// allocation, and an idle wait no longer moves the read deadline twice
// per request. BenchmarkRequestWrk (the engine alone, pipelined, no
// system calls): 2467 -> 1334 ns CPU and 3 -> 1 allocations per request.
// Left: the one allocation (reusing the request and its context for the
// next request would hand that request's context to a goroutine that
// kept the earlier one), the scheduler's park and wake per request, and
// Go's TLS record code.
//
// Profiled again at ceb96c4, same setup, 20 s
// (go tool pprof -top; perf record -g for the kernel's side): system calls
// 54 % (the response's write 40 %, of it the kernel's loopback delivery to
// the client and its wake-up; both reads 13.5 %), the server's dispatch
// and static handler 11.5 % (the file cache lookup 2.2 %, the response
// header fields 2.4 %), readRequest 8.8 % (its allocation 1.8 %, copying
// the request template 1 %), crypto/tls's own work 10 % (AES-GCM seal 4.5
// %, open 2 %), the scheduler's park and netpoll 7 %, clearing the
// response's header map 1.8 %, clock readings 2.5 % (7.1 per request:
// time.now 4, runtime.nanotime1 3, counted with uprobes). nginx (1.22,
// OpenSSL 3, 2 workers) under the same load spends 52-60 % of its CPU in
// the kernel too, with the same system calls per request: one write and
// two reads (OpenSSL reads a record's header and then its body; Arka's
// second read is the one that fails, see below), against 0.22 epoll_wait
// per request to Arka's 0.36 epoll_pwait and 0.03 futex. So what is left
// to take is user-space work spread thin over the engine, the dispatch
// and crypto/tls; since: the response's header map holds 8 fields in one
// group that clear empties at once (was a table of 4 groups), the idle
// wait and the dispatch reuse clock readings the engine made anyway, Date
// reads the monotonic clock only (package wire), together 11.1 -> 7.2
// vDSO clock calls per request (time.Now makes two). Keeping the request
// head's field positions in a slice of the connection instead of a
// [32]field array zeroed on the stack (1.5 KB) measured no different
// (BenchmarkRequestWrk, user+system CPU, six alternated runs: fastest
// 1.12 against 1.14 µs per request) and was left out. The whole server
// under wrk (64 connections, TLS, CPU of the process per request, three
// alternated runs each, on a machine whose other load took 1.4-1.9 of
// its 2 cores): 17.0-18.3 -> 15.0-19.0 µs, a change within that noise.
//
// Profiled again at 1c456ed (wrk -t1 -c64 over TLS, small page, shared
// 2-core machine at a load of 11-20; perf record -g of arka, then of
// nginx's two workers, 10 s each), shares of each server's own CPU: Arka
// kernel 49 % (the response's write 30 %, the two reads 10 %, epoll_pwait
// 4 %, futex 1.5 %), crypto/tls with AES-GCM 12 %, this package 8.8 %,
// the scheduler, netpoller and system call glue 8 %, maps, copies and
// hashing 5.9 %, wire 2.9 %, the server's dispatch 2.2 %, the static
// handler 1.5 %, allocation and collection 1.5 %; nginx kernel 54 %
// (write 26 %, reads 7 %), OpenSSL 21 %, nginx 17 %, libc 7 %. System
// calls per request (perf stat): Arka 2.0 reads, 1.0 write, 0.13-0.14
// epoll_pwait, 0.02-0.03 futex; nginx 2.0 reads, 1.0 write, 0.04
// epoll_wait. Allocations per request: two, the request (above) and 24
// bytes in crypto/tls (readFromUntil's atLeastReader, escaping into
// bytes.Buffer.ReadFrom; BenchmarkStaticSmall/https with -memprofile).
// So the bench's 0.85x of nginx's CPU per request cannot reach the
// seed's 0.68x in this engine: that is a fifth of Arka's CPU, more than
// this package, wire, the dispatch and the static handler spend together
// (15 %); the rest is the kernel's work for the same system calls as
// nginx's, Go's TLS record layer and AES-GCM (12 %, against OpenSSL's
// 21 % of nginx's larger total) and the runtime's park and wake of the
// connection's goroutine per request (gopark 0.7 per request, uprobes).
// Wall CPU per request cannot show a change of a few per cent on this
// machine (three alternated 5 s runs each, same load: 17.9-22.7 µs before,
// 17.0-24.2 µs after, nginx 20.1-23.5 µs), so the changes since were
// measured in instructions (callgrind, deterministic; GOGC=off
// GOMAXPROCS=1 for the benchmark): the head's field positions in a slice
// of the connection instead of a zeroed 1.5 KB array, the request copied
// from its own zeroed memory instead of a template in the connection, a
// repeated response head matched once and its Transfer-Encoding,
// Connection and Date taken from the memo, Host's name recognised
// without a map lookup, and ValidHost by table (package wire):
// BenchmarkRequestWrk 9940 -> 8820 instructions per request (-11 %),
// BenchmarkRequestBrowser 29293 -> 28553; in the whole server under
// callgrind (wrk -c8 over TLS) readRequest 4313 -> 3913 and the dispatch
// with the static handler and the response head 7968 -> 7704
// instructions per request, of about 24,000 in user space (AES-GCM's
// seal alone 3,900). Tried and left out, as no better: matching the
// memo by ranging over the header map (+130 instructions: iterating
// costs more than seven lookups of a one-group map), and BatchConn
// writing outside a batch without its mutex (15 instructions a record).
//
// System calls per request, perf stat on arka under wrk (16 connections,
// small page): one write, and two reads over plain TCP and over TLS (as
// nginx with OpenSSL does over TLS, measured the same way): the
// request's, and before it one that fails (EAGAIN), because Go's net
// package reads first and only then waits for the connection to become
// readable. Waiting first (syscall.RawConn.Read with a function that
// returns false on its first call), as the proxy and FastCGI do towards
// their upstreams (wire.Sender), is not safe here: every wait begins by
// clearing the readiness the netpoller recorded (internal/poll
// prepareRead), so a request that reached the socket after the previous
// read, while the handler ran, would never wake it (edge-triggered epoll
// does not repeat itself) and the connection would hang until its idle
// timeout. TestRequestWhileHandling fails so within 3 s with that change.
// The read that fails costs one short system call, no copy. nginx over
// plain TCP does without it (perf stat, same load, 2026-12-02: 0.99
// recvfrom, 0.99 writev and 0.13 epoll_wait per request, against Arka's
// 1.89 reads, 1.00 write, 0.21 epoll_pwait and 0.02 futex): with
// EPOLLRDHUP it takes a read that returned less than asked as having
// emptied the socket and waits for epoll's next edge; Go's poller keeps
// no such state between reads (RawRead clears what it recorded, as above).
//
// A body write larger than the write buffer's room, after the head (and
// any body start) went into the buffer, is sent with them in one writev
// over plain TCP (response.writeBody, conn.writeBuffers), where bufio
// would write its filled buffer and then the rest: a proxied or FastCGI
// page of 30 KB took two write system calls, now one (perf stat of the
// proxy's 30 KB page: 2.93 -> 1.94 writes per request, the other being the
// request upstream). A wrapper of the TCP connection keeps the writev by
// passing net.Buffers on (buffersWriter). Static files still go by
// sendfile (ReadFrom), and Hijack's bufio.ReadWriter is unchanged.
//
// A handler that waits on its request context (proxy, FastCGI) gets
// the client-gone watch only after watchDelay, through AfterFunc without
// goroutine or Done channel, and with no timer of its own: one scanner
// per server starts the watchers of requests that have waited that long
// (ctx.go: watchLoop). An idle keep-alive connection holds no write
// buffer, and over TLS no read buffer either (conn.go: waitRequest).
package h1

import (
	"cmp"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/server/internal/limits"
	"github.com/arkaweb/arka/server/internal/wire"
)

// Server serves HTTP/1.x connections.
type Server struct {
	Handler http.Handler
	// Limits are the client limits (server/internal/limits): header read
	// (also the wait for a new connection's first request), idle keep-alive,
	// body silence and minimum rate (a slow body makes the handler's read
	// fail with an error for which os.IsTimeout is true; handlers answer
	// 408 and the connection is closed after the response; a handler's own
	// read deadline, through http.ResponseController, replaces them for the
	// rest of the request), write progress (a client that reads nothing
	// for Limits.Write is dropped, like nginx's send_timeout; handlers may
	// set their own deadlines) and header bytes (431 beyond, 414 when the
	// request line alone is too long). Zero fields take the defaults.
	Limits limits.Limits
	// Logger receives engine-level problems (panics in handlers). Default
	// slog.Default().
	Logger *slog.Logger
	// BaseContext is the parent of every connection's context (values such
	// as http.LocalAddrContextKey are added per connection).
	BaseContext context.Context
	// Rejected, when set, is called after the engine answered a request
	// it could not parse (400, 408, 414, 431, 501, 505) itself, without
	// running Handler, for the access log and counters. r carries the
	// client's address and TLS state, and the request line's method,
	// target (RequestURI) and protocol as far as they were read; n is the
	// content bytes sent.
	Rejected func(r *http.Request, status int, n int64)

	mu        sync.Mutex
	conns     map[*conn]struct{}
	listeners map[*net.Listener]struct{}
	closing   atomic.Bool
	watching  atomic.Bool // watchLoop runs (ctx.go)
	wg        sync.WaitGroup
	seq       uint64 // connections accepted (conn.seq), under mu
}

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = http.ErrServerClosed

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Serve accepts connections on ln and serves each in its own goroutine
// until ln fails or the server shuts down.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.listeners == nil {
		s.listeners = map[*net.Listener]struct{}{}
	}
	s.listeners[&ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, &ln)
		s.mu.Unlock()
	}()
	var delay time.Duration
	onError := wire.LogAcceptErrors(s.logger())
	for {
		rw, err := wire.Accept(ln, &delay, onError)
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			return err
		}
		go s.ServeConn(rw, nil)
	}
}

// ServeConn serves one connection until it closes, in the calling
// goroutine. For a *tls.Conn whose handshake is done, state is its
// connection state (shown to handlers as Request.TLS).
func (s *Server) ServeConn(rw net.Conn, state *tls.ConnectionState) {
	c := newConn(s, rw, state)
	if !s.track(c, true) {
		rw.Close()
		return
	}
	defer s.track(c, false)
	c.serve()
}

func (s *Server) track(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.closing.Load() {
			return false
		}
		if s.conns == nil {
			s.conns = map[*conn]struct{}{}
		}
		s.seq++
		c.seq = s.seq
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		return true
	}
	delete(s.conns, c)
	s.wg.Done()
	return true
}

// Shutdown stops accepting (closing listeners given to Serve), closes idle
// connections, lets active ones finish their current request, and waits
// for them until ctx is done; then it closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.mu.Lock()
	for ln := range s.listeners {
		(*ln).Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		for c := range s.conns {
			if st := c.state.Load(); st == stateIdle || st == stateNew {
				c.rwc.Close()
			}
		}
		s.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// CloseIdle closes up to n kept-alive connections that are waiting for
// their next request, to make room under a connection limit (as nginx
// reuses idle keep-alive connections); with match set, only those whose
// remote address (host:port) it accepts. It returns how many it closed.
func (s *Server) CloseIdle(n int, match func(remote string) bool) int {
	return s.closeIn(stateIdle, stateIdle, n, match)
}

// CloseReadingHead closes up to n connections that have not sent a whole
// request head yet (new ones included), oldest first: the second choice
// under a connection limit, as a slowloris client drips header bytes (or
// sends nothing) to hold its slots, while a real client sends its head in
// one go right after connecting. match is as for CloseIdle. It returns how
// many it closed.
func (s *Server) CloseReadingHead(n int, match func(remote string) bool) int {
	return s.closeIn(stateNew, stateHead, n, match)
}

// closeIn closes up to n connections in state a or b, oldest first: a
// connection just accepted, whose client is about to send its request, is
// the last to go.
func (s *Server) closeIn(a, b int32, n int, match func(string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cand []*conn
	for c := range s.conns {
		if st := c.state.Load(); (st == a || st == b) && (match == nil || match(c.remote)) {
			cand = append(cand, c)
		}
	}
	if len(cand) > n {
		slices.SortFunc(cand, func(a, b *conn) int { return cmp.Compare(a.seq, b.seq) })
		cand = cand[:n]
	}
	for _, c := range cand {
		c.rwc.Close()
	}
	return len(cand)
}

// Close closes listeners and every connection at once.
func (s *Server) Close() error {
	s.closing.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.listeners {
		(*ln).Close()
	}
	for c := range s.conns {
		c.rwc.Close()
	}
	return nil
}
