//go:build linux

package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rawPair returns a Raw-wrapped accepted TCP connection and its client end.
func rawPair(t *testing.T) (*RawTCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	rc, ok := Raw(c).(*RawTCPConn)
	if !ok {
		t.Fatalf("Raw(%T) is no *RawTCPConn", c)
	}
	t.Cleanup(func() { rc.Close(); peer.Close() })
	return rc, peer.(*net.TCPConn)
}

func TestRawReadWrite(t *testing.T) {
	c, peer := rawPair(t)
	if _, err := peer.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if n, err := c.Write([]byte("pong")); n != 4 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	n, err = io.ReadFull(peer, buf[:4])
	if err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("peer read %q, %v", buf[:n], err)
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}

// A read that finds nothing waits in the netpoller (EAGAIN) until bytes
// come.
func TestRawReadWaits(t *testing.T) {
	c, peer := rawPair(t)
	go func() {
		time.Sleep(50 * time.Millisecond)
		peer.Write([]byte("late"))
	}()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 16)
	start := time.Now()
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "late" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("Read returned after %v, before the bytes were sent", d)
	}
}

// A write larger than the socket buffers goes out in partial writes with
// waits between them, while the peer reads slowly.
func TestRawLargeWrite(t *testing.T) {
	c, peer := rawPair(t)
	c.NetConn().(*net.TCPConn).SetWriteBuffer(64 << 10)
	want := make([]byte, 8<<20)
	for i := range want {
		want[i] = byte(i * 7 >> 3)
	}
	got := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096) // small reads: the writer fills up and waits
		for b.Len() < len(want) {
			n, err := peer.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.Bytes()
	}()
	c.SetWriteDeadline(time.Now().Add(20 * time.Second))
	n, err := c.Write(want)
	if n != len(want) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if g := <-got; !bytes.Equal(g, want) {
		t.Fatalf("peer got %d bytes, not the %d written", len(g), len(want))
	}
}

func TestRawDeadlines(t *testing.T) {
	c, _ := rawPair(t)
	c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	start := time.Now()
	_, err := c.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) || !os.IsTimeout(err) {
		t.Fatalf("Read after the deadline: %v", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read's error %v is no net.Error with Timeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("read deadline honoured after %v", d)
	}
	// The peer does not read: writes fill the buffers, then time out.
	c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	big := make([]byte, 64<<20)
	n, err := c.Write(big)
	if !errors.Is(err, os.ErrDeadlineExceeded) || n >= len(big) {
		t.Fatalf("Write to a peer that does not read = %d, %v", n, err)
	}
	// A deadline in the past fails at once; cleared, reads wait again.
	c.SetReadDeadline(time.Unix(1, 0))
	if _, err := c.Read(make([]byte, 8)); !os.IsTimeout(err) {
		t.Fatalf("Read with a past deadline: %v", err)
	}
}

func TestRawClose(t *testing.T) {
	c, _ := rawPair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read during Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting Read")
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
}

func TestRawHalfClose(t *testing.T) {
	c, peer := rawPair(t)
	c.Write([]byte("request"))
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(peer)
	if err != nil || string(b) != "request" {
		t.Fatalf("peer read %q, %v (want the bytes, then end of stream)", b, err)
	}
	peer.Write([]byte("answer"))
	peer.CloseWrite()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err = io.ReadAll(c)
	if err != nil || string(b) != "answer" {
		t.Fatalf("read after CloseWrite: %q, %v", b, err)
	}
	if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("Read at the end = %d, %v; want io.EOF", n, err)
	}
}

func TestRawPeerReset(t *testing.T) {
	c, peer := rawPair(t)
	peer.Write([]byte("x"))
	peer.SetLinger(0)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	peer.Close() // RST
	time.Sleep(20 * time.Millisecond)
	_, err := c.Read(b)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Read after the peer's reset: %v", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" {
		t.Fatalf("Read's error %v is no read *net.OpError", err)
	}
	// Writing to it fails too (EPIPE or ECONNRESET), without a signal
	// ending the process.
	if _, err := c.Write([]byte("y")); err == nil {
		t.Fatal("Write after the peer's reset succeeded")
	}
}

// ReadFrom goes to the TCP connection: a file is sent whole (sendfile).
func TestRawReadFromFile(t *testing.T) {
	c, peer := rawPair(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10)
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(want))))
		got <- b
	}()
	var rf io.ReaderFrom = c
	n, err := rf.ReadFrom(&io.LimitedReader{R: f, N: int64(len(want))})
	if n != int64(len(want)) || err != nil {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	if g := <-got; !bytes.Equal(g, want) {
		t.Fatalf("peer got %d bytes, not the file's %d", len(g), len(want))
	}
	if _, ok := c.NetConn().(*net.TCPConn); !ok {
		t.Fatal("NetConn is not the TCP connection")
	}
	if _, ok := Raw(c).(*RawTCPConn); !ok || Raw(c) != net.Conn(c) {
		t.Fatal("Raw wrapped a RawTCPConn again")
	}
}

// One Read and one Write at once, from two goroutines, both directions
// busy (run with -race).
func TestRawConcurrent(t *testing.T) {
	c, peer := rawPair(t)
	const total = 4 << 20
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // c -> peer
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for sent := 0; sent < total; sent += len(buf) {
			if _, err := c.Write(buf); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // peer -> c, echoed by peer from its own buffer
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for sent := 0; sent < total; sent += len(buf) {
			if _, err := peer.Write(buf); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		if n, err := io.Copy(io.Discard, io.LimitReader(peer, total)); n != total {
			t.Errorf("peer read %d, %v", n, err)
		}
	}()
	if n, err := io.Copy(io.Discard, io.LimitReader(c, total)); n != total {
		t.Errorf("read %d, %v", n, err)
	}
	wg.Wait()
}

func TestRawUnix(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		io.Copy(s, s)
	}()
	nc, err := net.Dial("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	c := Raw(nc)
	defer c.Close()
	if _, ok := c.(*RawConn); !ok {
		t.Fatalf("Raw(%T) = %T", nc, c)
	}
	if _, ok := c.(io.ReaderFrom); ok {
		t.Fatal("a unix RawConn claims io.ReaderFrom")
	}
	if _, ok := c.(syscall.Conn); !ok {
		t.Fatal("RawConn lost syscall.Conn")
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("echo"))
	c.(*RawConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "echo" {
		t.Fatalf("echo = %q, %v", b, err)
	}
	<-done
}

// Reads and writes allocate nothing.
func TestRawAllocs(t *testing.T) {
	c, peer := rawPair(t)
	buf := make([]byte, 64)
	pb := make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		c.Write(buf)
		io.ReadFull(peer, pb)
		peer.Write(pb)
		io.ReadFull(c, buf)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per write and read", allocs)
	}
}

// WriteBuffers sends the buffers in order, whole (one writev through the
// TCP connection).
func TestRawWriteBuffers(t *testing.T) {
	c, peer := rawPair(t)
	head, body := []byte("head:"), bytes.Repeat([]byte("b"), 100<<10)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(head)+len(body))))
		got <- b
	}()
	bufs := net.Buffers{head, body}
	n, err := c.WriteBuffers(&bufs)
	if n != int64(len(head)+len(body)) || err != nil {
		t.Fatalf("WriteBuffers = %d, %v", n, err)
	}
	if g := <-got; !bytes.Equal(g, append(head, body...)) {
		t.Fatalf("peer got %d bytes, not head and body", len(g))
	}
}
