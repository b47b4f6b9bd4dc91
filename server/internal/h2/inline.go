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
//   - is still running one to two inlineWait after it started (a proxied
//     or FastCGI request waiting for its upstream, a handler waiting on
//     its request's context): the server's watchdog lends reading then.
//
// When the handler returns, the serving goroutine waits until the helper
// gives reading back, which it does before its next read; a helper that
// reads the connection's end ends it. After a lend, the connection's next
// inlineBackoff streams go to the workers, so a connection whose requests
// go to an upstream pays for the wait and the helper once in a while,
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

// inlineWait is the watchdog's tick: a handler running inline keeps the
// reader between one and two of them before reading is lent to a helper
// goroutine. A small static response takes tens of microseconds; the
// margin is for a busy machine, where a goroutine can wait that long for
// a thread, and each needless lend sends the next inlineBackoff streams
// to the workers.
const inlineWait = 2 * time.Millisecond

// inlineEnabled switches running handlers inline on. Off: a fresh-clone
// CI run (7a26e9d, TestDirectoryListing over h2) found a helper that the
// watchdog lent reading to still reading the connection 5 s after the
// server had shut down (created by inlineWatch, blocked in waitFrame):
// a connection that Shutdown no longer tracks. Until that is understood
// and fixed, every handler runs on a worker, as before inlining (the
// small page over HTTP/2 costs about 7% more CPU per request that way).
const inlineEnabled = false

// inlineBackoff is the number of streams of a connection dispatched to
// workers after reading was lent once.
const inlineBackoff = 16

// inlineOK reports whether stream st, just opened by the reader (serving
// goroutine, roleOwn) as the connection's only running one, runs inline.
func (c *conn) inlineOK(st *stream) bool {
	if !inlineEnabled {
		return false
	}
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
	c.inlineSeq.Add(1)
	c.role.Store(roleInline)
	c.srv.watchInline()
	st.run()
	if c.role.CompareAndSwap(roleInline, roleOwn) {
		return true
	}
	c.noInline = inlineBackoff
	if c.role.CompareAndSwap(roleLent, roleWaiting) {
		return <-c.roleBack
	}
	return false // roleEnded
}

// watchInline has the watchdog run (inlineWatch). It costs an atomic load
// per inline run, and a store and a lock once per tick.
func (s *Server) watchInline() {
	if s.inlineSeen.Load() {
		return
	}
	s.inlineSeen.Store(true)
	s.watchMu.Lock()
	if !s.watching {
		s.watching = true
		go s.inlineWatch()
	}
	s.watchMu.Unlock()
}

// inlineWatch is the watchdog of handlers running inline: every inlineWait
// it lends reading on each connection whose inline handler was already
// running at the previous tick (the same run: c.inlineSeq unchanged), so
// a handler keeps the reader between one and two inlineWait. One
// goroutine for the server rather than a timer per connection, whose
// Reset and Stop for every request cost 1.5% of the CPU of the small page
// (perf); it ends after two ticks without inline runs.
func (s *Server) inlineWatch() {
	quiet := 0
	for {
		time.Sleep(inlineWait)
		if s.inlineSeen.Swap(false) {
			quiet = 0
		} else {
			quiet++
		}
		s.mu.Lock()
		for c := range s.conns {
			seq := c.inlineSeq.Load()
			if c.role.Load() == roleInline && seq == c.watchSeq {
				go c.lendFn()
			}
			c.watchSeq = seq
		}
		s.mu.Unlock()
		if quiet < 2 {
			continue
		}
		s.watchMu.Lock()
		if s.inlineSeen.Load() {
			s.watchMu.Unlock() // a run began since: watch on
			continue
		}
		s.watching = false
		s.watchMu.Unlock()
		return
	}
}

// lendLater lends reading to the calling goroutine (one the watchdog or
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
