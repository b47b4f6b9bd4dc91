package wire

import (
	"errors"
	"log/slog"
	"net"
	"time"
)

// Accept returns ln's next connection. Every error but a closed listener
// (net.ErrClosed) is waited out and the accept tried again: a process out
// of file descriptors (EMFILE, ENFILE), kernel memory (ENOBUFS, ENOMEM) or
// handed a connection reset before accept (ECONNABORTED) recovers when the
// cause passes, and its listener must not stop for good. The wait doubles
// from 5 ms to at most 1 s while errors repeat (delay carries it between
// calls; a connection resets it), as net/http's and nginx's accept loops
// do. onError, if not nil, is told of each error retried. The error
// returned wraps net.ErrClosed.
func Accept(ln net.Listener, delay *time.Duration, onError func(error)) (net.Conn, error) {
	for {
		c, err := ln.Accept()
		if err == nil {
			*delay = 0
			return c, nil
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		if onError != nil {
			onError(err)
		}
		*delay = min(max(2**delay, 5*time.Millisecond), time.Second)
		time.Sleep(*delay)
	}
}

// LogAcceptErrors returns an onError for Accept, for one accept loop,
// that logs to log, with attrs, at most one error a second: a process out
// of file descriptors fails every accept until it recovers.
func LogAcceptErrors(log *slog.Logger, attrs ...any) func(error) {
	var last time.Time
	return func(err error) {
		if now := time.Now(); now.Sub(last) >= time.Second {
			last = now
			log.Error("accept failed; trying again", append(attrs, "err", err)...)
		}
	}
}
