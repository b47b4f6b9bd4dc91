package status

import (
	"context"
	"math"
	"sync"
	"time"
)

// Sample resolution and length of the history: one hour at 10 s.
const (
	SampleInterval = 10 * time.Second
	HistoryLen     = 360
)

// sample is one history point. NaN marks a missing value (no temperature sensor,
// first sample without a rate).
type sample struct {
	unix      int64
	tempC     float32
	load1     float32
	reqPerSec float32
}

// History is a fixed-size ring of the last HistoryLen samples of temperature, load
// and requests per second. Observe does not allocate. It is safe for concurrent use.
type History struct {
	mu        sync.Mutex
	buf       [HistoryLen]sample
	n, next   int
	lastTotal uint64
	lastAt    time.Time
}

// NewHistory returns an empty history.
func NewHistory() *History { return &History{} }

// Observe records one sample taken at now from s: the SoC temperature, the 1-minute
// load and the request rate since the previous Observe (from s's request totals).
// A counter that went backwards (a reload that reset counters) gives no rate for
// that sample.
func (h *History) Observe(now time.Time, s *Snapshot) {
	nan := float32(math.NaN())
	smp := sample{unix: now.Unix(), tempC: nan, load1: nan, reqPerSec: nan}
	if s.Sensors.TempC != nil {
		smp.tempC = float32(*s.Sensors.TempC)
	}
	if s.Sensors.Load != nil {
		smp.load1 = float32(s.Sensors.Load.Load1)
	}
	total := s.TotalRequests()

	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.lastAt.IsZero() && total >= h.lastTotal {
		if dt := now.Sub(h.lastAt).Seconds(); dt > 0 {
			smp.reqPerSec = float32(float64(total-h.lastTotal) / dt)
		}
	}
	h.lastTotal, h.lastAt = total, now
	h.buf[h.next] = smp
	h.next = (h.next + 1) % HistoryLen
	if h.n < HistoryLen {
		h.n++
	}
}

// Len is the number of samples held (at most HistoryLen).
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// Run samples src every interval (SampleInterval if <= 0) until ctx is done. The
// server starts it in a goroutine it owns; after is called with each snapshot (nil
// allowed), for example to feed a board.Thermal.
func (h *History) Run(ctx context.Context, interval time.Duration, src Source, after func(*Snapshot)) {
	if interval <= 0 {
		interval = SampleInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		snap := src.Snapshot()
		h.Observe(time.Now(), &snap)
		if after != nil {
			after(&snap)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// HistoryView is the history oldest first, for JSON and rendering; nil entries are
// missing values.
type HistoryView struct {
	IntervalSeconds int        `json:"interval_seconds"`
	Unix            []int64    `json:"unix"`
	TempC           []*float64 `json:"temp_c"`
	Load1           []*float64 `json:"load1"`
	ReqPerSec       []*float64 `json:"req_per_sec"`
}

// View copies the samples out, oldest first.
func (h *History) View() *HistoryView {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := &HistoryView{
		IntervalSeconds: int(SampleInterval / time.Second),
		Unix:            make([]int64, h.n), TempC: make([]*float64, h.n),
		Load1: make([]*float64, h.n), ReqPerSec: make([]*float64, h.n),
	}
	start := (h.next - h.n + HistoryLen) % HistoryLen
	ptr := func(f float32) *float64 {
		if math.IsNaN(float64(f)) {
			return nil
		}
		// Samples are float32: round away the digits float32 cannot hold
		// (0.8 rather than 0.800000011920929).
		d := math.Round(float64(f)*1000) / 1000
		return &d
	}
	for i := 0; i < h.n; i++ {
		s := h.buf[(start+i)%HistoryLen]
		v.Unix[i], v.TempC[i], v.Load1[i], v.ReqPerSec[i] = s.unix, ptr(s.tempC), ptr(s.load1), ptr(s.reqPerSec)
	}
	return v
}
