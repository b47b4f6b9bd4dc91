// Package fan switches a case fan on a GPIO pin by the SoC temperature, with
// hysteresis: the fan starts when the temperature reaches the "on" threshold
// and stops when it has fallen to the "off" threshold, so a board sitting near
// one temperature does not make the fan flap.
//
// The pin is a periph.io gpio.PinOut: Lookup finds it on the running board
// through periph.io/x/host/v3 (host.Init, then gpioreg.ByName, which knows
// the SoC names "GPIO14", the header names "P1_8" and line names of the
// kernel's GPIO character devices); tests pass a gpiotest.Pin.
//
// A Raspberry Pi 5's own fan header (and a Pi 4 fan under the gpio-fan
// overlay) is driven by the kernel's thermal framework, not by Arka; it shows
// on the status page through board.Sensors.Fans.
package fan

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/host/v3"
)

// ErrNoGPIO means periph.io found no GPIO on this machine (a PC, a VM):
// no pin name can be checked here.
var ErrNoGPIO = errors.New("this machine has no GPIO")

// ErrGPIOAccess means the machine has GPIO chips (/dev/gpiochip*) but none
// could be opened: Arka runs as a user without access to them (not root,
// not in the gpio group).
var ErrGPIOAccess = errors.New("the GPIO chips cannot be opened by this user (run as root, or in the gpio group)")

// chips is where Lookup looks for GPIO character devices when periph.io
// registered no pin, to tell "no GPIO" from "no access".
var chips = "/dev/gpiochip*"

// Lookup initialises periph.io's host drivers (once per process; later calls
// reuse the first result) and returns the pin called name. Errors: ErrNoGPIO
// (wrapped) when the machine has no GPIO at all; ErrGPIOAccess (wrapped) when
// it has GPIO chips this process cannot open; otherwise an error naming the
// pin and some pins this board has, when name is not one of them.
func Lookup(name string) (gpio.PinIO, error) {
	if _, err := host.Init(); err != nil {
		return nil, fmt.Errorf("fan: periph.io host drivers: %w", err)
	}
	return lookup(name)
}

// lookup is Lookup after host.Init.
func lookup(name string) (gpio.PinIO, error) {
	all := gpioreg.All()
	if len(all) == 0 {
		if found, _ := filepath.Glob(chips); len(found) > 0 {
			return nil, fmt.Errorf("fan pin %q: %w", name, ErrGPIOAccess)
		}
		return nil, fmt.Errorf("fan pin %q: %w", name, ErrNoGPIO)
	}
	if p := gpioreg.ByName(name); p != nil {
		return p, nil
	}
	var names []string
	for _, p := range all {
		if strings.HasPrefix(p.Name(), "GPIO") && len(names) < 8 {
			names = append(names, p.Name())
		}
	}
	if len(names) == 0 {
		for _, p := range all[:min(len(all), 8)] {
			names = append(names, p.Name())
		}
	}
	more := ""
	if len(all) > len(names) {
		more = ", ..."
	}
	return nil, fmt.Errorf("fan pin %q does not exist on this board (it has %s%s)", name, strings.Join(names, ", "), more)
}

// Fan drives one fan pin. Create it with New; Update and State are safe for
// concurrent use.
type Fan struct {
	pin       gpio.PinOut
	onC, offC float64
	log       *slog.Logger

	mu          sync.Mutex
	running     bool
	decided     bool // a reading has decided the state (before: running as a precaution)
	lastC       *float64
	since       time.Time
	transitions uint64
	err         error // last pin write error, nil once a write succeeds
	closed      bool  // Close was called: the pin is no longer driven
}

// New starts the fan on pin (High runs it): until the first temperature
// reading it runs, so a board that is already hot is cooled and a person can
// see the fan works. onC must be above offC (config validates it). Write
// errors are logged on log (nil: slog.Default()) and shown by State.
func New(pin gpio.PinOut, onC, offC float64, log *slog.Logger) *Fan {
	if log == nil {
		log = slog.Default()
	}
	f := &Fan{pin: pin, onC: onC, offC: offC, log: log, since: time.Now()}
	f.mu.Lock()
	f.setLocked(true, "") // not logged: the caller says the fan is driven
	f.mu.Unlock()
	return f
}

// Update feeds one SoC temperature reading (°C) and returns whether the fan
// runs. The first reading decides alone (run at or above on); after it, the
// fan starts at or above on and stops at or below off, and keeps its state in
// between.
func (f *Fan) Update(tempC float64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	c := tempC
	f.lastC = &c
	run := f.running
	switch {
	case tempC >= f.onC:
		run = true
	case tempC <= f.offC || !f.decided:
		run = false
	}
	f.decided = true
	why := fmt.Sprintf("%.1f °C (on at %g, off at %g)", tempC, f.onC, f.offC)
	f.setLocked(run, why)
	return f.running
}

// NoReading says the temperature could not be read: the fan runs, since the
// board may be hot.
func (f *Fan) NoReading() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.lastC = nil
	f.decided = false
	f.setLocked(true, "no temperature reading")
}

// setLocked drives the pin and logs a start or stop with why ("" logs
// nothing). The pin is written every time (not only on a
// change), so a write that failed, or a pin something else changed, is
// corrected at the next reading.
func (f *Fan) setLocked(run bool, why string) {
	lvl := gpio.Low
	if run {
		lvl = gpio.High
	}
	err := f.pin.Out(lvl)
	switch {
	case err != nil && f.err == nil:
		f.log.Error("fan: cannot drive the pin", "pin", f.pin.Name(), "err", err)
	case err == nil && f.err != nil:
		f.log.Info("fan: pin writes work again", "pin", f.pin.Name())
	}
	f.err = err
	if err != nil || run == f.running {
		return
	}
	f.running = run
	f.since = time.Now()
	f.transitions++
	state := "stopped"
	if run {
		state = "running"
	}
	if why != "" {
		f.log.Info("fan "+state, "pin", f.pin.Name(), "why", why)
	}
}

// SetThresholds changes the temperatures (°C) at which the fan starts and
// stops (a reload that keeps the pin); onC must be above offC. The next
// reading decides with them; the fan keeps its state until then.
func (f *Fan) SetThresholds(onC, offC float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onC, f.offC = onC, offC
}

// Pin returns the name of the fan's pin, as it was looked up ("GPIO14").
func (f *Fan) Pin() string { return f.pin.Name() }

// Close stops the fan and gives its pin back: it drives the pin low, halts
// it (periph.io's conn.Resource) and, when the pin's driver holds a kernel
// GPIO line for it (the GPIO character device driver, gpioioctl), closes the
// line so that another user, or the next fan, can have it. It returns the
// error of the low write; the fan is released either way. Update and
// NoReading do nothing afterwards.
func (f *Fan) Close() error { return f.release(gpio.Low) }

// Leave is Close for Arka stopping: it drives the pin high (the fan runs,
// the safe side for a board nobody watches the temperature of any more)
// before it gives the pin back. Whether the level outlives the release is
// the pin driver's: set in the SoC's registers (periph.io's /dev/gpiomem
// access on a Raspberry Pi) it stays; a GPIO character device line the
// kernel may reset when it is released.
func (f *Fan) Leave() error { return f.release(gpio.High) }

// release drives the pin to l, then gives it back (see Close).
func (f *Fan) release(l gpio.Level) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	err := f.pin.Out(l)
	if err != nil {
		f.log.Warn("fan: cannot drive the pin before releasing it", "pin", f.pin.Name(), "level", l, "err", err)
	}
	f.pin.Halt()
	if c, ok := realPin(f.pin).(interface{ Close() }); ok {
		c.Close()
	}
	f.closed = true
	if run := l == gpio.High; f.running != run && err == nil {
		f.running = run
		f.since = time.Now()
		f.transitions++
	}
	return err
}

// realPin is the pin an alias ("P1_8") stands for, or p.
func realPin(p any) any {
	for {
		r, ok := p.(gpio.RealPin)
		if !ok {
			return p
		}
		p = r.Real()
	}
}

// Uses reports whether p is the fan's pin, under its name or an alias
// ("P1_8" and "GPIO14" are one pin on a Raspberry Pi).
func (f *Fan) Uses(p gpio.PinIO) bool {
	name := func(p any) string {
		if n, ok := realPin(p).(interface{ Name() string }); ok {
			return n.Name()
		}
		return ""
	}
	return name(f.pin) == name(p)
}

// State is a snapshot of the fan for the status page.
type State struct {
	Pin         string    `json:"pin"`
	Running     bool      `json:"running"`
	OnC         float64   `json:"on_c"`   // starts at or above, °C
	OffC        float64   `json:"off_c"`  // stops at or below, °C
	LastC       *float64  `json:"last_c"` // last reading; nil before the first or when unreadable
	Since       time.Time `json:"since"`  // last start or stop
	Transitions uint64    `json:"transitions"`
	Error       string    `json:"error,omitempty"` // last pin write error
}

// State returns the fan's current state.
func (f *Fan) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := State{Pin: f.pin.Name(), Running: f.running, OnC: f.onC, OffC: f.offC, Since: f.since, Transitions: f.transitions}
	if f.lastC != nil {
		c := *f.lastC
		st.LastC = &c
	}
	if f.err != nil {
		st.Error = f.err.Error()
	}
	return st
}
