package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapGoalAfterGC collects, waits for the floor's cleanup to set GOGC
// (bounded: 2 s), and returns the runtime's heap goal and GOGC.
func heapGoalAfterGC(t *testing.T, wantPercent func(uint64) bool) (goal, percent uint64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the cleanup goroutine runs after the cycle
		goal, percent = readMetric("/gc/heap/goal:bytes"), readMetric("/gc/gogc:percent")
		if wantPercent(percent) || time.Now().After(deadline) {
			return goal, percent
		}
	}
}

// TestGCFloor runs the floor in this process: with a small live heap the
// collector's goal is the floor; with a live heap above half the floor it is
// Go's default, twice the live heap; stopping restores GOGC=100.
func TestGCFloor(t *testing.T) {
	if readMetric("/gc/gogc:percent") != 100 {
		t.Skip("GOGC is set in the environment")
	}
	const floor = 48 << 20
	stop := startGCFloor(floor)
	defer debug.SetGCPercent(100)

	goal, p := heapGoalAfterGC(t, func(p uint64) bool { return p > 100 })
	live := readMetric("/gc/heap/live:bytes")
	if p <= 100 || goal > floor || goal < floor-floor/50 {
		t.Fatalf("live heap %d: goal %d with GOGC %d, want the floor %d", live, goal, p, floor)
	}
	t.Logf("live heap %d: goal %d, GOGC %d", live, goal, p)

	// A live heap of 40 MiB: twice that is above the floor.
	keep := make([][]byte, 40)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
	}
	goal, p = heapGoalAfterGC(t, func(p uint64) bool { return p == 100 })
	live = readMetric("/gc/heap/live:bytes")
	if p != 100 || goal < 2*live || goal > 2*live+8<<20 {
		t.Errorf("live heap %d: goal %d with GOGC %d, want about twice the live heap", live, goal, p)
	}
	runtime.KeepAlive(keep)

	t.Logf("live heap %d: goal %d, GOGC %d", live, goal, p)
	stop()
	if goal, p = heapGoalAfterGC(t, func(p uint64) bool { return true }); p != 100 {
		t.Errorf("after stop: GOGC %d, goal %d", p, goal)
	}
}

// TestGCFloorOff: no floor leaves GOGC alone.
func TestGCFloorOff(t *testing.T) {
	before := readMetric("/gc/gogc:percent")
	startGCFloor(0)()
	runtime.GC()
	if p := readMetric("/gc/gogc:percent"); p != before {
		t.Errorf("floor 0 changed GOGC %d -> %d", before, p)
	}
}
