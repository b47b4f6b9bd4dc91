package fan

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/gpio/gpiotest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func level(p *gpiotest.Pin) gpio.Level {
	p.Lock()
	defer p.Unlock()
	return p.L
}

func TestHysteresis(t *testing.T) {
	pin := &gpiotest.Pin{N: "GPIO14", Num: 14}
	f := New(pin, 65, 55, quiet)
	if level(pin) != gpio.High || !f.State().Running {
		t.Fatal("New: the fan does not run before the first reading")
	}
	steps := []struct {
		c    float64
		want bool
	}{
		{60, false}, // first reading between off and on: decides alone, stop
		{64.9, false},
		{65, true}, // on is inclusive
		{70, true},
		{60, true}, // between: keeps running
		{55.1, true},
		{55, false}, // off is inclusive
		{60, false},
		{90, true},
	}
	for i, s := range steps {
		if got := f.Update(s.c); got != s.want {
			t.Errorf("step %d: Update(%g) = %v, want %v", i, s.c, got, s.want)
		}
		if (level(pin) == gpio.High) != s.want {
			t.Errorf("step %d: pin level %v, want running=%v", i, level(pin), s.want)
		}
	}
	st := f.State()
	// Start (New), stop at 60, start at 65, stop at 55, start at 90.
	if st.Transitions != 5 || !st.Running || st.LastC == nil || *st.LastC != 90 || st.Pin != "GPIO14" || st.OnC != 65 || st.OffC != 55 {
		t.Errorf("state %+v", st)
	}
	f.Update(40)
	f.NoReading()
	if level(pin) != gpio.High || f.State().LastC != nil {
		t.Error("no reading: the fan must run")
	}
	// After an unreadable spell, the next reading decides alone again.
	if f.Update(60) {
		t.Error("first reading after no reading, between off and on: want stopped")
	}
}

// brokenPin fails its writes until fixed.
type brokenPin struct {
	gpiotest.Pin
	broken bool
}

func (p *brokenPin) Out(l gpio.Level) error {
	if p.broken {
		return errors.New("gpio: permission denied")
	}
	return p.Pin.Out(l)
}

func TestPinWriteErrors(t *testing.T) {
	pin := &brokenPin{Pin: gpiotest.Pin{N: "GPIO18", Num: 18}, broken: true}
	f := New(pin, 65, 55, quiet)
	st := f.State()
	if st.Running || st.Error == "" {
		t.Fatalf("a failed write shows as running: %+v", st)
	}
	pin.broken = false
	f.Update(70)
	if st := f.State(); !st.Running || st.Error != "" || level(&pin.Pin) != gpio.High {
		t.Errorf("after the pin works again: %+v", st)
	}
	// A pin changed behind Arka's back is corrected at the next reading.
	pin.Pin.Out(gpio.Low)
	f.Update(70)
	if level(&pin.Pin) != gpio.High {
		t.Error("pin not rewritten at the next reading")
	}
}

// TestLookup runs periph.io's real host.Init, then looks pins up in gpioreg,
// with gpiotest pins standing in for the board's.
func TestLookup(t *testing.T) {
	if len(gpioreg.All()) == 0 {
		_, err := Lookup("GPIO14")
		if len(gpioreg.All()) == 0 && !errors.Is(err, ErrNoGPIO) {
			t.Fatalf("no GPIO: %v, want ErrNoGPIO", err)
		}
	}
	for _, p := range []*gpiotest.Pin{{N: "GPIO900", Num: 900}, {N: "GPIO901", Num: 901}} {
		if err := gpioreg.Register(p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gpioreg.Unregister(p.N) })
	}
	if err := gpioreg.RegisterAlias("P9_1", "GPIO901"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gpioreg.Unregister("P9_1") })

	p, err := Lookup("P9_1")
	if err != nil || p.Name() != "P9_1" {
		t.Fatalf("alias: %v %v", p, err)
	}
	f := New(p, 65, 55, quiet)
	f.Update(80)
	if real := gpioreg.ByName("GPIO901").(*gpiotest.Pin); level(real) != gpio.High {
		t.Error("driving the alias did not drive the pin")
	}
	_, err = Lookup("GPIO99x")
	if err == nil || errors.Is(err, ErrNoGPIO) || !strings.Contains(err.Error(), `fan pin "GPIO99x" does not exist on this board (it has `) ||
		!strings.Contains(err.Error(), "GPIO900") {
		t.Errorf("unknown pin: %v", err)
	}
}

// TestLookupNoAccess: GPIO chips exist but periph.io registered no pin (they
// could not be opened): the error says so rather than "no GPIO".
func TestLookupNoAccess(t *testing.T) {
	if len(gpioreg.All()) > 0 {
		t.Skip("this machine has GPIO pins registered")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "gpiochip0"), nil, 0o600)
	old := chips
	chips = filepath.Join(dir, "gpiochip*")
	t.Cleanup(func() { chips = old })
	if _, err := lookup("GPIO14"); !errors.Is(err, ErrGPIOAccess) {
		t.Errorf("chips present, no pins: %v, want ErrGPIOAccess", err)
	}
}

// closingPin is a gpiotest pin whose driver holds a kernel line, as
// periph.io's gpioioctl.GPIOLine does: Close gives it back.
type closingPin struct {
	gpiotest.Pin
	closed int
}

func (p *closingPin) Close() { p.closed++ }

// TestClose: a fan that is replaced stops, its pin's line is given back
// (through an alias too) and later readings no longer drive the pin.
func TestClose(t *testing.T) {
	real := &closingPin{Pin: gpiotest.Pin{N: "GPIO902", Num: 902}}
	if err := gpioreg.Register(real); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gpioreg.Unregister("GPIO902") })
	if err := gpioreg.RegisterAlias("P9_2", "GPIO902"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gpioreg.Unregister("P9_2") })
	f := New(gpioreg.ByName("P9_2"), 65, 55, quiet)
	f.Update(80)
	if level(&real.Pin) != gpio.High {
		t.Fatal("hot: the fan does not run")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if level(&real.Pin) != gpio.Low || real.closed != 1 || f.State().Running {
		t.Fatalf("after Close: level %v, line closed %d times, state %+v", level(&real.Pin), real.closed, f.State())
	}
	f.Update(90)
	f.NoReading()
	f.Close()
	if level(&real.Pin) != gpio.Low || real.closed != 1 {
		t.Errorf("a closed fan drove its pin again: level %v, closed %d", level(&real.Pin), real.closed)
	}
}

// TestSetThresholds: new thresholds keep the state until the next reading,
// which decides with them.
func TestSetThresholds(t *testing.T) {
	pin := &gpiotest.Pin{N: "GPIO14", Num: 14}
	f := New(pin, 65, 55, quiet)
	f.Update(60)
	f.SetThresholds(58, 50)
	if f.State().Running {
		t.Fatal("SetThresholds changed the state before a reading")
	}
	if !f.Update(60) || level(pin) != gpio.High {
		t.Error("60 °C with on = 58: the fan does not run")
	}
	if st := f.State(); st.OnC != 58 || st.OffC != 50 {
		t.Errorf("state %+v", st)
	}
}
