// Package h2 is Arka's HTTP/2 engine (RFC 9113) for TLS connections that
// negotiated "h2". It serves http.Handlers with net/http's contracts, and
// is built for the cost per request of a small static file:
//
//   - frames are parsed, and header blocks decoded, with golang.org/x/net's
//     http2.Framer and hpack (well-kept libraries);
//   - a request that is the connection's only stream and has no body runs
//     its handler on the reader goroutine itself (inline.go), which lends
//     reading to a helper if the handler waits; other handlers run on a
//     pool of long-lived goroutines (no goroutine creation or stack growth
//     per stream);
//   - responses of all streams of a connection go into one output buffer
//     that a writer goroutine sends with as few TLS writes as possible, so
//     ten streams answered together cost one write, as in nginx; the
//     connection's only running stream sends its output from its own
//     goroutine instead (writeInline), with nothing to batch with;
//   - small responses are sent as one HEADERS and one DATA frame with their
//     length known, END_STREAM on the DATA frame (endLastData).
//
// Flow control, stream states, SETTINGS, PING, GOAWAY and the error
// handling of RFC 9113 sections 5 and 6 are implemented here; RFC 8441
// extended CONNECT (WebSockets over HTTP/2) is enabled.
//
// # Memory and where the time goes
//
// A connection holds its 32 KiB read buffer and its output buffers only
// while it has something to read or send; waiting for the client, they
// are back in pools (conn.go: waitFrame, releaseOutLocked), and the writer
// goroutine runs only while there is output (kickWriter): 1000 idle
// connections hold about 10 KB of heap each and one goroutine each
// (tests/bench/cmd/arkamem), not 45 KB and two. A request body's buffer
// is pooled too, and given back once the handler has read it all.
//
// A perf profile of arka serving the small page to h2load (16
// connections, one stream each at a time): the TLS writes of the writer
// goroutine about 23% of the CPU, the reader (TLS reads, frame parsing,
// HPACK) 27%, the handler 15%, the scheduler (three goroutines per
// request: reader, handler, writer) 13%, sysmon 9%, allocation and the
// collector about 11%. make bench-go counted 20 allocations per request:
// 9 in x/net's Framer.ReadFrame for the request's HEADERS (the
// MetaHeadersFrame, its Fields slice as it grew, the emit closures). Header
// blocks are now decoded here with hpack into a reused frame and field
// slice (hdecode.go, with the same checks), and the handler pool takes the
// stream rather than a method value: 10 allocations per request were
// left.
//
// Profiled again (arka under h2load -c 64 -m 1, the small page; CPU
// shares of the whole process): TLS write system calls 27%, TLS reads
// 12%, the scheduler 10% (runtime.mcall: the handler's hand-off from the
// reader, then a writer goroutine started, yielding and ending for every
// response), HPACK-encoding the response 11%, allocation and the
// collector about 6%. The connection's only stream now sends its own
// response (writeInline): no writer goroutine per response, the
// scheduler's share 10% -> 6.6%, runtime.goexit0 and newproc gone from
// the profile. Response fields whose value strings outlive the response
// (a static file's, the Date of the second) are encoded once, without
// the dynamic table, and copied (fieldcache.go): writeHeaderBlock 11% ->
// 2% of the CPU. Response header maps are pooled (headerMaps): 8
// allocations per request are left (the stream, the request and its
// header map, x/net's HeadersFrame, HPACK's decoded strings, two in
// crypto/tls per record read, one in the server's dispatch). What
// remains of the small page's CPU: the write and read system calls 44%
// (one write, one read and one read that finds nothing per request, as
// nginx), the scheduler 9% (the reader's hand-off to the handler's
// worker, and the reader's wait in the poller), allocation and the
// collector 13%, the request's header block and checks (onHeaders) 11%.
//
// Then (perf record -e cpu-clock of arka under h2load -c 64 -m 1, the
// small page, on a shared 2-core machine): the request lives in its
// stream (one allocation), and HEADERS frames are read into a reused
// frame (x/net allocated one each): 6 allocations per request are left
// (BenchmarkStaticSmall/h2: the stream, its header map, two HPACK strings
// the benchmark's client sends as literals, two in crypto/tls). The read
// and write deadlines move once per quarter of their timeout rather than
// per request (1.2% and 1.7%). What remains: TLS writes 34% (the write
// system call 28%), waiting for and reading the next request 17% (the
// read call 11%), the scheduler (the hand-off to a worker, the reader's
// park in the poller between requests), the frame's processing and the
// request's checks (processFrame) 8%, allocation 4%.
//
// Running a handler on the reader goroutine itself when it is the
// connection's only stream and has no body (with reading lent to a helper
// goroutine when the handler waits) took the workers' share from 6.9% to
// 1.1% and the reads per request from 2.0 to 1.35, about 7% of the small
// page's CPU. It was taken out for a while (fc732ca): a CI run found a
// helper still reading a connection 5 s after "the server" had shut
// down. That was TestDirectoryListing's second server, whose leak check
// (servertest) counts every goroutine started since it started: the
// first server, still serving its client, had its last handler lent
// reading by the watchdog just after that, and the helper waited for the
// client's next frame until the first server's own shutdown (reproduced:
// 2 of 1050 runs, with three runs of the test at once). Now a helper's
// wait is cut short when its handler returns (recall), so it lives no
// longer than its handler, and a helper is started only by the lend that
// takes reading (no stray helper from a late watchdog tick); inline.go
// gives the argument for shutdown. Measured again (h2load -c 64 -m 1,
// the small page, strace -c and perf record -g of arka, shared 2-core
// machine): read calls per request 2.01 -> 1.14, the scheduler
// (runtime.mcall) 11.0% -> 8.6% of the CPU, the workers gone from the
// profile.
//
// The idle read deadline was cleared when a request started and set
// again when its handler ended: two deadline updates per request, 3% of
// the CPU. It is now kept while a handler runs when it is at least Idle
// away, and the reader that meets it early reads on (conn.go: idleRetry).
//
// What remains (perf record -g of arka, the small page, h2load -c 64
// -m 1, both changes in): TLS writes 39% (the write system call 33%: one
// per response, as nginx), waiting for and reading the next request 19%
// (1.14 read calls per request), the scheduler 8.6% (the reader parks in
// the poller between requests), the static handler 9.4%, the request's
// HEADERS (onHeaders) 8% (newRequest 4.5%, HPACK decoding 3.4%), the
// response's header block 4% (the fields not cached, and :status through
// the encoder), allocation 3.8% (BenchmarkStaticSmall/h2: 6 per request,
// the stream, the request's header map, two in crypto/tls per record
// read, two HPACK strings that benchmark's client sends as literals), the
// inline watchdog's scan of the connections 0.4%.
//
// Measured again (pprof of arka under h2load -c 64 -m 1 -t 1, the small
// page, 400,000 requests; strace -c -f of 50,000 beside nginx; a shared
// 2-core machine at load average 9-26). The system calls are at their
// floor and fewer than nginx's: per request 1.00 write and 1.15 reads
// (0.15 finding nothing) where nginx makes 1 write, 2 reads (one finding
// nothing) and a pread; with a browser's Accept-Encoding (small-br-h2)
// 1.00 and 1.31 against the same 1, 2 and 1; epoll_pwait 0.02-0.03 and
// futex 0.01 per request. Arka's CPU: the system calls 43% (the writes
// 29%: on loopback the kernel's send includes delivering to the client's
// socket; the reads 11%, epoll 2%), crypto/tls's own work 15% (AES-GCM 6%,
// the rest its records, buffers and the reads' bookkeeping), reading the
// frame and building the request here (readFrame, processFrame) 16%
// (HPACK decoding 3.6%, newRequest 5.6%, the stream's allocation 1.9%),
// the handler with the server's dispatch 12% (the response's header block
// 4.3% of it), the scheduler 5% outside its epoll calls, allocation and
// the collector 4% (11 collections per 100,000 requests, about 1.5 KB
// allocated per request). Per request Arka's user time was 10.8-17.3 µs
// and its system time 9.7-13.8 µs against nginx's 11.5-13.7 and 9.9-12.0
// (five alternated runs of 100,000 requests each): the same kernel work,
// and user time about even, within this machine's noise. BenchmarkServeSmall
// (bench_test.go) measures this engine alone, in-process, without TLS or
// system calls: about 4 µs per request on that machine (a fifth of the
// whole), 3 allocations (the stream, the request's header map and its
// first group; the values of up to two fields live in the stream).
//
// A response of known length ended with an empty DATA frame carrying
// END_STREAM after its body: three frames where nginx sends two. The
// END_STREAM flag is now set on the last DATA frame while it is still the
// output's last (endLastData): 1487 -> 1478 bytes per response, and one
// frame less for the client to process (h2load runs on the same two
// cores); its CPU effect is below this machine's noise.
//
// What stands between this and 0.68x nginx's CPU: the kernel's share
// alone (43% of 21 µs, 9 µs, the same calls nginx makes) and crypto/tls's
// (15%, 3 µs) add up to 0.6x nginx's 20.5 µs, leaving about 1.6 µs for
// HTTP/2, the handler and Go's scheduler, which take 7-8 µs now. That
// gap is Go's runtime and TLS in user space (nginx's OpenSSL and its
// event loop), not work this engine can drop.
//
// Large bodies (the 1 MiB file) cost mostly TLS: one 16 KiB record per
// write system call, as nginx's SSL_write (49% of the CPU), AES-GCM
// (26%), and the file's reads, 16 KiB each (11%). A file copied with
// ReadFrom is queued up to maxQueued and sent by the stream itself when
// it is the connection's only one (no writer goroutine woken per 16 KiB:
// writeLoop 73% -> 4% of the samples, now drain inline), and DATA frames
// are appended to the output directly rather than through x/net's
// Framer, which copied each payload once more (memmove 13% -> 6%).
// crypto/tls writes each 16 KiB record with its own system call; an
// output of several records is gathered under the TLS connection
// (wire.BatchConn, installed by the server below every TLS connection)
// and written with one: 81 -> 17 write calls per 1 MiB response, about
// 12% less CPU per request (1063-1200 -> 920-1050 ms per 1000 requests,
// four runs each under shared load). Files are read 64 KiB at a time
// by a connection's only stream whose peer's windows take as much: 66 ->
// 18 read calls per 1 MiB response, 1073-1107 -> 893-910 ms of CPU per
// 1000. They are read straight into the output, behind the DATA frame
// headers reserved for them, with one readv per output (filesend.go):
// no 64 KiB buffer per download and no copy from it, and each frame plus
// its header is one whole TLS record (16 KiB), so 64 KiB of output is
// four records, not four and a 36-byte fifth. Measured (1mb-h2, arka
// alone, 64 connections, h2load -n 1280, alternated runs under shared
// load, load average 10-15): CPU per 1000 responses 718-843 ms against
// 820-1007 (five runs each; means 800 and 873); memmove 6% -> 2% of the
// profile; system calls per response unchanged (17 reads, 17 writes).
// Peak RSS: 32.6-35.7 MB against 38.9-41.1 in a first four runs each, but
// 34.9-36.6 against 34.1-41.8 in five later ones: in a fresh process the
// peak is set by the GC heap floor (16 MiB, one collection in the whole
// run, live heap 9-11 MB after it), not by the downloads. What the change
// removes for certain is 64 KiB of live heap per download in flight,
// which counts where the goal is twice the live heap (after other tests
// have filled the caches). What the profile leaves: the write system
// calls 37% (the kernel's copy into the socket), AES-GCM 37%, the file's
// readv 11%: crypto/tls's floor. A stream starved of window,
// or sharing its connection with others, copies through a 16 KiB buffer
// as before. Bounding the queued output to 64 KiB (maxQueued) keeps
// 64 such downloads at about 41 MB of RSS (52 MB peak under
// tests/bench's h2load run, before and after the batching and the 64 KiB
// reads).
//
// That peak was set by the first second of the run, not by what the
// connections hold: with 64 downloads 13-17 MB of heap is live (per
// connection two output buffers, about 72 KiB each, a 96 KiB TLS
// batch, a 32 KiB read buffer), and the collector's goal is twice that
// (cmd/arka's GC floor). But each output buffer grew by append's steps
// (16, 21, 40, 57, 72 KiB), 190 KiB of garbage per buffer, 23 MB in all,
// allocated while the heap goal was still the 16 MiB floor: the heap
// reached 28-31 MB. An output that outgrows its buffer is now given one
// that takes a full output (maxQueued plus a frame) at once
// (appendDataLocked): peak heap 22-29 MB, peak RSS 43-51 MB against
// 51-53 MB (1mb-h2, arka alone, 6 runs each alternated, shared host), CPU
// per request unchanged within the noise; beside nginx in one run the
// peak was still 56-58 MB.
package h2

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/arkaweb/arka/server/internal/limits"
	"golang.org/x/net/http2"
)

// Server serves HTTP/2 connections.
type Server struct {
	Handler http.Handler
	// MaxConcurrentStreams is advertised to clients (default 128, as nginx).
	MaxConcurrentStreams uint32
	// Limits are the client limits shared with the HTTP/1.1 engine
	// (server/internal/limits), as they apply here:
	//   - ReadHeader: the client preface and first SETTINGS; and a header
	//     block (HEADERS and its CONTINUATION frames) must end within it;
	//   - Idle: a connection with no stream whose handler runs is closed
	//     (GOAWAY NO_ERROR) this long after its last one ended, whatever
	//     else (PING, half-open streams) the client sends;
	//   - BodyRead and BodyMinRate: a handler's request body read fails
	//     with a timeout when the client sends nothing for BodyRead or
	//     falls below the minimum average rate;
	//   - Write: a stream that gets no flow-control window for this long is
	//     reset (RST_STREAM CANCEL), failing its handler's writes so that
	//     it lets go of what it holds; if the connection made no progress
	//     either, it is closed (GOAWAY ENHANCE_YOUR_CALM); a connection
	//     whose socket takes no bytes for this long is closed;
	//   - HeaderBytes: a request's header list; larger ones get 431.
	Limits limits.Limits
	// Logger receives panics of handlers and protocol errors worth seeing.
	Logger *slog.Logger
	// BaseContext is the parent of every connection's context.
	BaseContext context.Context
	// Rejected, when set, is called for each response the engine makes
	// itself without running Handler (431 for a header list over
	// MaxHeaderBytes), for the access log and counters. r carries the
	// client's address, TLS state and whatever pseudo-header fields were
	// decoded (method, path as RequestURI, authority as Host); n is the
	// content bytes sent.
	Rejected func(r *http.Request, status int, n int64)

	mu      sync.Mutex
	conns   map[*conn]struct{}
	closing atomic.Bool
	wg      sync.WaitGroup
	pool    workers

	// The watchdog of handlers running inline (inline.go).
	inlineSeen atomic.Bool // an inline run began since the last tick
	watchMu    sync.Mutex
	watching   bool // inlineWatch runs
}

const (
	defaultMaxStreams = 128
	// Receive windows we advertise: per stream and for the connection.
	streamWindow = 256 << 10
	connWindow   = 1 << 20
	// maxFrameRead is the largest frame payload we accept (SETTINGS_MAX_FRAME_SIZE).
	maxFrameRead = 16 << 10
)

func (s *Server) maxStreams() uint32 {
	if s.MaxConcurrentStreams > 0 {
		return s.MaxConcurrentStreams
	}
	return defaultMaxStreams
}

func (s *Server) maxHeaderBytes() uint32 { return uint32(s.Limits.MaxHeaderBytes()) }

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// ServeConn serves one connection (whose TLS handshake negotiated "h2")
// until it closes, in the calling goroutine.
func (s *Server) ServeConn(rw net.Conn, state *tls.ConnectionState) {
	c := newConn(s, rw, state)
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		rw.Close()
		return
	}
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	c.serve()
}

// Shutdown sends GOAWAY on every connection, lets open streams finish and
// waits for the connections to close until ctx is done, then closes them.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.pool.stop()
	s.mu.Lock()
	for c := range s.conns {
		c.goAwayGraceful()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

// CloseIdle ends up to n connections none of whose streams progresses
// (GOAWAY, then close), to make room under a connection limit: no handler
// runs, or every running one waits for request body bytes or for
// flow-control window the client does not send. With match set, only connections whose remote address (host:port)
// it accepts. It returns how many it closed.
func (s *Server) CloseIdle(n int, match func(remote string) bool) int {
	s.mu.Lock()
	var idle []*conn
	for c := range s.conns {
		if len(idle) >= n {
			break
		}
		if match != nil && !match(c.remote) {
			continue
		}
		if !c.progressing() {
			idle = append(idle, c)
		}
	}
	s.mu.Unlock()
	for _, c := range idle {
		c.goAway(http2.ErrCodeNo)
		c.closeSoon()
	}
	return len(idle)
}

// Close closes every connection at once.
func (s *Server) Close() error {
	s.closing.Store(true)
	s.pool.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.rwc.Close()
	}
	return nil
}

// workers is a pool of goroutines that run handlers. Reusing goroutines
// keeps their grown stacks, which a goroutine per stream would allocate and
// copy again for every request.
type workers struct {
	mu     sync.Mutex
	idle   []chan *stream
	closed bool // the server shut down: workers end after their handler
}

// stop ends the idle workers; busy ones end when their handler returns.
func (p *workers) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, ch := range p.idle {
		close(ch)
	}
	p.idle = nil
}

const maxIdleWorkers = 256

// run runs st's handler on an idle worker, or a new one. It takes the
// stream, not a func: a method value would be an allocation per request.
func (p *workers) run(st *stream) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		ch := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		ch <- st
		return
	}
	p.mu.Unlock()
	ch := make(chan *stream, 1)
	ch <- st
	go p.loop(ch)
}

func (p *workers) loop(ch chan *stream) {
	for st := range ch {
		st.run()
		p.mu.Lock()
		if p.closed || len(p.idle) >= maxIdleWorkers {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, ch)
		p.mu.Unlock()
	}
}
