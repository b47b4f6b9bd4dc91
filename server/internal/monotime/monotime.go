// Package monotime is a monotonic clock for instants kept as integers (in
// atomics): nanoseconds since the process started, read from Go's
// monotonic clock, so a wall clock set backwards or forwards (NTP on a
// board without a real-time clock, gokrazy restoring its saved time) does
// not move them.
package monotime

import "time"

var start = time.Now()

// Now returns the nanoseconds since the process started, at least 1 (0 can
// serve as "unset").
func Now() int64 { return int64(time.Since(start)) + 1 }

// Of returns t (a reading of time.Now, with its monotonic clock) in Now's
// units, for a caller that has read the clock already.
func Of(t time.Time) int64 { return int64(t.Sub(start)) + 1 }

// Stamped is implemented by a response writer that knows when its request
// was received, in Now's units: the server's dispatch reads the clock once
// per request (package server's recorder), and a handler that needs "now"
// (the static file cache deciding whether a stat is still trusted) asks
// it instead of reading the clock again. A clock read costs 20 to 100 ns
// (the latter on virtual machines), which is several per cent of a
// cached small file's handler time.
type Stamped interface {
	RequestStart() int64
}

// Start returns w's RequestStart when w is Stamped and knows it (non-zero),
// else Now().
func Start(w any) int64 {
	if s, ok := w.(Stamped); ok {
		if t := s.RequestStart(); t != 0 {
			return t
		}
	}
	return Now()
}
