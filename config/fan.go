package config

import (
	"strings"
	"unicode"
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

// fan validates and defaults [global] fan (at is its key path).
func (v *validator) fan(at string, f *Fan) {
	f.file = v.file
	f.line, f.col = v.pos.at(at + ".pin")
	switch {
	case f.Pin == "":
		v.errAt(at+".pin", "fan: pin is missing: the GPIO pin that switches the fan, such as pin = \"GPIO14\"")
	case strings.IndexFunc(f.Pin, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		v.errAt(at+".pin", "fan pin %q: a pin name has no spaces (for example \"GPIO14\" or \"P1_8\")", f.Pin)
	}
	if f.On == 0 {
		f.On = DefaultFanOn
	}
	if f.Off == 0 {
		f.Off = f.On - DefaultFanHysteresis
	}
	switch {
	case f.On < 20 || f.On > 110:
		v.errAt(at+".on", "fan on = %g °C: use 20..110 (the temperature at which the fan starts)", f.On)
	case f.Off >= f.On:
		v.errAt(at+".off", "fan off = %g °C must be below on = %g °C (the fan stops when the board has cooled to off)", f.Off, f.On)
	case f.Off < 0:
		v.errAt(at+".off", "fan off = %g °C: use a temperature below on and above 0", f.Off)
	}
}
