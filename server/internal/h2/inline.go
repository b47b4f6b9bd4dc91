package h2

import "time"

// Handlers run inline: a request that opens the connection's only running
// stream and has no body (END_STREAM on its HEADERS), with no further
// bytes read and waiting, runs its handler on the reader goroutine itself
// rather than on a worker. Under h2load, as with a browser fetching one
// thing at a time, that is every request: no hand-off to a worker, no
// park and wake of two goroutines per request, and with writeInline the
// request is read, served and answered by one goroutine.
//
// The reader does not read while the handler runs, so a handler that
// waits must not keep it: RST_STREAM, PING, SETTINGS, WINDOW_UPDATE and
// new streams would wait with it. Reading is therefore lent to another
// goroutine (a helper running readLoop) when the handler
//
//   - waits for flow-control window, which only the reader can bring
//     (writeData calls lendNow), or
//   - is still running inlineWait after it started (a proxied or FastCGI
//     request waiting for its upstream, a handler waiting on its request's
//     context): a timer lends reading then.
//
// When the handler returns, the serving goroutine waits until the helper
// gives reading back, which it does before its next read; a helper that
// reads the connection's end ends it. After a lend, the connection's next
// inlineBackoff streams go to the workers, so a connection whose requests
// go to an upstream pays for the timer and the helper once in a while,
// not per request.
//
// Reading belongs to whoever c.role says; the transitions are atomic:
//
//	roleOwn -> roleInline            runInline, before the handler
//	roleInline -> roleOwn            runInline, the handler returned in time
//	roleInline -> roleLent           lendLater: a helper reads from now on
//	roleLent -> roleWaiting          runInline, the handler returned
//	roleWaiting -> roleOwn           giveBack (helper), with roleBack <- true
//	roleLent|roleWaiting -> roleEnded  helperEnded, roleBack <- false if waiting
const (
	roleOwn int32 = iota
	roleInline
	roleLent
	roleWaiting
	roleEnded
)

// inlineWait is how long a handler running inline keeps the reader before
// reading is lent to a helper goroutine: a small static response takes
// tens of microseconds.
const inlineWait = time.Millisecond

// inlineBackoff is the number of streams of a connection dispatched to
// workers after reading was lent once.
const inlineBackoff = 64

// inlineOK reports whether stream st, just opened by the reader (serving
// goroutine, roleOwn) as the connection's only running one, runs inline.
func (c *conn) inlineOK(st *stream) bool {
	// The role first: a helper must not touch noInline, which the serving
	// goroutine sets.
	if c.role.Load() != roleOwn || !st.remoteClosed || c.br == nil || c.br.Buffered() > 0 {
		return false
	}
	if c.noInline > 0 {
		c.noInline--
		return false
	}
	return true
}

// runInline runs st's handler on the serving goroutine. It reports whether
// this goroutine reads on; false means the connection ended meanwhile (a
// helper read its end and ended it).
func (c *conn) runInline(st *stream) bool {
	st.inline = true
	c.role.Store(roleInline)
	if c.watch == nil {
		c.watch = time.AfterFunc(inlineWait, c.lendFn)
	} else {
		c.watch.Reset(inlineWait)
	}
	st.run()
	if c.role.CompareAndSwap(roleInline, roleOwn) {
		c.watch.Stop()
		return true
	}
	c.noInline = inlineBackoff
	if c.role.CompareAndSwap(roleLent, roleWaiting) {
		return <-c.roleBack
	}
	return false // roleEnded
}

// lendLater lends reading to the calling goroutine (the timer's, or one
// lendNow started) if a handler still runs inline, and reads until it
// gives reading back or the connection ends.
func (c *conn) lendLater() {
	if c.role.CompareAndSwap(roleInline, roleLent) {
		c.readLoop(true)
	}
}

// lendNow has reading lent at once: the inline handler is about to wait
// for the reader (flow-control window). Called on the handler's goroutine.
func (c *conn) lendNow() {
	if c.role.Load() == roleInline {
		go c.lendFn()
	}
}

// giveBack, on a helper about to read, gives reading back to the serving
// goroutine if it waits for it, and reports whether it did.
func (c *conn) giveBack() bool {
	if c.role.CompareAndSwap(roleWaiting, roleOwn) {
		c.roleBack <- true
		return true
	}
	return false
}

// helperEnded tells the serving goroutine that the helper ended the
// connection (after c.end).
func (c *conn) helperEnded() {
	if c.role.Swap(roleEnded) == roleWaiting {
		c.roleBack <- false
	}
}
