package h2

import (
	"time"

	"golang.org/x/net/http2"
)

// Control-frame flood guard (CVE-2019-9512 ping flood, CVE-2019-9515
// settings flood, CVE-2019-9518 empty frames flood, and their kin): frames
// that cost the server work but carry no request progress fill a bucket
// that leaks ctrlRate a second; past ctrlBurst the connection is closed
// with GOAWAY ENHANCE_YOUR_CALM. Counted: PING, SETTINGS, PRIORITY,
// frames of unknown types, WINDOW_UPDATE with an increment below
// smallFrame or for a stream that is not open (unless it gives back window
// the server's DATA used: a client that acknowledges every small DATA
// frame it reads is no flood), and DATA frames with fewer
// than smallFrame bytes of data that do not end their stream. A browser
// or gRPC client (PINGs for keepalive or window probing, a few SETTINGS,
// PRIORITY per request, WINDOW_UPDATEs of at least 4 KiB) stays far below;
// a flood, which a client can send at a million frames a second, is cut
// within milliseconds instead of costing a core for as long as it likes.
const (
	ctrlRate   = 1000  // frames a second, sustained
	ctrlBurst  = 10000 // frames at once
	smallFrame = 256   // bytes: DATA or window increment below this counts
)

// ctrlGuard is the bucket; the reader goroutine owns it.
type ctrlGuard struct {
	level float64
	at    time.Time
}

// ctrlFlood counts f when it is one of the frames above and reports
// whether the connection went over the bound.
func (c *conn) ctrlFlood(f http2.Frame) bool {
	switch f := f.(type) {
	case *http2.PingFrame, *http2.SettingsFrame, *http2.PriorityFrame, *http2.UnknownFrame:
	case *http2.DataFrame:
		if f.StreamEnded() || len(f.Data()) >= smallFrame {
			return false
		}
	case *http2.WindowUpdateFrame:
		if f.Increment >= smallFrame && (f.StreamID == 0 || c.isOpen(f.StreamID)) || c.givesBack(f) {
			return false
		}
	default:
		return false
	}
	g := &c.ctrl
	now := time.Now()
	if !g.at.IsZero() {
		g.level = max(0, g.level-now.Sub(g.at).Seconds()*ctrlRate)
	}
	g.at = now
	g.level++
	return g.level > ctrlBurst
}

func (c *conn) isOpen(id uint32) bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	_, ok := c.streams[id]
	return ok
}

// givesBack reports whether a WINDOW_UPDATE only gives back window the
// server's DATA used: for the connection, the window it raises stays at or
// below the highest the peer has granted (conn.sendHigh); for a stream
// (open, or closed while the peer's updates for its last DATA were on
// their way), its increment is within what the streams sent and the peer
// has not given back yet (conn.streamCredit), which it then uses up. So
// the frames that are not counted never outnumber the bytes of DATA sent.
func (c *conn) givesBack(f *http2.WindowUpdateFrame) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	inc := int64(f.Increment)
	if f.StreamID == 0 {
		return c.sendConn+inc <= c.sendHigh
	}
	if inc > c.streamCredit {
		c.streamCredit = 0
		return false
	}
	c.streamCredit -= inc
	return true
}
