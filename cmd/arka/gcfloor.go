package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/arkaweb/arka/board"
)

// gcFloor keeps the collector's heap goal at max(2 x live heap, floor)
// (board.Budget.GCHeapFloorBytes): after every collection it sets GOGC from
// the live heap that collection found (board.GCPercent). Go's default goal,
// twice the live heap, is a few MiB for a web server whose live heap is its
// connections: 4-9 collections a second under load; with a 16 MiB floor,
// one or two (figures in the commits that set the floor).
//
// It learns that a cycle ended from a cleanup (runtime.AddCleanup) on an
// object nothing references: the cleanup runs once a collection has found
// the object unreachable, sets GOGC and arms the next one. The memory limit
// (GOMEMLIMIT) still bounds the heap: the runtime collects at the lower of
// the two goals.
type gcFloor struct {
	floor int64

	mu      sync.Mutex
	stopped bool
	percent int // GOGC in force
	samples [3]metrics.Sample
}

// gcSentinel is the unreferenced object whose cleanup marks the end of a
// collection. It holds a pointer so that it is never a tiny allocation (a
// tiny block is freed only when all objects sharing it are).
type gcSentinel struct {
	_ *byte
	_ [8]byte
}

// startGCFloor sets GOGC so that the first goal is the floor and follows
// every collection; stop restores GOGC=100. floor <= 0 sets nothing.
func startGCFloor(floor int64) (stop func()) {
	if floor <= 0 {
		return func() {}
	}
	g := &gcFloor{floor: floor}
	g.samples[0].Name = "/gc/heap/live:bytes"
	g.samples[1].Name = "/gc/scan/stack:bytes"
	g.samples[2].Name = "/gc/scan/globals:bytes"
	// Before the first collection nothing is marked: the goal is the heap
	// minimum, which GOGC scales (board.GCPercent).
	g.percent = board.GCPercent(floor, 0, 0)
	debug.SetGCPercent(g.percent)
	g.arm()
	return func() {
		g.mu.Lock()
		g.stopped = true
		g.mu.Unlock()
		debug.SetGCPercent(100)
	}
}

func (g *gcFloor) arm() {
	runtime.AddCleanup(&gcSentinel{}, (*gcFloor).cycle, g)
}

// cycle runs after a collection: GOGC for the next goal, then the next
// sentinel.
func (g *gcFloor) cycle() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	metrics.Read(g.samples[:])
	marked := g.samples[0].Value.Uint64()
	roots := g.samples[1].Value.Uint64() + g.samples[2].Value.Uint64()
	if p := board.GCPercent(g.floor, marked, roots); p != g.percent {
		g.percent = p
		debug.SetGCPercent(p)
	}
	g.arm()
}
