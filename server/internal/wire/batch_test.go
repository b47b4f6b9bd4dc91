package wire

import (
	"io"
	"net"
	"testing"
)

// Writes between Hold and Flush reach the peer in one write, in order,
// after any written before; writes outside a batch go straight through.
func TestBatchConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	got := make(chan []string, 1)
	go func() {
		var reads []string
		buf := make([]byte, 1024)
		for {
			n, err := b.Read(buf)
			if n > 0 {
				reads = append(reads, string(buf[:n]))
			}
			if err != nil {
				got <- reads
				return
			}
		}
	}()
	bc := &BatchConn{Conn: a}
	io.WriteString(bc, "one ")
	bc.Hold(make([]byte, 0, 8))
	io.WriteString(bc, "two ")
	io.WriteString(bc, "three ")
	if buf, err := bc.Flush(); err != nil || string(buf) != "two three " {
		t.Fatalf("Flush: %q, %v", buf, err)
	}
	io.WriteString(bc, "four")
	if buf, err := bc.Flush(); err != nil || len(buf) != 0 {
		t.Fatalf("Flush without a batch: %q, %v", buf, err)
	}
	a.Close()
	reads := <-got
	want := []string{"one ", "two three ", "four"}
	if len(reads) != len(want) {
		t.Fatalf("reads %q, want %q", reads, want)
	}
	for i := range want {
		if reads[i] != want[i] {
			t.Fatalf("reads %q, want %q", reads, want)
		}
	}
}
