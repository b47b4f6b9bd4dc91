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

// listenTCP binds addr (Options.Listen's default). Accepted connections
// get TCP keep-alive as Go's own listener gives them, but set once on the
// listening socket, whose options Linux copies to each connection it
// accepts, instead of with four setsockopt calls per accepted connection
// (SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT): 5 -> 1
// setsockopt per new connection (TCP_NODELAY stays, set by package net),
// strace -c under wrk's new-connection load.
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
