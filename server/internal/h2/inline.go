package h2

import (
	"errors"
	"time"
)

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
// When the handler returns, the serving goroutine recalls reading: a
// helper waiting for the client's next frame has that wait cut short
// (recall), and it gives reading back before its next read; a helper that
// reads the connection's end ends it. After a lend, the connection's next
// inlineBackoff streams go to the workers, so a connection whose requests
// go to an upstream pays for the wait and the helper once in a while,
// not per request.
//
// Reading belongs to whoever c.role says; the transitions are atomic:
//
//	roleOwn -> roleInline            runInline, before the handler
//	roleInline -> roleOwn            runInline, the handler returned in time
//	roleInline -> roleLent           lend, then it starts the helper
//	roleLent -> roleWaiting          runInline, the handler returned
//	roleWaiting -> roleOwn           giveBack (helper), with roleBack <- true
//	roleLent|roleWaiting -> roleEnded  helperEnded, roleBack <- false if waiting
//
// What makes shutdown right:
//
//   - a helper is started only by the lend that won roleInline -> roleLent,
//     so there is at most one, and none once the handler returned (the
//     serving goroutine left roleInline first). A watchdog's look at a run
//     that has ended lends nothing.
//   - the serving goroutine, when its handler has returned while reading
//     is lent, waits for the helper to give reading back or to end the
//     connection; serve, and with it Server.ServeConn, returns only after
//     that, so Shutdown and Close, which track connections by ServeConn,
//     still see (and close) a connection a helper reads.
//   - a helper lives no longer than its handler, plus one frame: its wait
//     for the next frame is cut short when the handler returns. Without
//     that, a helper lent for a connection's last request waited for the
//     client's next frame, or its end, however long; a test starting a
//     second server meanwhile counted it as that server's goroutine.
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

// inlineBackoff is the number of streams of a connection dispatched to
// workers after reading was lent once.
const inlineBackoff = 16

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
	c.inlineSeq.Add(1)
	c.role.Store(roleInline)
	c.srv.watchInline()
	st.run()
	if c.role.CompareAndSwap(roleInline, roleOwn) {
		return true
	}
	c.noInline = inlineBackoff
	if c.role.CompareAndSwap(roleLent, roleWaiting) {
		c.recall()
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
			if seq == c.watchSeq && c.role.Load() == roleInline {
				c.lend()
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

// lend lends reading to a new helper goroutine if a handler still runs
// inline. Only the call that takes roleInline starts one, so a late or
// repeated call (the watchdog's and the handler's own) starts none.
func (c *conn) lend() {
	if c.role.CompareAndSwap(roleInline, roleLent) {
		go c.readLoop(true)
	}
}

// lendNow has reading lent at once: the inline handler is about to wait
// for the reader (flow-control window). Called on the handler's goroutine.
func (c *conn) lendNow() { c.lend() }

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

// longAgo is a read deadline that has passed: it cuts a wait short.
var longAgo = time.Unix(1, 0)

// recall cuts short a helper's wait for the next frame: the handler it
// was lent for has returned (roleWaiting), and the serving goroutine
// waits to read again. A helper not waiting sees roleWaiting before its
// next read. The deadline is set under smu, with recalled, so no other
// deadline (armIdleLocked) replaces it before the helper has seen it.
func (c *conn) recall() {
	c.smu.Lock()
	if c.helperWaiting {
		c.recalled = true
		c.rwc.SetReadDeadline(longAgo)
	}
	c.smu.Unlock()
}

// waitFrameAs is waitFrame; on a helper it is marked as a wait that
// recall may cut short. A helper whose handler has returned already does
// not wait: the role is read under smu, where recall looks at
// helperWaiting after the role changed, so one of them sees the other.
func (c *conn) waitFrameAs(helper bool) error {
	if !helper {
		return c.waitFrame()
	}
	c.smu.Lock()
	if c.role.Load() == roleWaiting {
		c.smu.Unlock()
		c.recallSeen = true
		return errRecalled
	}
	c.helperWaiting = true
	c.smu.Unlock()
	err := c.waitFrame()
	c.smu.Lock()
	c.helperWaiting = false
	if c.recalled {
		// Set the read deadline of what the connection is now, in place of
		// the recall's: an expired one is moved or cleared.
		c.recalled = false
		c.rdeadline = longAgo
		c.armIdleLocked()
		c.recallSeen = err != nil
	}
	c.smu.Unlock()
	return err
}

var errRecalled = errors.New("h2: reading recalled")

// wasRecalled reports whether err, from a helper's waitFrameAs, ended a
// wait that recall cut short: the helper then gives reading back, and the
// serving goroutine reads again (an error that was not the recall's, the
// connection's end, comes back to it: crypto/tls keeps it).
func (c *conn) wasRecalled(err error) bool {
	seen := c.recallSeen
	c.recallSeen = false
	return seen && err != nil
}
