package fastcgi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/internal/fcgi"
	"github.com/arkaweb/arka/server/internal/monotime"
)

// The pool keeps at most max connections to one FastCGI server and one
// FIFO queue of requests waiting for one.
//
// php-fpm gives every open connection a worker of its own for as long as
// the connection is open, and serves one request per connection at a time.
// So a connection kept idle while a request waits holds a worker that
// request could use; the pool never does that: a connection that comes
// back goes straight to the oldest waiting request, and only when nobody
// waits is it kept idle. Requests are served strictly in the order they
// arrived, in every path: a newcomer takes an idle connection only when
// nobody is queued, and otherwise waits in the queue. A new connection is
// opened (and probed) for the queue, not for one request: when it is
// ready it goes to whoever is then first in line, and when its probe fails
// the requests stay where they were in the queue. When a connection
// breaks, its slot is used to open another one for the queue.
//
// A connection php-fpm has no worker for waits in its listen backlog, and
// a request sent on it waits until some other connection closes: with
// kept connections, possibly forever. That is the stall of a web server
// keeping more connections than php-fpm has workers (pm.max_children
// below max_conns, or several clients sharing one php-fpm). So every new
// connection is first probed with a request for a script that does not
// exist, which any worker answers in well under a millisecond; a probe
// not answered within probeTimeout means no worker is free for it, and the
// pool stops growing at the connections it has (for capPeriod), logging
// why. Connections idle for idleTimeout are closed, so that workers held
// for nothing go back to php-fpm.

const (
	defaultProbeTimeout = 2 * time.Second  // php-fpm's dynamic pm spawns workers once a second
	capPeriod           = time.Minute      // how long a learnt capacity holds
	defaultIdleTimeout  = 10 * time.Second // as php-fpm's pm.process_idle_timeout
)

var (
	errQueueFull    = errors.New("queue full")
	errQueueTimeout = errors.New("timed out in queue")
	errClosing      = errors.New("handler closed")
)

// grant is what a waiter receives: a connection or an error.
type grant struct {
	c   *conn
	err error
}

type waiter struct {
	ch         chan grant // capacity 1: a grant never blocks the granter
	prev, next *waiter
	queued     bool
	count      *int // the count in pool.queued of the handler it waits for (each has its own queue.size)
	r          *http.Request
	deadline   int64 // monotime.Now() at which queue.timeout ends the wait
}

// dialer opens a connection (connect_timeout applied).
type dialer func(ctx context.Context) (*conn, error)

type pool struct {
	address string // for messages

	mu       sync.Mutex
	dial     dialer
	warn     func(msg string, args ...any)
	max      int
	queueMax int
	open     int // connections open or being opened (slots in use)
	busy     int // slots serving a request
	dialing  int // slots opening a connection for the queue (see grow)
	idle     []*conn
	head     *waiter
	tail     *waiter
	waiting  int
	closing  bool
	all      map[*conn]struct{} // every connection that passed its probe
	drained  chan struct{}      // closed when closing and open == 0
	capN     int                // learnt capacity, while capUntil is ahead
	capUntil time.Time
	sweeper  *time.Timer // closes idle connections; nil when none are idle
	// expiry ends the waits that passed their queue.timeout (see expire):
	// one timer for the queue, armed for expiryAt (monotime.Now() units,
	// 0 when not armed), rather than one per waiter.
	expiry   *time.Timer
	expiryAt int64

	refs  int            // handlers using the pool (guarded by Pools.mu)
	users map[any][2]int // each handler's max_conns and queue.size
	// queued counts each handler's requests in the shared FIFO, so that a
	// route's own queue.size holds even when routes share the pool. Each
	// waiter keeps its handler's counter (waiter.count): one map look-up
	// per queued request, in acquire.
	queued map[any]*int

	probeTimeout, idleTimeout time.Duration // the defaults; tests shorten them

	// known is php-fpm's pm.max_children when Arka runs that php-fpm
	// itself (Options.PHPMaxConns): while max is within it, connections
	// are not probed, and the pool never caps itself.
	known int

	// Time requests spent in the queue: how many waited, in total and the
	// longest (nanoseconds), for the status page.
	waits, waitNanos, waitMax atomic.Int64

	waiters sync.Pool

	rejected, timedOut, capped atomic.Uint64
	idleWhileWaiting           atomic.Uint64 // invariant breaches; tests check it stays 0

	// testHook, when set, is called with the pool locked when a request
	// arrives ("arrive") and when it gets its connection ("grant").
	testHook func(event string, r *http.Request)
}

func newPool(address string) *pool {
	p := &pool{address: address, all: make(map[*conn]struct{}), drained: make(chan struct{}), warn: func(string, ...any) {},
		probeTimeout: defaultProbeTimeout, idleTimeout: defaultIdleTimeout}
	p.waiters.New = func() any { return &waiter{ch: make(chan grant, 1)} }
	return p
}

// configure registers a handler's limits and how it dials. A pool shared
// by several handlers allows the largest max_conns and queue.size among
// them (the probe finds out if php-fpm has fewer workers), and dials as
// the latest handler says.
// known, when positive, is the pm.max_children of a php-fpm Arka runs
// itself at this address.
func (p *pool) configure(user any, max, queueMax, known int, dial dialer, warn func(string, ...any)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.users == nil {
		p.users = map[any][2]int{}
	}
	p.users[user] = [2]int{max, queueMax}
	p.dial, p.warn = dial, warn
	if known > 0 {
		p.known = known
	}
	p.recompute()
}

// trusted reports (p.mu held) whether php-fpm's capacity is known to
// cover max: then new connections need no probe.
func (p *pool) trusted() bool { return p.known > 0 && p.max <= p.known }

// unconfigure removes a handler's limits.
func (p *pool) unconfigure(user any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.users, user)
	delete(p.queued, user) // waiters still queued keep their counter
	if len(p.users) > 0 {
		p.recompute()
	}
}

func (p *pool) recompute() {
	p.max, p.queueMax = 0, 0
	for _, l := range p.users {
		p.max, p.queueMax = max(p.max, l[0]), max(p.queueMax, l[1])
	}
}

// limit is the number of connections the pool may have now: max, or less
// while a learnt capacity holds.
func (p *pool) limit() int {
	if p.capN > 0 && time.Now().Before(p.capUntil) {
		return min(p.max, p.capN)
	}
	return p.max
}

// acquire returns a connection for r: an idle one, a new one, or one
// handed over after waiting in the queue at most queueTimeout. Errors:
// errQueueFull, errQueueTimeout, errClosing, the context's error, or a
// dial error.
func (p *pool) acquire(ctx context.Context, r *http.Request, queueTimeout time.Duration, user any, queueMax int) (*conn, error) {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return nil, errClosing
	}
	p.hook("arrive", r)
	if n := len(p.idle); n > 0 && p.head == nil {
		c := p.idle[n-1] // the most recently used: its worker is warm
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.busy++
		p.hook("grant", r)
		p.mu.Unlock()
		return c, nil
	}
	grow := p.open < p.limit() && p.dialing <= p.waiting
	count := p.queued[user]
	if count == nil {
		if p.queued == nil {
			p.queued = map[any]*int{}
		}
		count = new(int)
		p.queued[user] = count
	}
	if !grow && *count >= queueMax {
		p.mu.Unlock()
		p.rejected.Add(1)
		return nil, errQueueFull
	}
	w := p.waiters.Get().(*waiter)
	w.r, w.count = r, count
	w.deadline = monotime.Now() + int64(queueTimeout)
	p.push(w)
	p.armExpiry(w.deadline)
	if grow {
		p.startGrow()
	}
	p.mu.Unlock()
	return p.wait(ctx, w, queueTimeout)
}

// startGrow (p.mu held) takes a slot and opens a connection on it for the
// queue.
func (p *pool) startGrow() {
	p.open++
	p.dialing++
	go p.grow()
}

// grow opens and probes a connection on a slot taken by startGrow, off
// any request's path, and hands it to the oldest waiter then (or keeps it
// idle). A dial that fails frees the slot; when no connection is open
// (other than ones being opened) the oldest waiter gets the error (php-fpm is down:
// 502 at once, not after queue.timeout), and the next waiter's turn opens
// another. A probe that times out caps the pool (see probeSlot): the
// waiters keep their places and are served by the connections that have
// workers.
func (p *pool) grow() {
	c, err := p.openConn()
	p.mu.Lock()
	p.dialing--
	if c != nil {
		p.busy++
		p.mu.Unlock()
		p.release(c, true)
		return
	}
	p.open--
	if err == nil { // capped: the slot went to lateProbe's wait
		p.checkDrained()
		p.mu.Unlock()
		return
	}
	var w *waiter
	if p.open == p.dialing && p.head != nil { // no connection to wait for
		w = p.head
		p.unlink(w)
		p.hook("fail", w.r)
		w.ch <- grant{err: err}
		if p.head != nil && p.open < p.limit() && p.dialing < p.waiting {
			p.startGrow()
		}
	}
	warn := p.warn
	p.checkDrained()
	p.mu.Unlock()
	if w == nil {
		warn("fastcgi: cannot open another connection: " + err.Error())
	}
}

// wait waits in the queue for a grant: a connection, or an error from
// the pool (errQueueTimeout from expire, errClosing, a dial error).
func (p *pool) wait(ctx context.Context, w *waiter, queueTimeout time.Duration) (*conn, error) {
	start := w.deadline - int64(queueTimeout)
	defer func() {
		d := monotime.Now() - start
		p.waits.Add(1)
		p.waitNanos.Add(d)
		for m := p.waitMax.Load(); d > m && !p.waitMax.CompareAndSwap(m, d); m = p.waitMax.Load() {
		}
	}()
	var g grant
	select {
	case g = <-w.ch:
	case <-ctx.Done():
		if p.leave(w) {
			p.recycle(w)
			return nil, ctx.Err()
		}
		g = <-w.ch
		if g.err == nil {
			// Granted while the client left: pass the turn on.
			p.release(g.c, true)
			g = grant{err: ctx.Err()}
		}
	}
	p.recycle(w)
	return g.c, g.err
}

// openConn dials and probes a connection for the queue (see grow). It
// returns the connection; or nil and the error; or nil, nil when the
// probe timed out while the pool's own connections held workers: then the
// pool has capped itself, this slot is given up, and lateProbe keeps
// waiting for the answer.
func (p *pool) openConn() (*conn, error) {
	p.mu.Lock()
	dial := p.dial
	p.mu.Unlock()
	ctx := context.Background() // the dialer applies connect_timeout
	c, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	wait := p.probeTimeout
	if p.trusted() {
		wait = spawnWait
	}
	p.mu.Unlock()
	err = p.spawnProbe(ctx, c, wait)
	if isTimeout(err) {
		p.mu.Lock()
		served := len(p.all)
		if served == 0 {
			// Nothing of ours holds a worker: php-fpm is busy with
			// others. Wait on this connection; nothing better exists.
			p.mu.Unlock()
			err = p.probe(c, c.timeout)
		} else {
			// Our own connections hold every worker php-fpm gives us.
			news := p.limit() != served
			p.capN, p.capUntil = served, time.Now().Add(capPeriod)
			warn, max := p.warn, p.max
			p.mu.Unlock()
			// php-fpm may still be spawning a worker (pm = ondemand or
			// dynamic spawn at most once a second): keep waiting for the
			// probe's answer; if it comes, the connection joins the pool
			// and the cap is lifted, so a pool never stays shrunk because
			// a spawn was slow.
			go p.lateProbe(c)
			p.capped.Add(1)
			if news {
				warn(fmt.Sprintf("fastcgi: a new connection got no php-fpm worker within %v while %d connections held theirs: "+
					"pm.max_children (or what other clients leave of it) is below max_conns %d; using %d connections for %v",
					p.probeTimeout, served, max, served, capPeriod))
			}
			return nil, nil
		}
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("new connection: %w", err)
	}
	p.mu.Lock()
	p.all[c] = struct{}{}
	if p.capN > 0 && len(p.all) > p.capN {
		p.capN = len(p.all) // a late worker: the capacity is larger
	}
	p.mu.Unlock()
	return c, nil
}

// spawnProbe probes a new connection, waiting at most wait for the
// answer. The question is often not whether php-fpm has a worker for it
// but when php-fpm starts one. With pm = ondemand, php-fpm forks a worker
// when its listening socket signals a new connection (edge-triggered, so
// connections arriving together count once: after a php-fpm restart the
// pool's new connections would get one worker between them) and no worker
// looks idle (one between two requests on a kept connection does). So
// while the probe is unanswered, another connection is opened and closed
// every kickEvery, a new signal for php-fpm to look again. For Arka's own
// php-fpm, whose pm.max_children is known to cover max_conns, wait is
// spawnWait and the pool never caps itself before that (php-fpm is then
// not what Arka thinks); for another php-fpm it is the probe timeout.
func (p *pool) spawnProbe(ctx context.Context, c *conn, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := p.probe(c, min(kickEvery, max(time.Until(deadline), time.Millisecond)))
		if !isTimeout(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		p.mu.Lock()
		dial := p.dial
		p.mu.Unlock()
		if k, err := dial(ctx); err == nil {
			k.close()
		}
	}
}

const (
	kickEvery = 50 * time.Millisecond
	spawnWait = 5 * time.Second
)

// lateProbe waits for the answer to a probe that timed out (up to the
// connection's read timeout). Answered, the connection has a worker: the
// learnt capacity grows to the connections that have one (the cap goes
// when that reaches max) and the connection goes to the oldest waiter, or
// idle; otherwise it is closed.
func (p *pool) lateProbe(c *conn) {
	if err := p.probe(c, c.timeout); err != nil {
		c.close()
		return
	}
	p.mu.Lock()
	if p.closing || p.open >= p.max {
		p.mu.Unlock()
		c.close()
		return
	}
	p.open++
	p.busy++
	p.all[c] = struct{}{}
	if p.capN > 0 && len(p.all) > p.capN {
		p.capN = len(p.all)
	}
	if p.capN >= p.max {
		p.capN = 0
	}
	p.mu.Unlock()
	p.release(c, true)
}

// forget removes c from the connections that passed their probe (p.mu
// held). When none is left, php-fpm went away or restarted: what the pool
// learnt of its capacity no longer holds, and the next connections find
// out again (full capacity returns at once).
func (p *pool) forget(c *conn) {
	delete(p.all, c)
	if len(p.all) == 0 {
		p.capN = 0
	}
}

// probe sends a request for a script that does not exist and reads the
// answer (php-fpm: 404 "Primary script unknown", in about half a
// millisecond), proving that a worker has taken the connection. It waits
// at most first for the answer to begin; after a timeout it can be called
// again to wait longer.
func (p *pool) probe(c *conn, first time.Duration) error {
	if c.probed {
		return nil
	}
	var pw fcgi.ParamsWriter
	var buf [128]byte
	pw.Begin(fcgi.AppendBeginRequest(buf[:0], 1, fcgi.RoleResponder, fcgi.FlagKeepConn), 1)
	pw.Add("SCRIPT_FILENAME", "/nonexistent/arka-fastcgi-probe")
	pw.Add("REQUEST_METHOD", "GET")
	req := fcgi.AppendHeader(pw.End(), fcgi.TypeStdin, 1, 0, 0)
	if !c.probeSent {
		c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := c.nc.Write(req); err != nil {
			return err
		}
		c.probeSent = true
	}
	c.nc.SetReadDeadline(time.Now().Add(first))
	if _, err := c.br.Peek(1); err != nil { // Peek consumes nothing on timeout
		return err
	}
	c.nc.SetReadDeadline(time.Now().Add(c.timeout))
	for {
		h, err := c.rd.Next()
		if err != nil {
			return err
		}
		if h.Type == fcgi.TypeEndRequest {
			if err := c.rd.Skip(); err != nil {
				return err
			}
			// The probe was a request: a worker at pm.max_requests gives
			// the connection up after it, so the next request on it is
			// that of a kept connection (see exchange.run).
			c.probed = true
			c.reused = true
			return nil
		}
	}
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// redial replaces a connection its worker gave up (pm.max_requests, a
// restart) on the same slot, for a request that has not run yet. php-fpm
// puts another worker in the place of the one that left, so the new
// connection is not probed: a probe would spend the one request of a
// worker with pm.max_requests = 1, and that worker would then give up the
// new connection too.
func (p *pool) redial(ctx context.Context, old *conn) (*conn, error) {
	p.mu.Lock()
	p.forget(old)
	dial := p.dial
	p.mu.Unlock()
	old.close()
	c, err := dial(ctx)
	if err != nil {
		p.release(nil, false)
		return nil, err
	}
	c.probed = true
	p.mu.Lock()
	p.all[c] = struct{}{}
	p.mu.Unlock()
	go p.kickUntilAnswered(c)
	return c, nil
}

// kickUntilAnswered opens and closes another connection every kickEvery
// until php-fpm sends anything on c (or spawnWait passed, or c closed).
// A redial follows a restart or a worker's exit; with pm = ondemand the
// replacement worker is forked only on a new-connection signal, and the
// connections redialed together after a restart share one signal (see
// spawnProbe): without kicks, all but one would wait in php-fpm's backlog
// until some other connection arrives. The wait is for the request's own
// answer, not a probe, so no request of a pm.max_requests worker is spent.
func (p *pool) kickUntilAnswered(c *conn) {
	deadline := time.Now().Add(spawnWait)
	t := time.NewTicker(kickEvery)
	defer t.Stop()
	for range t.C {
		if c.answered.Load() || time.Now().After(deadline) {
			return
		}
		p.mu.Lock()
		_, open := p.all[c]
		dial := p.dial
		p.mu.Unlock()
		if !open {
			return
		}
		if k, err := dial(context.Background()); err == nil {
			k.close()
		}
	}
}

// release returns a slot after a request. With reusable set, c is clean
// (its last request ended with END_REQUEST and nothing else is pending on
// it) and goes to the oldest waiter, or to the idle list. Otherwise c (if
// any) is closed and, while requests wait and the pool may still have
// that many connections, the slot opens a new one for the queue.
func (p *pool) release(c *conn, reusable bool) {
	var toClose *conn
	p.mu.Lock()
	p.busy--
	if c != nil && (!reusable || p.open > p.limit()) {
		p.forget(c)
		toClose, c = c, nil
	}
	if w := p.head; w != nil && c != nil {
		p.unlink(w)
		p.busy++
		p.hook("grant", w.r)
		w.ch <- grant{c: c}
		p.mu.Unlock()
		return
	}
	switch {
	case c == nil && p.head != nil && p.open <= p.limit() && p.dialing < p.waiting:
		p.dialing++ // the slot stays taken: see startGrow
		go p.grow()
	case c == nil:
		p.open--
	case p.closing:
		delete(p.all, c)
		toClose = c
		p.open--
	default:
		c.idleSince = time.Now()
		p.idle = append(p.idle, c)
		if p.sweeper == nil {
			p.sweeper = time.AfterFunc(p.idleTimeout, p.sweep)
		}
	}
	p.checkDrained()
	p.mu.Unlock()
	if toClose != nil {
		toClose.close()
	}
}

// sweep closes connections idle for idleTimeout, oldest first (the idle
// list is used from its end, so its start holds the longest idle).
func (p *pool) sweep() {
	var old []*conn
	p.mu.Lock()
	now := time.Now()
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].idleSince) >= p.idleTimeout {
		n++
	}
	old = append(old, p.idle[:n]...)
	for _, c := range old {
		delete(p.all, c)
	}
	p.idle = append(p.idle[:0], p.idle[n:]...)
	p.open -= n
	if len(p.idle) > 0 {
		p.sweeper = time.AfterFunc(p.idleTimeout-now.Sub(p.idle[0].idleSince), p.sweep)
	} else {
		p.sweeper = nil
	}
	p.checkDrained()
	p.mu.Unlock()
	for _, c := range old {
		c.close()
	}
}

// armExpiry (p.mu held) has expire run by at, a waiter's deadline.
func (p *pool) armExpiry(at int64) {
	if p.expiryAt != 0 && p.expiryAt <= at {
		return // armed for an earlier deadline: expire re-arms for the rest
	}
	p.expiryAt = at
	d := time.Duration(at - monotime.Now())
	if p.expiry == nil {
		p.expiry = time.AfterFunc(d, p.expire)
	} else {
		p.expiry.Reset(d)
	}
}

// expire ends the waits whose queue.timeout has passed (errQueueTimeout)
// and arms the timer for the earliest deadline left. Waiters of one
// handler queue in deadline order, so the timer is set once per wait only
// when the queue was empty or a handler with a shorter queue.timeout
// joins; a firing that finds nothing due costs one walk of the queue.
func (p *pool) expire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expiryAt = 0
	now := monotime.Now()
	var next int64
	for w := p.head; w != nil; {
		nw := w.next
		if w.deadline <= now {
			p.unlink(w)
			p.timedOut.Add(1)
			w.ch <- grant{err: errQueueTimeout}
		} else if next == 0 || w.deadline < next {
			next = w.deadline
		}
		w = nw
	}
	if next != 0 {
		p.armExpiry(next)
	}
}

// leave takes w out of the queue; false means it was granted meanwhile.
func (p *pool) leave(w *waiter) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !w.queued {
		return false
	}
	p.unlink(w)
	return true
}

func (p *pool) recycle(w *waiter) {
	w.r, w.count = nil, nil
	p.waiters.Put(w)
}

func (p *pool) push(w *waiter) {
	w.queued = true
	w.prev, w.next = p.tail, nil
	if p.tail != nil {
		p.tail.next = w
	} else {
		p.head = w
	}
	p.tail = w
	p.waiting++
	*w.count++
}

func (p *pool) pop() *waiter {
	w := p.head
	if w != nil {
		p.unlink(w)
	}
	return w
}

func (p *pool) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		p.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		p.tail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
	p.waiting--
	*w.count--
}

func (p *pool) hook(event string, r *http.Request) {
	if len(p.idle) > 0 && p.head != nil {
		p.idleWhileWaiting.Add(1)
	}
	if p.testHook != nil {
		p.testHook(event, r)
	}
}

func (p *pool) checkDrained() {
	if p.closing && p.open == 0 {
		select {
		case <-p.drained:
		default:
			close(p.drained)
		}
	}
}

// shutdown stops taking requests, closes idle connections, and waits
// until queued and in-flight requests are done and every connection is
// closed. When ctx ends first, queued requests fail and the connections
// still in use are closed under their requests.
func (p *pool) shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	idle := p.idle
	p.idle = nil
	p.open -= len(idle)
	for _, c := range idle {
		delete(p.all, c)
	}
	if p.sweeper != nil {
		p.sweeper.Stop()
		p.sweeper = nil
	}
	p.checkDrained()
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
	select {
	case <-p.drained:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	for w := p.pop(); w != nil; w = p.pop() {
		w.ch <- grant{err: errClosing}
	}
	if p.expiry != nil {
		p.expiry.Stop()
		p.expiryAt = 0
	}
	var busy []*conn
	for c := range p.all {
		busy = append(busy, c)
	}
	p.mu.Unlock()
	for _, c := range busy {
		c.close()
	}
	return ctx.Err()
}

// poolStats is a consistent snapshot of the pool's gauges.
type poolStats struct {
	max, queueMax, limit, open, busy, idle, queued int
}

// queueWait reports how many requests waited in the queue, their total
// and their longest wait.
func (p *pool) queueWait() (n int64, total, longest time.Duration) {
	return p.waits.Load(), time.Duration(p.waitNanos.Load()), time.Duration(p.waitMax.Load())
}

func (p *pool) stats() poolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return poolStats{max: p.max, queueMax: p.queueMax, limit: p.limit(), open: p.open, busy: p.busy, idle: len(p.idle), queued: p.waiting}
}

// Pools shares connection pools between the handlers of every route, site
// and configuration that talk to the same FastCGI server: php-fpm's
// workers are one budget, so the connections to it are one pool (two
// pools would each keep connections idle that the other's requests wait
// behind), and kept connections survive a reload. The server makes one
// Pools and passes it to every handler in Options. The zero value is
// ready to use.
type Pools struct {
	mu sync.Mutex
	m  map[string]*pool
}

// get returns the pool for address, creating it, and takes a reference.
func (ps *Pools) get(address string) *pool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[string]*pool{}
	}
	p := ps.m[address]
	if p == nil {
		p = newPool(address)
		ps.m[address] = p
	}
	p.refs++
	return p
}

// put drops a reference; it reports whether it was the last, in which case
// the pool is no longer handed out.
func (ps *Pools) put(p *pool) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p.refs--
	if p.refs > 0 {
		return false
	}
	if ps.m[p.address] == p {
		delete(ps.m, p.address)
	}
	return true
}
