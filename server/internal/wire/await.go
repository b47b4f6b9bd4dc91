package wire

import (
	"net"
	"syscall"
)

// Sender sends a request to an upstream (a proxied server, php-fpm) and
// waits for the answer to become readable without first trying a read.
//
// Go's net package reads first and waits for readiness only when that
// read fails (EAGAIN). After sending a request the first read always
// fails, since nothing can have come yet: one read system call per
// exchange spent learning that (measured with perf stat on the proxy over
// HTTP/1.1: 3.9 reads per request, two of them failing). Send registers
// for readiness before it writes (syscall.RawConn.Read clears the
// readiness state first), writes, then waits, so an answer that comes at
// once is not missed and the next read finds it there.
//
// The wait ends as a read would: on the connection's read deadline, or
// when it is closed or reset; the caller's next read then reports why.
// Use it only when the peer sends nothing unasked (an upstream between
// requests) and nothing is buffered unread: bytes already waiting in the
// socket would raise no new readiness event.
//
// A Sender belongs to one connection and is used by one goroutine at a
// time. The zero value sends without waiting (connections that are no
// syscall.Conn).
type Sender struct {
	rc    syscall.RawConn
	step  func(uintptr) bool
	write func() error // sends the request; set by Init
	sent  bool
	err   error
}

// Init binds s to c, whose requests write sends. It allocates once, here.
func (s *Sender) Init(c net.Conn, write func() error) {
	s.write = write
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	s.rc, s.step = rc, s.stepFn
}

func (s *Sender) stepFn(uintptr) bool {
	if s.sent {
		return true // readable (or closed, or the deadline passed)
	}
	s.sent = true
	s.err = s.write()
	return s.err != nil
}

// Send calls the write function, then waits until the connection can be
// read. It returns write's error.
func (s *Sender) Send() error {
	if s.rc == nil {
		return s.write()
	}
	s.sent, s.err = false, nil
	if err := s.rc.Read(s.step); err != nil && !s.sent {
		// Closed, or the read deadline already passed: the write fails
		// or the next read reports it.
		return s.write()
	}
	return s.err
}
