package server

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// RouteStats counts the requests of one route of one site. Counters only
// grow; the status page derives rates and recent percentiles from
// differences between samples. Updated with atomics on every request.
type RouteStats struct {
	Site    string // the site's first server name, or "default"
	Route   string // route path prefix
	Handler string // handler type
	file    string

	Requests atomic.Uint64
	Classes  [5]atomic.Uint64 // responses by status class: 1xx .. 5xx
	BytesOut atomic.Uint64    // body bytes written
	Latency  Histogram        // time to complete the response
}

func (s *RouteStats) observe(status int, d time.Duration, n int64) {
	s.Requests.Add(1)
	if c := status/100 - 1; c >= 0 && c < 5 {
		s.Classes[c].Add(1)
	}
	if n > 0 {
		s.BytesOut.Add(uint64(n))
	}
	s.Latency.Observe(d)
}

// Histogram is a fixed-size log-linear latency histogram: four buckets per
// power of two of microseconds, from 1 µs to about 2^36 µs (19 hours).
// Relative error of a percentile is under 25%. No allocation per sample.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
}

const histBuckets = 4 * 37

func bucketOf(us uint64) int {
	if us < 4 {
		return int(us)
	}
	e := bits.Len64(us) - 1 // us in [2^e, 2^(e+1))
	sub := (us >> (e - 2)) & 3
	i := e*4 + int(sub) - 4
	if i >= histBuckets {
		return histBuckets - 1
	}
	return i
}

// bucketUpper returns the exclusive upper bound, in µs, of bucket i.
func bucketUpper(i int) uint64 {
	if i < 4 {
		return uint64(i) + 1
	}
	e := (i + 4) / 4
	sub := uint64((i + 4) % 4)
	return (4 + sub + 1) << (e - 2)
}

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	us := uint64(d / time.Microsecond)
	h.counts[bucketOf(us)].Add(1)
}

// Snapshot copies the counts.
func (h *Histogram) Snapshot() HistogramSnapshot {
	var s HistogramSnapshot
	for i := range h.counts {
		s[i] = h.counts[i].Load()
	}
	return s
}

// HistogramSnapshot is a copy of a Histogram's counts.
type HistogramSnapshot [histBuckets]uint64

// Sub returns the counts recorded between an earlier snapshot and s.
func (s HistogramSnapshot) Sub(earlier HistogramSnapshot) HistogramSnapshot {
	for i := range s {
		s[i] -= earlier[i]
	}
	return s
}

// Quantile returns the q-quantile (0 < q <= 1) as a duration, the upper
// bound of the bucket it falls in; 0 when the histogram is empty.
func (s HistogramSnapshot) Quantile(q float64) time.Duration {
	var total uint64
	for _, c := range s {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range s {
		seen += c
		if seen >= rank {
			return time.Duration(bucketUpper(i)) * time.Microsecond
		}
	}
	return time.Duration(bucketUpper(histBuckets-1)) * time.Microsecond
}
