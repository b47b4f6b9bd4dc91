package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns a loopback TCP connection and its peer.
func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); p.Close() })
	return c, p
}

// TestSender: Send writes the request and returns once the answer can be
// read, whether it comes at once or later; the wait ends at the read
// deadline (the next read reports it) or when the peer closes; a write
// error is Send's; a connection without a raw descriptor just writes.
func TestSender(t *testing.T) {
	t.Run("answer at once and later", func(t *testing.T) {
		c, p := pair(t)
		var s Sender
		s.Init(c, func() error { _, err := c.Write([]byte("ping")); return err })
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for _, delay := range []time.Duration{0, 50 * time.Millisecond, 0} {
			go func() {
				b := make([]byte, 4)
				io.ReadFull(p, b)
				time.Sleep(delay)
				p.Write([]byte("pong"))
			}()
			start := time.Now()
			if err := s.Send(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < delay {
				t.Errorf("Send returned after %v, before the answer (%v)", d, delay)
			}
			b := make([]byte, 4)
			if _, err := io.ReadFull(c, b); err != nil || string(b) != "pong" {
				t.Fatalf("read %q, %v", b, err)
			}
		}
	})
	t.Run("read deadline", func(t *testing.T) {
		c, _ := pair(t)
		var s Sender
		s.Init(c, func() error { _, err := c.Write([]byte("ping")); return err })
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		start := time.Now()
		if err := s.Send(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 80*time.Millisecond || d > 3*time.Second {
			t.Errorf("Send waited %v, want about the 100 ms deadline", d)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("next read: %v, want the deadline", err)
		}
	})
	t.Run("peer closes", func(t *testing.T) {
		c, p := pair(t)
		var s Sender
		s.Init(c, func() error { _, err := c.Write([]byte("ping")); return err })
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		go func() { io.ReadFull(p, make([]byte, 4)); p.Close() }()
		if err := s.Send(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("next read: %v, want EOF", err)
		}
	})
	t.Run("write error", func(t *testing.T) {
		c, _ := pair(t)
		var s Sender
		boom := errors.New("boom")
		s.Init(c, func() error { return boom })
		if err := s.Send(); err != boom {
			t.Errorf("Send: %v, want the write's error", err)
		}
	})
	t.Run("no raw descriptor", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		var s Sender
		s.Init(a, func() error { _, err := a.Write([]byte("x")); return err })
		go io.ReadFull(b, make([]byte, 1))
		if err := s.Send(); err != nil {
			t.Fatal(err)
		}
	})
}
