package monotime

import (
	"testing"
	"time"
)

func TestNowAdvances(t *testing.T) {
	a := Now()
	time.Sleep(2 * time.Millisecond)
	b := Now()
	if a <= 0 || b-a < int64(2*time.Millisecond) {
		t.Errorf("Now went from %d to %d over 2 ms", a, b)
	}
}

type stamped int64

func (s stamped) RequestStart() int64 { return int64(s) }

func TestStart(t *testing.T) {
	if got := Start(stamped(42)); got != 42 {
		t.Errorf("Start of a stamped writer = %d, want 42", got)
	}
	before := Now()
	if got := Start(stamped(0)); got < before {
		t.Errorf("Start of an unstamped writer = %d, before Now %d", got, before)
	}
	if got := Start(struct{}{}); got < before {
		t.Errorf("Start of a plain writer = %d, before Now %d", got, before)
	}
}
