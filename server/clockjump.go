package server

import (
	"crypto/tls"
	"sync/atomic"
	"time"
)

// Clock jumps. A device without a battery-backed clock (a Raspberry Pi)
// boots with a wrong wall clock, which gokrazy's ntp later steps to the
// right time; a clock restored from a file can jump either way. A
// self-signed certificate generated before the step carries the wrong
// clock's validity (made "in 2069", it is not yet valid for clients once
// the clock is right; made "in 1970", it may have expired). So the server
// watches for jumps — the wall clock moving other than the monotonic clock
// does — and then checks its self-signed certificates against the new
// time, replacing those it no longer lies inside (selfSigned).

// clockCheckEvery is how often the wall clock is compared with the
// monotonic one; clockJumpMin the difference that counts as a jump
// (slewing by NTP moves the clock by milliseconds, a step by seconds or
// years).
const (
	clockCheckEvery = 10 * time.Second
	clockJumpMin    = 2 * time.Second
)

// clock is what the server reads time from: the wall clock and a
// monotonic one. Tests inject their own.
type clock interface {
	Wall() time.Time
	Mono() time.Duration // monotonic time since some fixed point
}

type systemClock struct{ start time.Time }

func (c systemClock) Wall() time.Time     { return time.Now().Round(0) } // without the monotonic reading
func (c systemClock) Mono() time.Duration { return time.Since(c.start) }

// clockWatch notices jumps of the wall clock.
type clockWatch struct {
	wall time.Time
	mono time.Duration
}

// observe records a reading and returns how far the wall clock moved
// beside the monotonic clock since the previous one (0 at the first).
func (w *clockWatch) observe(wall time.Time, mono time.Duration) time.Duration {
	first := w.wall.IsZero()
	jump := wall.Sub(w.wall) - (mono - w.mono)
	w.wall, w.mono = wall, mono
	if first {
		return 0
	}
	return jump
}

// selfCert is a site's self-signed certificate: replaced in place when a
// clock jump leaves it outside its validity.
type selfCert struct {
	file  string // the site's file, for the log
	names []string
	c     atomic.Pointer[tls.Certificate]
}

// selfCertFor makes c the site's self-signed certificate, which
// recheckSelfSigned keeps valid.
func (t *table) selfCertFor(st *site, c *tls.Certificate) {
	sc := &selfCert{file: st.cfg.File, names: st.cfg.ServerNames}
	sc.c.Store(c)
	st.self = sc
	t.selfCerts = append(t.selfCerts, sc)
}

// tlsCert is the certificate the site serves (nil: none).
func (st *site) tlsCert() *tls.Certificate {
	if st.self != nil {
		return st.self.c.Load()
	}
	return st.cert
}

// clockLoop checks the clock every clockCheckEvery until the server shuts
// down.
func (s *Server) clockLoop() {
	var w clockWatch
	w.observe(s.clock.Wall(), s.clock.Mono())
	tick := time.NewTicker(clockCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		s.clockTick(&w)
	}
}

// clockTick reads the clock; after a jump it rechecks the self-signed
// certificates and returns how many it replaced.
func (s *Server) clockTick(w *clockWatch) int {
	jump := w.observe(s.clock.Wall(), s.clock.Mono())
	if jump < clockJumpMin && jump > -clockJumpMin {
		return 0
	}
	s.log.Info("the clock jumped; checking the self-signed certificates against it", "by", jump.Round(time.Second).String())
	return s.recheckSelfSigned()
}

// recheckSelfSigned replaces every self-signed certificate of the served
// configuration that the wall clock no longer lies inside (or that has a
// week or less left) by one that it does: a stored one, or a new one. It
// returns how many it replaced.
func (s *Server) recheckSelfSigned() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.table == nil {
		return 0
	}
	now := s.clock.Wall()
	n := 0
	for _, sc := range s.table.selfCerts {
		if c := sc.c.Load(); c != nil && selfSignedUsable(c, now) {
			continue
		}
		c, err := selfSigned(s.o.StateDir, sc.names, now)
		if c == nil {
			s.log.Error("cannot replace a self-signed certificate after the clock jumped", "site", sc.file, "err", err)
			continue
		}
		if err != nil {
			s.warnNotStored(sc.file, err)
		}
		sc.c.Store(c)
		n++
		s.log.Info("self-signed certificate replaced: the clock lies outside the old one's validity", "site", sc.file,
			"valid_from", c.Leaf.NotBefore.UTC().Format(time.RFC3339), "valid_until", c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return n
}
