//go:build unix

package proxy

import (
	"net"
	"testing"

	"github.com/arkaweb/arka/server/internal/wire"
)

// TestAliveAllocs: the peek every reused upstream connection gets (one
// per proxied request) allocates nothing, and still tells an open, quiet
// connection from one with bytes nobody asked for.
func TestAliveAllocs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c := &conn{raw: wire.Raw(nc)}
	c.initAlive()
	if !c.alive() {
		t.Fatal("an open, quiet connection is not alive")
	}
	if n := testing.AllocsPerRun(100, func() { c.alive() }); n != 0 {
		t.Errorf("alive: %v allocations per peek, want 0", n)
	}
	peer.Write([]byte("x"))
	for i := 0; c.alive(); i++ {
		if i > 1000 {
			t.Fatal("a connection with unasked-for bytes is still alive")
		}
	}
}
