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
