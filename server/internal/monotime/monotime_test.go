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
