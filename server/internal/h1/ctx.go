package h1

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/server/internal/monotime"
)

// reqCtx is a request's context. It carries the connection context's
// values and cancellation, and is cancelled when the handler returns, like
// net/http's. Learning that the client went away needs a read on the
// connection while the handler runs; that read (the watcher) starts only
// when someone first asks for Done, so handlers that never wait on the
// context (static files) never pay for it.
type reqCtx struct {
	parent context.Context
	c      *conn
	asked  bool // the watcher was asked for (startWatch; under mu)

	mu    sync.Mutex
	done  chan struct{}
	err   error
	ended bool
	// Functions registered with AfterFunc: the first (a proxied or
	// FastCGI request has one) inline, so that it allocates nothing but
	// its stop function, any others in more.
	after0 afterFunc
	more   []*afterFunc
}

// afterFunc is one function registered with reqCtx.AfterFunc.
type afterFunc struct {
	f    func()
	done bool // ran or stopped
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (x *reqCtx) Deadline() (time.Time, bool) { return x.parent.Deadline() }
func (x *reqCtx) Value(k any) any             { return x.parent.Value(k) }

func (x *reqCtx) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err == nil {
		if err := x.parent.Err(); err != nil {
			return err
		}
	}
	return x.err
}

func (x *reqCtx) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done != nil {
		return x.done
	}
	if x.err != nil {
		x.done = closedChan
		return x.done
	}
	x.done = make(chan struct{})
	if !x.ended {
		x.c.startWatch(x)
	}
	return x.done
}

// AfterFunc arranges for f to run (in its own goroutine) once the context
// is done, and like Done starts watching for the client leaving; stop
// prevents f if it has not run yet. It spares context.AfterFunc's own
// cancelCtx, Done channel and goroutine (see wire.AfterFunc).
func (x *reqCtx) AfterFunc(f func()) (stop func() bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		go f()
		return notStopped
	}
	a := &x.after0
	if a.f != nil {
		a = &afterFunc{}
		x.more = append(x.more, a)
	}
	a.f = f
	if !x.ended {
		x.c.startWatch(x)
	}
	return func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		if a.done {
			return false
		}
		a.done = true
		return true
	}
}

func notStopped() bool { return false }

// cancel ends the context with err (once), running the AfterFunc functions.
func (x *reqCtx) cancel(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		return
	}
	x.err = err
	if x.done != nil && x.done != closedChan {
		close(x.done)
	}
	if a := &x.after0; a.f != nil && !a.done {
		a.done = true
		go a.f()
	}
	for _, a := range x.more {
		if !a.done {
			a.done = true
			go a.f()
		}
	}
	x.more = nil
}

func (x *reqCtx) String() string { return "h1.requestContext" }

// watcher reads from the connection while a handler runs to learn that
// the client closed it. Started by reqCtx.Done; stopped when the handler
// returns.
type watcher struct {
	x       *reqCtx
	stopped chan struct{}
	got     []byte // a byte of the next request read while watching
	abort   atomic.Bool
}

// watchDelay is how long a handler that waits on its request context runs
// before a watcher reads the connection to learn if the client left: most
// PHP scripts and proxied requests are done sooner, and the watcher's read,
// goroutine and wake-up would cost more than their whole answer.
const watchDelay = 20 * time.Millisecond

// startWatch arranges for the watcher to start once the handler has run
// for watchDelay: right away if the request body has been read (the
// watcher must not steal body bytes) and nothing is buffered (pipelined
// requests mean the client is still there), else at the end of the body.
// Called with x.mu held.
//
// A request only records that it asks and since when; the server's watch
// scanner (watchLoop), ticking every watchDelay/2 while any request asks,
// starts the watchers of those that have run for watchDelay. Before, each
// request re-armed and stopped a timer of its connection (two updates of
// the runtime's timer heap per proxied request, 0.7-1 % of arka's CPU
// proxying a small answer), and a connection's timer firing spawned a
// goroutine each time.
func (c *conn) startWatch(x *reqCtx) {
	if c.watch != nil || x.asked {
		return
	}
	x.asked = true
	c.watchSince.Store(monotime.Now())
	c.watchX.Store(x)
	c.srv.kickWatch()
}

// kickWatch starts the watch scanner unless it runs.
func (s *Server) kickWatch() {
	if !s.watching.Load() && s.watching.CompareAndSwap(false, true) {
		go s.watchLoop()
	}
}

// watchLoop starts the watchers of requests that asked watchDelay ago or
// earlier (watchFire), every watchDelay/2; it ends after a tick that found
// no request asking, so an idle server does not wake up.
func (s *Server) watchLoop() {
	t := time.NewTicker(watchDelay / 2)
	defer t.Stop()
	var due []*conn
	for range t.C {
		now := monotime.Now()
		asking := false
		s.mu.Lock()
		for c := range s.conns {
			if c.watchX.Load() == nil {
				continue
			}
			asking = true
			if now-c.watchSince.Load() >= int64(watchDelay) {
				due = append(due, c)
			}
		}
		s.mu.Unlock()
		for i, c := range due {
			if x := c.watchX.Swap(nil); x != nil {
				c.watchFire(x)
			}
			due[i] = nil
		}
		due = due[:0]
		if asking {
			continue
		}
		s.watching.Store(false)
		// A request that asked after the scan saw the scanner running:
		// look once more before leaving it without one.
		if !s.anyAsking() || !s.watching.CompareAndSwap(false, true) {
			return
		}
	}
}

func (s *Server) anyAsking() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.watchX.Load() != nil {
			return true
		}
	}
	return false
}

// watchFire starts the watcher of x, the request that asked.
func (c *conn) watchFire(x *reqCtx) {
	func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.ended || x.err != nil || c.watch != nil {
			return
		}
		if c.body.done.Load() {
			c.startWatchLocked(x)
			return
		}
		// The body is still being read by the handler: start at its end
		// (body.Read calls startWatchNow), and meanwhile let the end of
		// the connection cancel the request.
		c.body.wantWatch.Store(x)
		if x.done == nil {
			x.done = make(chan struct{}) // AfterFunc asked, not Done
		}
		go func() {
			select {
			case <-c.ctx.Done():
				x.cancel(context.Canceled)
			case <-x.done:
			}
		}()
		if c.body.done.Load() { // the body ended while we were deciding
			c.startWatchLocked(x)
		}
	}()
}

func (c *conn) startWatchNow(x *reqCtx) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ended || x.err != nil {
		return
	}
	c.startWatchLocked(x)
}

func (c *conn) startWatchLocked(x *reqCtx) {
	if c.watch != nil || c.br.Buffered() > 0 || c.state.Load() == stateHijacked {
		return
	}
	w := &watcher{x: x, stopped: make(chan struct{})}
	c.watch = w
	// The idle or header deadline must not end a long request; stopWatch
	// sets a past deadline to end the read.
	c.rwc.SetReadDeadline(time.Time{})
	c.deadline = time.Time{}
	go func() {
		defer close(w.stopped)
		var b [1]byte
		n, err := c.rwc.Read(b[:])
		if n > 0 {
			w.got = b[:1]
			return
		}
		if w.abort.Load() && isTimeout(err) {
			return
		}
		if err != nil {
			x.cancel(context.Canceled)
			c.cancel()
		}
	}()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// stopWatch ends the request's context and stops the watcher, keeping any
// byte it read for the next request.
func (c *conn) stopWatch() {
	x := c.w.ctx
	if x != nil {
		x.mu.Lock()
		x.ended = true
		c.body.wantWatch.Store(nil)
		if x.asked {
			c.watchX.CompareAndSwap(x, nil)
		}
		w := c.watch
		x.mu.Unlock()
		x.cancel(context.Canceled)
		if w != nil {
			c.endWatch(w)
			c.deadline = time.Time{}
		}
	}
}

var aLongTimeAgo = time.Unix(1, 0)

// stopWatchForHijack stops a running watcher before the handler takes the
// connection over.
func (c *conn) stopWatchForHijack() {
	if w := c.watch; w != nil {
		c.endWatch(w)
	}
}

// endWatch stops the watcher w (a read deadline in the past wakes its
// read) and waits for it; a byte it read is given back in front of the
// connection (c.pre), so the next request starts with it.
func (c *conn) endWatch(w *watcher) {
	w.abort.Store(true)
	c.rwc.SetReadDeadline(aLongTimeAgo)
	<-w.stopped
	c.rwc.SetReadDeadline(time.Time{})
	c.watch = nil
	if len(w.got) > 0 {
		c.pre.Keep(w.got[0])
		c.br.Reset(&c.pre)
	}
}
