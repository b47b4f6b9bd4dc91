package spool

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"syscall"
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
	b := NewResponse(g, t.TempDir(), nil, "")
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
	b := NewResponse(g, dir, nil, "")
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
	b := NewResponse(g, t.TempDir(), nil, "")
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
	b := NewResponse(g, t.TempDir(), nil, "")
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
		b := NewResponse(g, t.TempDir(), nil, "")
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

// stalled writes want to a new Response of bud for the client at addr
// whose client takes nothing until gate opens; the returned wait reports
// whether the Write returned within d.
func stalled(t *testing.T, g *gate, dir string, bud *Budget, addr string, want []byte) (*Response, func(d time.Duration) bool) {
	b := NewResponse(g, dir, bud, addr)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := want; len(p) > 0; p = p[min(len(p), 32<<10):] {
			if _, err := b.Write(p[:min(len(p), 32<<10)]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	return b, func(d time.Duration) bool {
		select {
		case <-done:
			return true
		case <-time.After(d):
			return false
		}
	}
}

// QA M1: response files count against the spool Budget: one client's
// share, and for all responses together ResponseShare of it, so uploads
// keep the rest. Past it Write waits for the client, which still gets
// every byte in order; Finish gives the budget back.
func TestResponseBudget(t *testing.T) {
	dir := t.TempDir()
	want := pattern(3 << 20)
	for _, tc := range []struct {
		name   string
		bud    *Budget
		addrs  [2]string
		bound  int64 // most bytes the two files may hold
		upload bool  // a body of 1.5 MiB still fits meanwhile
	}{
		{"client share", NewBudget(8, 8<<20, 8, 1<<20, nil), [2]string{"192.0.2.1:1", "192.0.2.1:2"}, 1 << 20, false},
		{"response share", NewBudget(8, 4<<20, 8, 4<<20, nil), [2]string{"192.0.2.1:1", "192.0.2.2:1"}, 2 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gs [2]*gate
			var rs [2]*Response
			var waits [2]func(time.Duration) bool
			for i := range gs {
				gs[i] = &gate{open: make(chan struct{})}
				rs[i], waits[i] = stalled(t, gs[i], dir, tc.bud, tc.addrs[i], want)
			}
			for i := range waits {
				if waits[i](300 * time.Millisecond) {
					t.Errorf("response %d: all 3 MiB taken past a budget of %d bytes", i, tc.bound)
				}
			}
			if files, n := tc.bud.Use(); n > tc.bound || files > 2 {
				t.Errorf("budget holds %d files, %d bytes; bound %d bytes", files, n, tc.bound)
			}
			if tc.upload {
				body, err := Read(bytes.NewReader(want[:3<<19]), 3<<19, make([]byte, 16<<10), 0, dir, make([]byte, 32<<10), tc.bud, "192.0.2.3:1")
				if err != nil {
					t.Errorf("an upload while responses hold their share: %v", err)
				}
				body.Close()
			}
			for i := range gs {
				close(gs[i].open)
				if !waits[i](10 * time.Second) {
					t.Fatalf("response %d: Write still waits for a client that reads", i)
				}
				if err := rs[i].Finish(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(gs[i].got.Bytes(), want) {
					t.Errorf("client %d got %d bytes, not the %d written in order", i, gs[i].got.Len(), len(want))
				}
			}
			if files, n := tc.bud.Use(); files != 0 || n != 0 {
				t.Errorf("after Finish: %d files, %d bytes", files, n)
			}
		})
	}
}

// QA A5: the spool takes at most half of its file system's free space,
// read when a file is opened.
func TestBudgetDiskFree(t *testing.T) {
	dir := t.TempDir()
	bud := NewBudget(8, 1<<62, 8, 1<<62, nil)
	bud.checkDisk(dir)
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Skip(err)
	}
	room := int64(st.Bavail) * int64(st.Bsize) / DiskShare
	if d := bud.disk; !bud.known || d > room+room/50+1<<20 || d < room-room/50-1<<20 {
		t.Fatalf("bound %d bytes (known %v), want about %d", d, bud.known, room)
	}
	// Past the bound (made small here, as a nearly full disk would) a
	// body is refused; the Read's own statfs gives the real bound back.
	bud.disk = 100
	if bud.take(netip.Prefix{}, 0, 101, false) {
		t.Error("bytes past the free space taken")
	}
	if room > 1<<20 {
		b, err := Read(bytes.NewReader(make([]byte, 64<<10)), 64<<10, make([]byte, 1024), 0, dir, make([]byte, 4096), bud, "192.0.2.1:1")
		if err != nil {
			t.Errorf("a body with room on the disk: %v", err)
		}
		b.Close()
	} else {
		t.Errorf("test directory's file system has %d bytes free", 2*room)
	}
}
