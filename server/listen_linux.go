package server

import (
	"context"
	"net"
	"syscall"
	"time"
)

// TCP keep-alive of accepted connections: Go's defaults (net.ListenConfig),
// probes after 15 s idle, every 15 s, 9 unanswered ones drop the
// connection.
const (
	keepAliveIdle     = 15 * time.Second
	keepAliveInterval = 15 * time.Second
	keepAliveCount    = 9
)

// deferAcceptSeconds is TCP_DEFER_ACCEPT on the listening socket: the
// kernel hands a connection to accept only once its first bytes have come
// (the TLS ClientHello, the HTTP request; every client of Arka speaks
// first), so the first read finds them instead of returning EAGAIN and
// waiting in the poller. A connection that sends nothing is accepted
// anyway after about this long (the kernel counts it in retransmissions
// of its SYN-ACK), and Arka's own timeouts take over. nginx's listen
// option "deferred", HAProxy's default.
const deferAcceptSeconds = 2

// listenTCP binds addr (Options.Listen's default). Accepted connections
// get TCP keep-alive as Go's own listener gives them, but set once on the
// listening socket, whose options Linux copies to each connection it
// accepts, instead of with four setsockopt calls per accepted connection
// (SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT): 5 -> 1
// setsockopt per new connection (TCP_NODELAY stays, set by package net),
// strace -c under wrk's new-connection load. And with TCP_DEFER_ACCEPT
// (deferAcceptSeconds).
func listenTCP(network, addr string) (net.Listener, error) {
	lc := net.ListenConfig{
		KeepAlive: -1, // not per connection: inherited from the listener
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				for _, o := range []struct{ level, opt, v int }{
					{syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, int(keepAliveIdle / time.Second)},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, int(keepAliveInterval / time.Second)},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, keepAliveCount},
					{syscall.IPPROTO_TCP, syscall.TCP_DEFER_ACCEPT, deferAcceptSeconds},
				} {
					if serr == nil {
						serr = syscall.SetsockoptInt(int(fd), o.level, o.opt, o.v)
					}
				}
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
	return lc.Listen(context.Background(), network, addr)
}
