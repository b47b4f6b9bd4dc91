package h2

import (
	"testing"
	"time"
)

// TestRapidResetRate: the guard is a rate. A client cancelling a stream
// every 20 ms for ten minutes (a long-lived tab) is never cut off; one
// resetting in a burst is, after the burst allowance.
func TestRapidResetRate(t *testing.T) {
	c := &conn{srv: &Server{}}
	t0 := time.Now()
	for i := range 30000 {
		if c.rapidReset(t0.Add(time.Duration(i) * 20 * time.Millisecond)) {
			t.Fatalf("closed after %d resets at 50/s", i+1)
		}
	}
	c = &conn{srv: &Server{}}
	n := 0
	for !c.rapidReset(t0.Add(time.Duration(n) * time.Millisecond)) {
		n++
		if n > 10000 {
			t.Fatal("1000 resets/s never closed the connection")
		}
	}
	if want := 2*defaultMaxStreams + 100; n < want || n > 2*want {
		t.Errorf("flood closed after %d resets, want about %d", n, want)
	}
}
