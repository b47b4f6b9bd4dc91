package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/arkaweb/arka/board/fan"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
)

// The board's fan and activity LED follow [global] fan and [global] led at
// start and at every reload (the issue 13 rule: a [global] change on reload
// is applied or refused with a message, never silently ignored):
//
//   - a fan added, removed, or moved to another pin: the new one is looked
//     up and driven first, then the old pin is driven low and released
//     (fan.Fan.Close); new thresholds on the same pin apply at the next
//     reading. A new pin this board does not have, or whose first write
//     fails, is refused: logged, the "fan" condition (Degraded) says so
//     with the key's file:line:col, and the fan that ran keeps running;
//   - on a Raspberry Pi that shows no GPIO at all, the configured fan is a
//     Degraded "fan" condition (on a PC, a log line: the configuration is
//     meant for another board);
//   - when Arka stops, the fan is left running and its pin released
//     (fanControl.close);
//   - led = false gives the LED back to the kernel's default trigger at
//     once; led = true (or the key removed) takes it again.
//
// The "fan" condition also shows a pin whose writes fail while running
// (the fan state's error), until a write works again.

// fanControl owns the GPIO fan of [global] fan. Its methods are safe for
// concurrent use (the thermal ticker feeds it while a reload applies).
type fanControl struct {
	log   *slog.Logger
	conds *led.Conditions // the "fan" condition is this type's

	gpioHeader bool // the board has a GPIO header (a Raspberry Pi)

	mu      sync.Mutex
	cfg     *config.Fan // the settings the fan runs with; nil: none
	f       *fan.Fan    // nil when no fan is driven
	refused string      // why the configured fan is not the one driven ("": it is)
	closed  bool        // close was called: Arka stops, the fan is left running
}

// sameFan reports whether a and b configure the same fan (pin and
// thresholds; nil is no fan).
func sameFan(a, b *config.Fan) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Pin == b.Pin && a.On == b.On && a.Off == b.Off
}

// apply makes fc (nil: none) the fan driven, or refuses it and keeps the
// fan that runs (see the comment above).
func (c *fanControl) apply(fc *config.Fan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	defer c.syncLocked()
	if sameFan(fc, c.cfg) {
		c.refused = ""
		return
	}
	c.refused = ""
	if fc == nil {
		c.closeLocked("[global] fan removed")
		c.cfg = nil
		return
	}
	if c.f != nil && c.f.Pin() == fc.Pin {
		c.f.SetThresholds(fc.On, fc.Off)
		c.cfg = fc
		c.log.Info("[global] fan applied", "pin", fc.Pin, "on_c", fc.On, "off_c", fc.Off)
		return
	}
	file, line, col := fc.PinPosition()
	where := fmt.Sprintf("%s:%d:%d", file, line, col)
	pin, err := fan.Lookup(fc.Pin)
	switch {
	case errors.Is(err, fan.ErrNoGPIO) && !c.gpioHeader:
		// A PC or VM: the configuration is meant for another board.
		c.closeLocked("[global] fan changed")
		c.cfg = fc
		c.log.Warn("fan not driven: this machine has no GPIO", "pin", fc.Pin, "config", where)
		return
	case errors.Is(err, fan.ErrNoGPIO):
		// A Raspberry Pi has the header: the fan is wired and does not run.
		c.closeLocked("[global] fan changed")
		c.cfg = fc
		c.refused = fmt.Sprintf("%s: fan pin %q not driven: this Raspberry Pi shows Arka no GPIO (periph.io found no pins, and there is no /dev/gpiochip*): the fan does not run", where, fc.Pin)
		c.log.Error("fan not driven: this Raspberry Pi shows no GPIO", "pin", fc.Pin, "config", where)
		return
	case err != nil:
		c.refuseLocked(where, err)
		return
	}
	if c.f != nil && c.f.Uses(pin) {
		// Another name of the pin driven ("P1_8" for "GPIO14"): releasing
		// the old would release the new.
		c.f = fan.New(pin, fc.On, fc.Off, c.log)
		c.cfg = fc
		c.log.Info("fan driven", "pin", fc.Pin, "on_c", fc.On, "off_c", fc.Off)
		return
	}
	// The new pin is set up and written before the old one is let go: a
	// pin that exists but cannot be written must not stop the cooling.
	nf := fan.New(pin, fc.On, fc.Off, c.log)
	if e := nf.State().Error; e != "" && c.f != nil {
		nf.Close()
		c.refuseLocked(where, fmt.Errorf("fan pin %s cannot be driven: %s", fc.Pin, e))
		return
	}
	c.closeLocked("[global] fan moved to " + fc.Pin)
	c.f = nf
	c.cfg = fc
	c.log.Info("fan driven", "pin", fc.Pin, "on_c", fc.On, "off_c", fc.Off)
}

// refuseLocked records why the configured fan at where is not driven; the
// fan that runs, if any, keeps running.
func (c *fanControl) refuseLocked(where string, err error) {
	c.refused = fmt.Sprintf("%s: %v", where, err)
	if c.f != nil {
		c.refused += fmt.Sprintf("; the fan on %s keeps running (on %g °C, off %g °C)", c.f.Pin(), c.cfg.On, c.cfg.Off)
		c.log.Error("[global] fan refused; the fan that runs keeps running", "err", err, "config", where, "running", c.f.Pin())
	} else {
		c.log.Error("fan not driven", "err", err, "config", where)
	}
}

// close is for Arka stopping (or failing to start): the fan is left
// running, the safe side for a board whose temperature nobody follows any
// more, and its pin released (fan.Fan.Leave); later calls do nothing.
func (c *fanControl) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.f == nil {
		return
	}
	if err := c.f.Leave(); err != nil {
		c.log.Warn("fan: its pin was released without starting the fan", "pin", c.f.Pin(), "err", err)
	} else {
		c.log.Info("fan left running, its pin released", "pin", c.f.Pin())
	}
	c.f = nil
}

// closeLocked stops and releases the fan driven, if any.
func (c *fanControl) closeLocked(why string) {
	if c.f == nil {
		return
	}
	if err := c.f.Close(); err != nil {
		c.log.Warn("fan: its pin was released without stopping it", "pin", c.f.Pin(), "err", err)
	}
	c.log.Info("fan pin released", "pin", c.f.Pin(), "why", why)
	c.f = nil
}

// feed gives the fan one reading of the thermal ticker (nil: the
// temperature could not be read, and the fan runs).
func (c *fanControl) feed(tempC *float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.f == nil:
		return
	case tempC == nil:
		c.f.NoReading()
	default:
		c.f.Update(*tempC)
	}
	c.syncLocked()
}

// state is the status page's view of the fan: nil while none is driven.
func (c *fanControl) state() *fan.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	st := c.f.State()
	return &st
}

// syncLocked sets the "fan" condition from a refused configuration and the
// driven pin's last write error, or clears it.
func (c *fanControl) syncLocked() {
	var msgs []string
	if c.refused != "" {
		msgs = append(msgs, c.refused)
	}
	if c.f != nil {
		if e := c.f.State().Error; e != "" {
			msgs = append(msgs, fmt.Sprintf("fan pin %s cannot be driven: %s", c.f.Pin(), e))
		}
	}
	if len(msgs) == 0 {
		c.conds.Clear("fan")
		return
	}
	c.conds.Set("fan", led.Degraded, strings.Join(msgs, "; "))
}

// ledControl owns the activity LED under [global] led. Its methods are safe
// for concurrent use.
type ledControl struct {
	root     string
	conds    *led.Conditions
	activity func() uint64 // the server's request count (set before apply)
	log      *slog.Logger

	mu      sync.Mutex
	applied bool     // apply was called: the LED is Arka's to drive or leave
	closed  bool     // close was called: Arka stops
	off     bool     // [global] led = false is in effect
	l       *led.LED // driven now; nil when none
	stop    func()   // stops the driver and gives the LED back
}

// apply drives the LED (on) or gives it back to the kernel (!on). The first
// call is at start; later calls change something only when on changed.
func (c *ledControl) apply(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.applied && c.off == !on {
		return
	}
	first := !c.applied
	c.applied, c.off = true, !on
	if !on && first {
		restoreLED(c.root, c.log)
	}
	if !on {
		if c.l != nil {
			c.stop()
			c.log.Info("activity LED given back to the kernel ([global] led = false)", "led", c.l.Name, "trigger", c.l.DefaultTrigger())
			c.l, c.stop = nil, nil
		}
		return
	}
	l := takeLED(c.root, c.log)
	if l == nil {
		return
	}
	c.l, c.stop = l, runLED(l, c.conds, c.activity, c.log)
	if !first {
		c.log.Info("activity LED driven again ([global] led)", "led", l.Name)
	}
}

// name is the LED class name driven now, "" when none.
func (c *ledControl) name() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.l == nil {
		return ""
	}
	return c.l.Name
}

// describe is the LED for the "arka started" line.
func (c *ledControl) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.l != nil:
		return c.l.Name + " (default trigger " + c.l.DefaultTrigger() + ")"
	case c.off:
		return "off ([global] led = false)"
	}
	return "none"
}

// close gives the LED back to the kernel (waiting for that); later applies
// do nothing. It may be called more than once.
func (c *ledControl) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.l != nil {
		c.stop()
		c.l, c.stop = nil, nil
	}
	c.closed = true
}

// restoreLED gives the activity LED back to the kernel's default trigger
// if an Arka that did not stop cleanly left it at "none" (dark), for a
// start with [global] led = false.
func restoreLED(root string, log *slog.Logger) {
	l, err := led.Find(root)
	if err != nil {
		return
	}
	switch ok, err := l.Restore(); {
	case err != nil:
		log.Warn("activity LED: cannot give it back to the kernel", "led", l.Name, "err", err)
	case ok:
		log.Info("activity LED given back to the kernel: an earlier Arka left it dark ([global] led = false)", "led", l.Name, "trigger", l.DefaultTrigger())
	}
}
