package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/limits"
	"github.com/arkaweb/arka/server/internal/monotime"
	"github.com/arkaweb/arka/server/internal/wire"
)

// maxResponseHeaderBytes bounds an upstream's response head (status line and
// header fields, as read and as a header list counts them); a larger one
// is a bad response (502). The number is limits.UpstreamHeaderBytes.
const maxResponseHeaderBytes = limits.UpstreamHeaderBytes

// readBufSize is the read buffer of a connection reading a response
// head: the head with a body of up to about 30 KB arrives in one read and
// is relayed from it without a copy (relay). It is taken when the answer
// is there to read (after wire.Sender's wait), and given back when the
// exchange ends, or swapped for one of smallBufSize when the response
// goes on streaming (events, long polls, a large body, a tunnel), so
// neither an idle connection nor one waiting for its upstream holds one.
const (
	readBufSize  = 32 << 10
	smallBufSize = 4 << 10
)

var (
	readers      = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}
	smallReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, smallBufSize) }}
)

// attach gives c a read buffer for the response it is about to read.
func (c *conn) attach() {
	if c.br == nil {
		c.br = readers.Get().(*bufio.Reader)
		c.br.Reset(&c.lr)
	}
}

// shrink swaps c's read buffer for a small one when it holds no bytes.
func (c *conn) shrink() {
	if c.br != nil && c.br.Size() > smallBufSize && c.br.Buffered() == 0 {
		putReader(c.br)
		c.br = smallReaders.Get().(*bufio.Reader)
		c.br.Reset(&c.lr)
		c.resp.br = c.br
	}
}

// detach returns c's read buffer (its bytes are dropped) to the pool.
func (c *conn) detach() {
	if c.br != nil {
		putReader(c.br)
		c.br = nil
	}
}

func putReader(br *bufio.Reader) {
	br.Reset(nil)
	if br.Size() == smallBufSize {
		smallReaders.Put(br)
	} else {
		readers.Put(br)
	}
}

// close closes c and returns its read buffer.
func (c *conn) close() {
	c.nc.Close()
	c.detach()
}

// upstream is one configured server: its address, its pool of kept-alive
// connections and its counters.
type upstream struct {
	name    string // as written in the site file, for logs and stats
	network string // "tcp" or "unix"
	address string
	tls     *tls.Config // https:// upstreams; nil for plain ones
	h       *Handler

	mu   sync.Mutex
	idle []*conn // LIFO: the most recently used connection is reused first

	active    atomic.Int64
	requests  atomic.Uint64
	failures  atomic.Uint64
	dials     atomic.Uint64
	downUntil atomic.Int64 // passive health: monotime.Now() until which it is skipped
	sick      atomic.Bool  // active health: the last check failed
	// head is the text of the last response head read from the upstream
	// (response.text).
	head atomic.Pointer[string]
	// memo is the last response head read from the upstream, parsed
	// (headMemo).
	memo atomic.Pointer[headMemo]
}

// UpstreamStats are one upstream's figures for the status page.
type UpstreamStats struct {
	Address  string // as configured: "127.0.0.1:8080", "unix:/run/app.sock"
	Healthy  bool   // not in a failure cool-down and passing its health check
	Active   int64  // requests in flight
	Idle     int    // kept-alive connections waiting in the pool
	Requests uint64 // requests sent (retries count again)
	Failures uint64 // connect errors, timeouts, resets and bad responses
	Dials    uint64 // new connections made
}

func newUpstream(h *Handler, a config.Upstream, base *tls.Config) *upstream {
	u := &upstream{name: a.Name, network: a.Network, address: a.Address, h: h}
	if a.TLS {
		u.tls = base.Clone()
		if u.tls.ServerName == "" {
			host, _, _ := net.SplitHostPort(a.Address)
			u.tls.ServerName = host
		}
		u.tls.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	}
	return u
}

// tlsConfig is the base TLS configuration of a route's https:// upstreams
// (config.Proxy's tls_* keys). The tls_ca certificates were read by
// config.CheckEnvironment (cfg.TLSRoots).
func tlsConfig(cfg *config.Proxy) (*tls.Config, error) {
	if cfg.TLSCA != "" && cfg.TLSRoots == nil {
		return nil, fmt.Errorf("tls_ca %s was not read (config.CheckEnvironment reads it)", cfg.TLSCA)
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{"http/1.1"},
		ServerName:         cfg.TLSServerName,
		InsecureSkipVerify: cfg.TLSInsecureSkipVerify,
		RootCAs:            cfg.TLSRoots,
	}, nil
}

// scheme is the URL scheme the upstream is spoken to with.
func (u *upstream) scheme() string {
	if u.tls != nil {
		return "https"
	}
	return "http"
}

// available reports whether the balancer may pick u now.
func (u *upstream) available(now int64) bool {
	return !u.sick.Load() && u.downUntil.Load() <= now
}

// markDown starts a cool-down after a refused or timed-out connect.
func (u *upstream) markDown() {
	u.downUntil.Store(monotime.Now() + int64(u.h.failTimeout))
}

func (u *upstream) stats() UpstreamStats {
	u.mu.Lock()
	idle := len(u.idle)
	u.mu.Unlock()
	return UpstreamStats{
		Address:  u.name,
		Healthy:  u.available(monotime.Now()),
		Active:   u.active.Load(),
		Idle:     idle,
		Requests: u.requests.Load(),
		Failures: u.failures.Load(),
		Dials:    u.dials.Load(),
	}
}

// conn is one HTTP/1.1 connection to an upstream with its buffers.
type conn struct {
	nc        net.Conn // the connection spoken on: raw, or TLS over raw
	raw       net.Conn // the TCP or unix connection, for liveness checks
	peek      peek     // the liveness check (alive), bound to raw
	lr        limitReader
	br        *bufio.Reader
	bw        *bufio.Writer
	up        *upstream
	idleSince int64    // monotime.Now() when it was pooled
	reused    bool     // served a request before
	abort     func()   // unblocks every read and write: the client left
	resp      response // the response being read, its storage reused
	// readDeadline: the response-header timeout may still be armed (left
	// after a response that was whole in the buffer).
	readDeadline bool
	// killed: every read and write is made to fail (kill); the connection
	// is not used again.
	killed atomic.Bool
	rdl    int64 // the response-header deadline send set last (monotime)
	// headBy is when the response-header timeout of the request send
	// sent ends (monotime; the deadline in force may be earlier, see
	// send); zero for a request whose body is streamed (writeBody sets
	// the deadline exactly).
	headBy int64
	// clock is the monotime reading get took when it handed the
	// connection out, for send to use in place of another (zero: none,
	// a connection just dialed).
	clock int64
	// send flushes bw (a request without a body to stream) and waits for
	// the answer without a failing read first (wire.Sender).
	send wire.Sender
}

// limitReader bounds the bytes read while a response head is parsed, and
// notes whether the last read filled its buffer (then more bytes are
// probably waiting in the socket already).
type limitReader struct {
	r       io.Reader
	n       int64
	limited bool
	full    bool
	body    bool  // a response body is being read (relay)
	c       *conn // the connection read
}

var errHeaderTooLarge = limits.ErrUpstreamHeader

func (l *limitReader) Read(p []byte) (int, error) {
	if !l.limited {
		n, err := l.r.Read(p)
		if n == 0 && err != nil && l.body && l.c.readDeadline && os.IsTimeout(err) && !l.c.killed.Load() {
			// The response-header deadline, left armed, passed while
			// the body was read: bodies have no deadline. A kill (the
			// client left, the exchange failed) after the check is
			// seen after the clear, and wins.
			l.c.nc.SetReadDeadline(time.Time{})
			l.c.readDeadline = false
			if l.c.killed.Load() {
				l.c.nc.SetDeadline(aLongTimeAgo)
			}
			n, err = l.r.Read(p)
		}
		l.full = n == len(p) && n > 0
		return n, err
	}
	if l.n <= 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	if n == 0 && err != nil && l.c.headEarly(err) {
		n, err = l.r.Read(p)
	}
	l.n -= int64(n)
	l.full = n == len(p) && n > 0
	return n, err
}

// headEarly reports, after a read of the response head failed with err,
// whether that was the deadline send kept firing before the
// response-header timeout ended, and then sets the deadline to that end.
func (c *conn) headEarly(err error) bool {
	if c.headBy == 0 || !os.IsTimeout(err) || c.killed.Load() {
		return false
	}
	left := time.Duration(c.headBy - monotime.Now())
	if left <= 0 {
		return false
	}
	c.rdl = c.headBy
	c.nc.SetReadDeadline(time.Now().Add(left))
	if c.killed.Load() {
		// A kill after the check is seen after the deadline's change,
		// and wins.
		c.nc.SetDeadline(aLongTimeAgo)
		return false
	}
	return true
}

// kill makes every read and write on c fail at once, for good.
func (c *conn) kill() {
	c.killed.Store(true)
	c.nc.SetDeadline(aLongTimeAgo)
}

// get returns a pooled connection that still looks open, or nil. Each is
// peeked at first (alive), however briefly it sat idle: one system call
// per reused connection, the price of never handing a client bytes the
// upstream sent after the last response (an unsolicited response, a
// desynchronised backend: someone else's answer and cookies), and of
// finding a connection the upstream closed before a request that cannot
// be replayed is written to it. nginx watches its idle upstream
// connections with epoll and closes one that turns readable; Go's
// net/http keeps a reader goroutine on each.
func (u *upstream) get() *conn {
	now := monotime.Now()
	u.mu.Lock()
	for n := len(u.idle); n > 0; n = len(u.idle) {
		c := u.idle[n-1]
		u.idle[n-1] = nil
		u.idle = u.idle[:n-1]
		u.mu.Unlock()
		if time.Duration(now-c.idleSince) < u.h.idleTimeout && c.alive() {
			c.reused, c.clock = true, now
			return c
		}
		c.nc.Close()
		u.mu.Lock()
	}
	u.mu.Unlock()
	return nil
}

// put returns a connection whose exchange completed cleanly to the pool,
// or closes it when the pool is full or the handler closed.
func (u *upstream) put(c *conn) {
	if c.br != nil && c.br.Buffered() > 0 {
		// Bytes after the end of a response: the upstream is confused.
		c.close()
		return
	}
	c.detach()
	c.idleSince = monotime.Now()
	u.mu.Lock()
	if len(u.idle) < u.h.keepalive && !u.h.closed.Load() {
		u.idle = append(u.idle, c)
		u.mu.Unlock()
		return
	}
	u.mu.Unlock()
	c.nc.Close()
}

// dial opens a new connection, bounded by the connect timeout and ctx.
func (u *upstream) dial(ctx context.Context) (*conn, error) {
	u.dials.Add(1)
	raw, err := u.h.dialer.DialContext(ctx, u.network, u.address)
	if err != nil {
		return nil, err
	}
	raw = wire.Raw(raw) // reads and writes without the runtime's syscall bookkeeping
	nc := raw
	if u.tls != nil {
		tc := tls.Client(raw, u.tls)
		hctx, cancel := context.WithTimeout(ctx, u.h.dialer.Timeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			raw.Close()
			return nil, &tlsError{err}
		}
		nc = tc
	}
	return u.newConn(nc, raw), nil
}

// newConn makes the conn of a connection just opened: nc is spoken on, raw
// is the socket under it (the same for plain connections).
func (u *upstream) newConn(nc, raw net.Conn) *conn {
	c := &conn{nc: nc, raw: raw, up: u}
	c.initAlive()
	c.lr.r = nc
	c.bw = bufio.NewWriterSize(nc, 4096)
	c.lr.c = c
	c.abort = c.kill
	c.resp.last, c.resp.memo = &u.head, &u.memo
	c.send.Init(raw, c.bw.Flush)
	return c
}

// tlsError is a failed TLS handshake with an upstream (an untrusted or
// expired certificate, a wrong name, no common version).
type tlsError struct{ err error }

func (e *tlsError) Error() string { return "TLS handshake: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// prune closes pooled connections idle for longer than the idle timeout.
func (u *upstream) prune(now int64) {
	u.mu.Lock()
	keep := u.idle[:0]
	var stale []*conn
	for _, c := range u.idle {
		if time.Duration(now-c.idleSince) >= u.h.idleTimeout {
			stale = append(stale, c)
		} else {
			keep = append(keep, c)
		}
	}
	for i := len(keep); i < len(u.idle); i++ {
		u.idle[i] = nil
	}
	u.idle = keep
	u.mu.Unlock()
	for _, c := range stale {
		c.nc.Close()
	}
}

// closeIdle closes every pooled connection.
func (u *upstream) closeIdle() {
	u.mu.Lock()
	idle := u.idle
	u.idle = nil
	u.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// healthLoop runs the active health check (GET path every interval) until
// ctx ends. A 2xx or 3xx answer within the timeout is healthy; anything
// else takes the upstream out of rotation until a check passes again.
func (u *upstream) healthLoop(ctx context.Context, hc *healthCheck) {
	t := time.NewTicker(hc.interval)
	defer t.Stop()
	for {
		err := u.probe(ctx, hc)
		if ctx.Err() != nil {
			return
		}
		was := u.sick.Load()
		u.sick.Store(err != nil)
		switch {
		case err != nil && !was:
			u.h.log.Warn("proxy: upstream failed its health check", u.h.logAttrs(u, "cause", err.Error())...)
		case err == nil && was:
			u.h.log.Info("proxy: upstream passed its health check again", u.h.logAttrs(u)...)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type healthCheck struct {
	path     string
	host     string
	interval time.Duration
	timeout  time.Duration
}

var errHealthStatus = errors.New("health check answered with a status other than 2xx or 3xx")

func (u *upstream) probe(ctx context.Context, hc *healthCheck) error {
	ctx, cancel := context.WithTimeout(ctx, hc.timeout)
	defer cancel()
	nc, err := u.h.dialer.DialContext(ctx, u.network, u.address)
	if err != nil {
		return err
	}
	defer nc.Close()
	if u.tls != nil {
		tc := tls.Client(nc, u.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return &tlsError{err}
		}
		nc = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	bw := bufio.NewWriter(nc)
	bw.WriteString("GET " + hc.path + " HTTP/1.1\r\nHost: " + hc.host + "\r\nUser-Agent: arka-health-check\r\nConnection: close\r\n\r\n")
	if err := bw.Flush(); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), &http.Request{Method: http.MethodGet})
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 399 {
		return errHealthStatus
	}
	return nil
}
