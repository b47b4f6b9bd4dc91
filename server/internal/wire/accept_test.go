package wire

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// failingListener fails its first accepts with errs, then accepts from ln.
type failingListener struct {
	net.Listener
	errs []error
}

func (l *failingListener) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: err}
	}
	return l.Listener.Accept()
}

// Accept outlives any accept error but a closed listener: out of file
// descriptors or kernel memory, the listener serves again once that passes.
func TestAcceptRetriesAllButClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &failingListener{Listener: ln, errs: []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED}}
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			defer c.Close()
			time.Sleep(2 * time.Second)
		}
	}()
	var delay time.Duration
	var seen []error
	c, err := Accept(fl, &delay, func(err error) { seen = append(seen, err) })
	if err != nil {
		t.Fatalf("Accept gave up: %v", err)
	}
	c.Close()
	if len(seen) != 5 || delay != 0 {
		t.Errorf("errors retried %v, delay after a connection %v; want the five, 0", seen, delay)
	}
	ln.Close()
	done := make(chan error, 1)
	go func() { _, err := Accept(fl, &delay, nil); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Accept on a closed listener returned a connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept on a closed listener did not return")
	}
}
