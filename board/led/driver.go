package led

import (
	"context"
	"log/slog"
	"time"
)

// Driver blinks an LED with the pattern of its Source's state.
type Driver struct {
	LED    *LED
	Source Source
	// Activity, when set, returns a counter that grows with each request
	// served (the server's total request count). While it grows, the serving
	// pattern flickers dark for ActivityFlicker once a second.
	Activity func() uint64
	Log      *slog.Logger // write failures (nil: slog.Default())

	// cycle, when set (tests), is called at the start of each pattern cycle.
	cycle func(State)
}

// Run takes the LED and shows the Source's state until ctx ends, then gives the
// LED back to the kernel's default trigger. A state change interrupts the
// current cycle at once. It returns the error of Take (the LED is then left
// alone) or of Release. A failing brightness write is logged once and retried
// with the next step.
func (d *Driver) Run(ctx context.Context) error {
	log := d.Log
	if log == nil {
		log = slog.Default()
	}
	if err := d.LED.Take(); err != nil {
		return err
	}
	var lastCount uint64
	if d.Activity != nil {
		lastCount = d.Activity()
	}
	logged := false
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		changed := d.Source.Changed() // before LEDState: no change is missed
		st := d.Source.LEDState()
		steps := Pattern(st)
		if st == Serving && d.Activity != nil {
			if n := d.Activity(); n != lastCount {
				lastCount = n
				steps = []Step{{false, ActivityFlicker}, {true, time.Second - ActivityFlicker}}
			}
		}
		if d.cycle != nil {
			d.cycle(st)
		}
	cycle:
		for _, s := range steps {
			if err := d.LED.Set(s.On); err != nil && !logged {
				log.Warn("activity LED: write failed", "led", d.LED.Name, "err", err)
				logged = true
			}
			t.Reset(s.For)
			select {
			case <-ctx.Done():
				return d.LED.Release()
			case <-changed:
				t.Stop() // Go 1.23 timers: no stale tick is delivered after Stop
				break cycle
			case <-t.C:
			}
		}
	}
}
