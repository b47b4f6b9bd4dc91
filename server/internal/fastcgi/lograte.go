package fastcgi

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// errorLog writes the handler's error-log lines: one line per event, with
// the route and the FastCGI address, through a token bucket so that a
// failing php-fpm or a chatty script cannot flood the log. Lines over the
// budget are counted, and the count is reported with the next line that
// passes.
type errorLog struct {
	log *slog.Logger

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

const (
	logBurst = 50 // lines at once
	logRate  = 10 // lines per second after that
)

func newErrorLog(l *slog.Logger) *errorLog {
	return &errorLog{log: l, tokens: logBurst}
}

// allow takes a token; it returns false and counts the line when none is
// left, and returns how many lines were suppressed before this one.
func (e *errorLog) allow() (ok bool, suppressed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	if !e.last.IsZero() {
		e.tokens = min(logBurst, e.tokens+now.Sub(e.last).Seconds()*logRate)
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

func (e *errorLog) write(level slog.Level, msg string, args ...any) {
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
