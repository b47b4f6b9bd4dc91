package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// bar prints build and flash progress: one line per stage and, on a
// terminal, a bar redrawn in place while bytes are copied; elsewhere (a
// log, a pipe) a line at every 10 %.
type bar struct {
	w      io.Writer
	tty    bool
	lines  bool // not on a terminal: also a progress line every few seconds
	last   time.Time
	stage  string
	start  time.Time
	decile int64 // the last 10 % step printed, off a terminal
}

func newBar(w io.Writer) *bar {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &bar{w: w, tty: tty}
}

func (b *bar) Stage(n, of int, name string) {
	b.stage = fmt.Sprintf("[%d/%d] %s", n, of, name)
	b.start = time.Now()
	b.decile = -1
	fmt.Fprintln(b.w, b.stage)
}

func (b *bar) Bytes(done, total int64) {
	if total <= 0 {
		return
	}
	if !b.tty {
		d := done * 10 / total
		if d > b.decile || b.lines && time.Since(b.last) >= 2*time.Second {
			b.last, b.decile = time.Now(), d
			fmt.Fprintf(b.w, "  %d%%  %.1f/%.1f MiB\n", done*100/total, float64(done)/(1<<20), float64(total)/(1<<20))
		}
		return
	}
	if time.Since(b.last) < 100*time.Millisecond && done < total {
		return
	}
	b.last = time.Now()
	const width = 40
	filled := int(done * width / total)
	rate := float64(done) / (1 << 20) / max(time.Since(b.start).Seconds(), 0.001)
	fmt.Fprintf(b.w, "\r  [%s%s] %3d%%  %d/%d MiB  %.0f MiB/s ", strings.Repeat("#", filled), strings.Repeat(" ", width-filled), done*100/total, done>>20, total>>20, rate)
	if done == total {
		fmt.Fprintln(b.w)
	}
}

// Note prints a line of its own (update progress).
func (b *bar) Note(msg string) {
	if b.start.IsZero() {
		fmt.Fprintf(b.w, "  %s\n", msg)
		return
	}
	fmt.Fprintf(b.w, "  %s (%s into this stage)\n", msg, time.Since(b.start).Round(100*time.Millisecond))
}
