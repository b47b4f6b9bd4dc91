package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/server/status"
)

// rateTracker keeps the counters as they were at the previous 10 s sample,
// so the status page can show recent rates and percentiles rather than
// averages since start.
type rateTracker struct {
	mu   sync.Mutex
	at   time.Time
	prev map[*RouteStats]routeSample
}

type routeSample struct {
	requests uint64
	hist     HistogramSnapshot
}

// Snapshot implements status.Source: the board, its sensors, Arka's memory,
// per-route counters with rates since the previous sample, and the caches.
func (s *Server) Snapshot() status.Snapshot {
	now := time.Now()
	snap := status.Snapshot{
		Time:      now,
		Version:   Version,
		StartedAt: s.started,
		Board:     status.BoardInfoFrom(s.o.Board),
		Sensors:   board.ReadSensors(s.o.BoardRoot, s.o.DiskPath),
		Memory:    status.ReadProcessMemory(),
		Problems:  s.Problems(),
		Appliance: status.ReadAppliance(),
	}
	s.probMu.Lock()
	snap.Serving = s.serving
	s.probMu.Unlock()
	if s.o.Thermal != nil {
		snap.Thermal = s.o.Thermal.State()
	}
	if s.o.FanState != nil {
		snap.Fan = s.o.FanState()
	}
	if s.o.Conditions != nil {
		name := ""
		if s.o.LEDName != nil {
			name = s.o.LEDName()
		}
		snap.State = led.StatusOf(s.o.Conditions, name)
	}
	s.rates.mu.Lock()
	prevAt, prev := s.rates.at, s.rates.prev
	s.rates.mu.Unlock()
	dt := now.Sub(prevAt).Seconds()
	for _, rs := range s.RouteStats() {
		var cls status.StatusClasses
		for i := range cls {
			cls[i] = rs.Classes[i].Load()
		}
		req := rs.Requests.Load()
		h := rs.Latency.Snapshot()
		out := status.RouteStats{Site: rs.Site, Route: rs.Route, Handler: rs.Handler, Requests: req, Status: cls}
		if p, ok := prev[rs]; ok && dt > 0 {
			out.PerSecond = float64(req-p.requests) / dt
			h = h.Sub(p.hist)
		}
		out.P50Seconds = h.Quantile(0.50).Seconds()
		out.P99Seconds = h.Quantile(0.99).Seconds()
		snap.Routes = append(snap.Routes, out)
	}
	if t := s.served.Load(); t != nil {
		seen := map[string]bool{} // routes to one address share a pool
		for _, h := range t.fastcgi {
			fs := h.Stats()
			if seen[fs.Address] {
				continue
			}
			seen[fs.Address] = true
			snap.FastCGI = append(snap.FastCGI, status.FastCGIPool{
				Address: fs.Address, MaxConns: fs.MaxConns, Busy: fs.Busy, Idle: fs.Idle,
				Queued: fs.Queued, QueueSize: fs.QueueSize, Rejected: fs.Rejected, TimedOut: fs.TimedOut,
				QueueWaits: fs.QueueWaits, QueueWaitSeconds: fs.QueueWaitTotal.Seconds(), QueueWaitMaxSeconds: fs.QueueWaitLongest.Seconds(),
			})
		}
	}
	if s.o.PHP != nil {
		snap.PHPFPM = s.o.PHP.Status()
	}
	if m := s.acme.Load(); m != nil {
		for _, c := range m.Statuses() {
			snap.Certificates = append(snap.Certificates, status.Certificate{Name: c.Name, State: c.State, CA: c.CA,
				Issuer: c.Issuer, NotBefore: c.NotBefore, NotAfter: c.NotAfter, NextAttempt: c.NextRenewal,
				LastError: c.LastError, LastErrorAt: c.LastErrorAt})
		}
		snap.ClockWaiting = m.ClockWaiting() && len(snap.Certificates) > 0
	}
	cs := s.cache.Stats()
	snap.Caches = []status.CacheStats{
		{Name: "open files and content", Entries: uint64(cs.FileEntries), Bytes: int64(cs.FileBytes),
			BudgetBytes: int64(cs.FileBudget), Hits: cs.FileHits, Misses: cs.FileMisses},
		{Name: "compressed", Entries: uint64(cs.VariantEntries), Bytes: int64(cs.VariantBytes),
			BudgetBytes: int64(cs.VariantBudget), Hits: cs.VariantHits, Misses: cs.VariantMisses},
	}
	if t := s.served.Load(); t != nil {
		for _, p := range t.proxies {
			for _, u := range p.Stats() {
				snap.Upstreams = append(snap.Upstreams, status.UpstreamStats{Address: u.Address, Healthy: u.Healthy,
					ActiveConns: int(u.Active), IdleConns: u.Idle, Requests: u.Requests, Failures: u.Failures})
			}
		}
	}
	return snap
}

// sampleLoop feeds the history every 10 s, remembers counters for rates and
// turns certificate errors into conditions.
func (s *Server) sampleLoop() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.done
		cancel()
	}()
	s.history.Run(ctx, status.SampleInterval, s, func(snap *status.Snapshot) {
		certConditions(s.o.Conditions, snap.Certificates)
		m := map[*RouteStats]routeSample{}
		for _, rs := range s.RouteStats() {
			m[rs] = routeSample{requests: rs.Requests.Load(), hist: rs.Latency.Snapshot()}
		}
		s.rates.mu.Lock()
		s.rates.at, s.rates.prev = time.Now(), m
		s.rates.mu.Unlock()
	})
}

// Requests returns the number of requests answered since start, over all
// routes: the activity counter of the LED's serving pattern (read once a
// second).
func (s *Server) Requests() uint64 {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	var n uint64
	for _, st := range s.stats {
		n += st.Requests.Load()
	}
	return n
}

// certConditions makes each certificate in the "error" state (the last
// attempt to obtain or renew it failed) a Degraded condition "cert:NAME",
// and clears those of certificates that recovered or are gone. conds may be
// nil (no conditions kept).
func certConditions(conds *led.Conditions, certs []status.Certificate) {
	if conds == nil {
		return
	}
	bad := map[string]bool{}
	for _, c := range certs {
		if c.State != "error" {
			continue
		}
		name := "cert:" + c.Name
		bad[name] = true
		msg := "certificate for " + c.Name + " could not be obtained"
		if c.Valid(time.Now()) {
			msg = "certificate for " + c.Name + " could not be renewed (the current one is valid until " + c.NotAfter.UTC().Format("2006-01-02") + ")"
		}
		if c.LastError != "" {
			msg += ": " + c.LastError
		}
		conds.Set(name, led.Degraded, msg)
	}
	for _, c := range conds.List() {
		if strings.HasPrefix(c.Name, "cert:") && !bad[c.Name] {
			conds.Clear(c.Name)
		}
	}
}
