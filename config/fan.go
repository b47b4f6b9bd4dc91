package config

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/arkaweb/arka/board"
)

// Fan defaults, °C: the fan switches on at DefaultFanOn and off again at
// DefaultFanOn - DefaultFanHysteresis (Raspberry Pi OS's gpio-fan overlay
// also uses 10 °C of hysteresis).
const (
	DefaultFanOn         = 65.0
	DefaultFanHysteresis = 10.0
)

// Fan is [global] fan: a case fan switched by a GPIO pin (through a transistor
// or a fan SHIM), turned on when the SoC reaches On °C and off again when it
// has cooled to Off °C. The gap between the two is the hysteresis, so a board
// sitting near one temperature does not make the fan flap.
//
//	[global]
//	fan = { pin = "GPIO14", on = 65, off = 55 }
type Fan struct {
	// Pin is the GPIO pin as periph.io names it (package board/fan): the
	// SoC name "GPIO14", or a header name such as "P1_8". Whether the pin
	// exists depends on the board; that is checked when Arka starts (and by
	// arka -t on a board with GPIO), not here.
	Pin string `toml:"pin"`
	// On is the temperature in °C at or above which the fan runs; default
	// DefaultFanOn (65).
	On float64 `toml:"on"`
	// Off is the temperature in °C at or below which the fan stops; default
	// On - DefaultFanHysteresis. It must be below On.
	Off float64 `toml:"off"`

	file      string
	line, col int
}

// PinPosition is where the fan's pin is written, for errors found when the
// pin is looked up on the board.
func (f *Fan) PinPosition() (file string, line, col int) { return f.file, f.line, f.col }

// PinError is a located config error about the fan's pin ("file:line:col:
// fan pin ...").
func (f *Fan) PinError(msg string) error {
	return Errors{{File: f.file, Line: f.line, Col: f.col, Msg: msg}}
}

// normalizeFan applies the defaults of [global] fan (at is its key path).
// A key written with 0 is not a key left out: 0 stays, and validation
// reports it like any other temperature out of range.
func (v *validator) normalizeFan(at string, f *Fan) {
	if !v.has(at + ".on") {
		f.On = DefaultFanOn
	}
	if !v.has(at + ".off") {
		f.Off = f.On - DefaultFanHysteresis
	}
}

// fan validates [global] fan (at is its key path), reporting each mistake.
func (v *validator) fan(at string, f *Fan) {
	f.file = v.file
	f.line, f.col = v.pos.at(at + ".pin")
	switch {
	case f.Pin == "":
		v.errAt(at+".pin", "fan: pin is missing: the GPIO pin that switches the fan, such as pin = \"GPIO14\"")
	case strings.IndexFunc(f.Pin, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		v.errAt(at+".pin", "fan pin %q: a pin name has no spaces (for example \"GPIO14\" or \"P1_8\")", f.Pin)
	}
	onOK := v.celsius(at+".on", "fan on", f.On, func(c float64) bool { return c >= 20 && c <= 110 },
		"use 20..110 °C (the temperature at which the fan starts)")
	if !onOK && !v.has(at+".off") {
		return // off is on - 10: its mistake is on's
	}
	below := "below on"
	if onOK {
		below = fmt.Sprintf("below on (%s)", celsiusText(f.On))
	}
	offOK := v.celsius(at+".off", "fan off", f.Off, func(c float64) bool { return c > 0 },
		"use a temperature above 0 and "+below+", where the fan stops")
	if onOK && offOK && f.Off >= f.On {
		v.errAt(at+".off", "fan off = %s must be below on = %s (the fan stops when the board has cooled to off)", celsiusText(f.Off), celsiusText(f.On))
	}
}

// fanWarnings are the warnings of arka -t about [global] fan: a fan that
// starts above the thermal limit (Arka sheds work first, and the fan
// starts only once the board is already throttling work).
func fanWarnings(sites []*Site) []string {
	g := GlobalOf(sites)
	if g.Fan == nil {
		return nil
	}
	limit := g.Thermal.Limit
	if limit == 0 {
		limit = board.DefaultHotC
	}
	if !(g.Fan.On > limit) {
		return nil
	}
	for _, s := range sites {
		if s.Global != nil {
			line, col := s.Position("global.fan.on")
			return []string{fmt.Sprintf("%s:%d:%d: warning: fan on = %s is above the thermal limit (%s): Arka sheds work before the fan starts; set on below the limit",
				s.File, line, col, celsiusText(g.Fan.On), celsiusText(limit))}
		}
	}
	return nil
}
