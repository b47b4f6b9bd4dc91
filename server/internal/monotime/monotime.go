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
