package server

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// TestListenKeepAliveInherited: a connection accepted by listenTCP has
// TCP keep-alive on, with Go's default idle time, interval and count,
// though none was set on it: Linux copied them from the listening socket.
func TestListenKeepAliveInherited(t *testing.T) {
	ln, err := listenTCP("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err == nil {
			defer c.Close()
			c.Write([]byte("x")) // accepted once it speaks (TCP_DEFER_ACCEPT)
			time.Sleep(time.Second)
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		name       string
		level, opt int
		want       int
	}{
		{"SO_KEEPALIVE", syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
		{"TCP_KEEPIDLE", syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, int(keepAliveIdle / time.Second)},
		{"TCP_KEEPINTVL", syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, int(keepAliveInterval / time.Second)},
		{"TCP_KEEPCNT", syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, keepAliveCount},
		{"TCP_NODELAY", syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1},
	} {
		var got int
		var gerr error
		rc.Control(func(fd uintptr) { got, gerr = syscall.GetsockoptInt(int(fd), o.level, o.opt) })
		if gerr != nil || got != o.want {
			t.Errorf("%s = %d (%v), want %d", o.name, got, gerr, o.want)
		}
	}
}

// TestListenDeferAccept: the listening socket waits for a connection's
// first bytes (TCP_DEFER_ACCEPT) before accept returns it: a client that
// connects and sends at once is accepted with its bytes already there; one
// that sends nothing is still accepted, a few seconds later, for Arka's
// own timeouts to close.
func TestListenDeferAccept(t *testing.T) {
	ln, err := listenTCP("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	rc.Control(func(fd uintptr) {
		v, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_DEFER_ACCEPT)
	})
	if gerr != nil || v < deferAcceptSeconds {
		t.Errorf("TCP_DEFER_ACCEPT = %d (%v), want at least %d", v, gerr, deferAcceptSeconds)
	}

	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	speaking, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer speaking.Close()
	speaking.Write([]byte("x"))
	start := time.Now()
	ln.(*net.TCPListener).SetDeadline(start.Add(20 * time.Second))
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if first.RemoteAddr().String() != speaking.LocalAddr().String() {
		t.Errorf("accepted %s first, want the one that sent a byte (%s)", first.RemoteAddr(), speaking.LocalAddr())
	}
	second, err := ln.Accept()
	if err != nil {
		t.Fatalf("the silent connection was never accepted: %v", err)
	}
	defer second.Close()
	t.Logf("silent connection accepted after %v", time.Since(start))
}
