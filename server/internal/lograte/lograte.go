// Package lograte bounds error-log lines that clients can cause: a failing
// upstream, a chatty script, a request for a file Arka may not read. Lines
// pass through a token bucket, so that no client can flood the log; lines
// over the budget are counted, and the count is reported with the next
// line that passes.
package lograte

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Log writes error-log lines, at most Burst at once and Rate per second
// after that. Safe for concurrent use.
type Log struct {
	log *slog.Logger

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

const (
	Burst = 50 // lines at once
	Rate  = 10 // lines per second after that
)

// New returns a Log writing to l; nil discards the lines.
func New(l *slog.Logger) *Log {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &Log{log: l, tokens: Burst}
}

// allow takes a token; it returns false and counts the line when none is
// left, and returns how many lines were suppressed before this one.
func (e *Log) allow() (ok bool, suppressed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	if !e.last.IsZero() {
		e.tokens = min(Burst, e.tokens+now.Sub(e.last).Seconds()*Rate)
	}
	e.last = now
	if e.tokens < 1 {
		e.suppressed++
		return false, 0
	}
	e.tokens--
	s := e.suppressed
	e.suppressed = 0
	return true, s
}

// Write logs msg with args at level unless the budget is spent; a line
// that follows suppressed ones says how many with "suppressed_before".
func (e *Log) Write(level slog.Level, msg string, args ...any) {
	if !e.log.Enabled(context.Background(), level) {
		return
	}
	ok, suppressed := e.allow()
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed_before", suppressed)
	}
	e.log.Log(context.Background(), level, msg, args...)
}
