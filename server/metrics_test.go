package server

import (
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<20; us += 1 + us/64 {
		b := bucketOf(us)
		if b < prev {
			t.Fatalf("bucket of %d µs = %d, below previous %d", us, b, prev)
		}
		if up := bucketUpper(b); us >= up {
			t.Fatalf("%d µs in bucket %d with upper bound %d", us, b, up)
		}
		if b > 0 && us < bucketUpper(b-1) {
			t.Fatalf("%d µs in bucket %d but below bucket %d's upper bound %d", us, b, b-1, bucketUpper(b-1))
		}
		prev = b
	}
	var h Histogram
	for i := 0; i < 99; i++ {
		h.Observe(time.Millisecond)
	}
	h.Observe(time.Second)
	s := h.Snapshot()
	if p50 := s.Quantile(0.5); p50 < time.Millisecond || p50 > 1300*time.Microsecond {
		t.Errorf("p50 = %v", p50)
	}
	if p100 := s.Quantile(1); p100 < time.Second || p100 > 1300*time.Millisecond {
		t.Errorf("max = %v", p100)
	}
	if n := testing.AllocsPerRun(100, func() { h.Observe(3 * time.Millisecond) }); n != 0 {
		t.Errorf("Observe allocates %v", n)
	}
}
