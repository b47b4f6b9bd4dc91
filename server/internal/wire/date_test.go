package wire

import (
	"net/http"
	"testing"
	"time"
)

// TestDate: Date is the current second in IMF-fixdate (RFC 9110 section
// 5.6.7), the same bytes as DateString, and moves on when the second is
// over although within it only the monotonic clock is read.
func TestDate(t *testing.T) {
	check := func() time.Time {
		t.Helper()
		before := time.Now().Truncate(time.Second)
		s0, u0, b, u1, s1 := DateString(), DateUnix(), Date(), DateUnix(), DateString()
		after := time.Now()
		if string(b) != s0 && string(b) != s1 { // a second may end between calls
			t.Fatalf("Date %q, DateString %q and %q", b, s0, s1)
		}
		if u := time.Unix(u0, 0).UTC().Format(http.TimeFormat); u != s0 && u != string(b) {
			t.Fatalf("DateUnix %d is %s, Date %q", u0, u, b)
		}
		if u := time.Unix(u1, 0).UTC().Format(http.TimeFormat); u != string(b) && u != s1 {
			t.Fatalf("DateUnix %d is %s, Date %q", u1, u, b)
		}
		d, err := http.ParseTime(string(b))
		if err != nil {
			t.Fatalf("Date %q: %v", b, err)
		}
		if d.Before(before) || d.After(after) {
			t.Fatalf("Date %v, not within [%v, %v]", d, before, after)
		}
		return d
	}
	first := check()
	for range 3 {
		check()
	}
	// Past the next second boundary, the value has moved on.
	time.Sleep(time.Until(first.Add(time.Second)) + 50*time.Millisecond)
	if next := check(); !next.After(first) {
		t.Fatalf("Date stayed at %v after its second was over", next)
	}
}
