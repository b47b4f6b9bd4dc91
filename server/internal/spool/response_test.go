package spool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// gate is a client that takes nothing until opened.
type gate struct {
	mu     sync.Mutex
	open   chan struct{}
	got    bytes.Buffer
	writes int
	fail   error
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail != nil {
		return 0, g.fail
	}
	g.writes++
	return g.got.Write(p)
}

// pattern is n bytes that show any reordering.
func pattern(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%09d\n", i)
	}
	return b.Bytes()[:n]
}

// TestResponseShortWrittenByFinish: a response that fits in memory and
// is never flushed is written by Finish, in the caller, in one piece.
func TestResponseShortWrittenByFinish(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	b := NewResponse(g, t.TempDir())
	b.Write([]byte("hello, "))
	b.Write([]byte("world"))
	if g.writes != 0 || b.Spilled() {
		t.Fatal("written before Finish, or spilled")
	}
	if err := b.Finish(); err != nil || g.got.String() != "hello, world" {
		t.Errorf("Finish: %v, got %q", err, g.got.String())
	}
}

// TestResponseStalledClient: with a client that takes nothing, Write
// takes a whole 3 MiB response at once (memory, then the file) without
// waiting; when the client reads, it gets every byte in order, and the
// file is gone after Finish.
func TestResponseStalledClient(t *testing.T) {
	dir := t.TempDir()
	g := &gate{open: make(chan struct{})}
	b := NewResponse(g, dir)
	want := pattern(3 << 20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := want; len(p) > 0; {
			k := min(len(p), 7000)
			if _, err := b.Write(p[:k]); err != nil {
				t.Error(err)
				return
			}
			p = p[k:]
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Write waited for a client that does not read")
	}
	if !b.Spilled() {
		t.Error("3 MiB held without the file")
	}
	b.mu.Lock()
	if b.memN > ResponseMem {
		t.Errorf("%d bytes in memory, bound %d", b.memN, ResponseMem)
	}
	b.mu.Unlock()
	close(g.open)
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.got.Bytes(), want) {
		t.Errorf("client got %d bytes, not the %d written in order", g.got.Len(), len(want))
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}

// TestResponseBounded: past the memory and file bounds Write waits for
// the client.
func TestResponseBounded(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	b := NewResponse(g, t.TempDir())
	b.SetBounds(32<<10, 64<<10)
	wrote := make(chan struct{})
	want := pattern(1 << 20)
	go func() {
		b.Write(want)
		close(wrote)
	}()
	select {
	case <-wrote:
		t.Fatal("1 MiB taken with 96 KiB of bounds and a client that reads nothing")
	case <-time.After(300 * time.Millisecond):
	}
	close(g.open)
	<-wrote
	if err := b.Finish(); err != nil || !bytes.Equal(g.got.Bytes(), want) {
		t.Errorf("Finish %v; got %d bytes in order: %v", err, g.got.Len(), bytes.Equal(g.got.Bytes(), want))
	}
}

// TestResponseClientFails: once a write to the client fails, Write
// returns its error and the rest is dropped.
func TestResponseClientFails(t *testing.T) {
	gone := errors.New("client gone")
	g := &gate{open: make(chan struct{}), fail: gone}
	close(g.open)
	b := NewResponse(g, t.TempDir())
	b.Write([]byte("x"))
	b.Flush()
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = b.Write(pattern(10000))
		time.Sleep(time.Millisecond)
	}
	if err != gone {
		t.Errorf("Write: %v, want the client's error", err)
	}
	if err := b.Finish(); err != gone {
		t.Errorf("Finish: %v", err)
	}
}

// TestResponseMemoryShared: all Responses together hold at most their
// shared bound in memory; the others' bytes go to their files.
func TestResponseMemoryShared(t *testing.T) {
	old := memTotal
	memTotal = 64 << 10
	defer func() { memTotal = old }()
	base := memInUse.Load()
	var rs []*Response
	var gates []*gate
	want := pattern(60 << 10)
	for range 4 {
		g := &gate{open: make(chan struct{})}
		b := NewResponse(g, t.TempDir())
		b.Write(want)
		b.Flush()
		rs, gates = append(rs, b), append(gates, g)
	}
	if n := memInUse.Load() - base; n > memTotal {
		t.Errorf("%d bytes in memory, shared bound %d", n, memTotal)
	}
	spilled := 0
	for _, b := range rs {
		if b.Spilled() {
			spilled++
		}
	}
	if spilled < 2 {
		t.Errorf("%d of 4 Responses of 60 KiB spilled with 64 KiB between them", spilled)
	}
	for i, b := range rs {
		close(gates[i].open)
		if err := b.Finish(); err != nil || !bytes.Equal(gates[i].got.Bytes(), want) {
			t.Errorf("response %d: %v, %d bytes", i, err, gates[i].got.Len())
		}
	}
	if n := memInUse.Load(); n != base {
		t.Errorf("%d bytes still counted after Finish", n-base)
	}
}
