package fastcgi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The pool keeps at most max connections to the FastCGI server and one
// FIFO queue of requests waiting for one.
//
// php-fpm gives every open connection a worker of its own for as long as
// the connection is open, and serves one request per connection at a time.
// So a connection kept idle while a request waits holds a worker that
// request could use; the pool never does that: a connection that comes
// back goes straight to the oldest waiting request, and only when nobody
// waits is it kept idle. When a connection breaks, its slot passes to the
// oldest waiter, who dials a new one. Requests are served strictly in the
// order they arrived: a newcomer takes an idle connection or a free slot
// only when nobody is queued.

var (
	errQueueFull    = errors.New("queue full")
	errQueueTimeout = errors.New("timed out in queue")
	errClosing      = errors.New("handler closed")
)

// grant is what a waiter receives: a connection, or the right to dial one
// (c == nil, err == nil), or an error.
type grant struct {
	c   *conn
	err error
}

type waiter struct {
	ch         chan grant // capacity 1: a grant never blocks the granter
	prev, next *waiter
	queued     bool
	r          *http.Request
	timer      *time.Timer
}

type pool struct {
	dial func(ctx context.Context) (*conn, error)

	mu           sync.Mutex
	max          int
	queueMax     int
	queueTimeout time.Duration
	open         int // connections open or being dialed (slots in use)
	busy         int // slots serving a request
	idle         []*conn
	head, tail   *waiter
	waiting      int
	closing      bool
	all          map[*conn]struct{} // every open connection, for a forced close
	drained      chan struct{}      // closed when closing and open == 0

	waiters sync.Pool

	rejected, timedOut atomic.Uint64
	idleWhileWaiting   atomic.Uint64 // invariant breaches; tests check it stays 0

	// testHook, when set, is called with the pool locked when a request
	// arrives ("arrive") and when it gets its connection ("grant").
	testHook func(event string, r *http.Request)
}

func newPool(max, queueMax int, queueTimeout time.Duration, dial func(context.Context) (*conn, error)) *pool {
	p := &pool{
		dial:         dial,
		max:          max,
		queueMax:     queueMax,
		queueTimeout: queueTimeout,
		all:          make(map[*conn]struct{}),
		drained:      make(chan struct{}),
	}
	p.waiters.New = func() any { return &waiter{ch: make(chan grant, 1)} }
	return p
}

// acquire returns a connection for r: an idle one, a new one, or one
// handed over after waiting in the queue. Errors: errQueueFull,
// errQueueTimeout, errClosing, the context's error, or a dial error.
func (p *pool) acquire(ctx context.Context, r *http.Request) (*conn, error) {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return nil, errClosing
	}
	p.hook("arrive", r)
	if p.head == nil {
		if n := len(p.idle); n > 0 {
			c := p.idle[n-1] // the most recently used: its worker is warm
			p.idle[n-1] = nil
			p.idle = p.idle[:n-1]
			p.busy++
			p.hook("grant", r)
			p.mu.Unlock()
			return c, nil
		}
		if p.open < p.max {
			p.open++
			p.busy++
			p.hook("grant", r)
			p.mu.Unlock()
			return p.dialSlot(ctx)
		}
	}
	if p.waiting >= p.queueMax {
		p.mu.Unlock()
		p.rejected.Add(1)
		return nil, errQueueFull
	}
	w := p.waiters.Get().(*waiter)
	w.r = r
	p.push(w)
	p.mu.Unlock()

	if w.timer == nil {
		w.timer = time.NewTimer(p.queueTimeout)
	} else {
		w.timer.Reset(p.queueTimeout)
	}
	var g grant
	select {
	case g = <-w.ch:
		w.timer.Stop()
	case <-w.timer.C:
		if p.leave(w) {
			p.timedOut.Add(1)
			p.recycle(w)
			return nil, errQueueTimeout
		}
		g = <-w.ch // granted just as the timer fired: take it
	case <-ctx.Done():
		w.timer.Stop()
		if p.leave(w) {
			p.recycle(w)
			return nil, ctx.Err()
		}
		g = <-w.ch
		if g.err == nil {
			// Granted while the client left: pass the turn on.
			p.release(g.c, g.c != nil)
			g = grant{err: ctx.Err()}
		}
	}
	p.recycle(w)
	if g.err != nil {
		return nil, g.err
	}
	if g.c != nil {
		return g.c, nil
	}
	return p.dialSlot(ctx)
}

// dialSlot dials on a slot the caller holds; on failure the slot passes
// on as if a connection had broken.
func (p *pool) dialSlot(ctx context.Context) (*conn, error) {
	c, err := p.dial(ctx)
	if err != nil {
		p.release(nil, false)
		return nil, err
	}
	p.mu.Lock()
	p.all[c] = struct{}{}
	p.mu.Unlock()
	return c, nil
}

// redial replaces a broken connection on the same slot, for a request that
// has not been sent yet.
func (p *pool) redial(ctx context.Context, old *conn) (*conn, error) {
	p.forget(old)
	old.close()
	c, err := p.dial(ctx)
	if err != nil {
		p.release(nil, false)
		return nil, err
	}
	p.mu.Lock()
	p.all[c] = struct{}{}
	p.mu.Unlock()
	return c, nil
}

func (p *pool) forget(c *conn) {
	p.mu.Lock()
	delete(p.all, c)
	p.mu.Unlock()
}

// release returns a slot after a request. With reusable set, c is clean
// (its last request ended with END_REQUEST and nothing else is pending on
// it) and goes to the oldest waiter, or to the idle list. Otherwise c (if
// any) is closed and the slot goes to the oldest waiter, who dials.
func (p *pool) release(c *conn, reusable bool) {
	var toClose *conn
	p.mu.Lock()
	p.busy--
	if !reusable && c != nil {
		delete(p.all, c)
		toClose, c = c, nil
	}
	if w := p.pop(); w != nil {
		p.busy++
		p.hook("grant", w.r)
		w.ch <- grant{c: c}
		p.mu.Unlock()
		if toClose != nil {
			toClose.close()
		}
		return
	}
	switch {
	case c == nil:
		p.open--
	case p.closing:
		delete(p.all, c)
		toClose = c
		p.open--
	default:
		p.idle = append(p.idle, c)
	}
	p.checkDrained()
	p.mu.Unlock()
	if toClose != nil {
		toClose.close()
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
	w.r = nil
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
	open, busy, idle, queued int
}

func (p *pool) stats() poolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return poolStats{open: p.open, busy: p.busy, idle: len(p.idle), queued: p.waiting}
}
