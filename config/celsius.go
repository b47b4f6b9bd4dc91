package config

import (
	"fmt"
	"math"
	"strings"

	"github.com/arkaweb/arka/board"
)

// Temperatures in °C ([global] fan on/off, thermal limit/hysteresis) are
// TOML floats, and TOML also has nan, inf and -inf: numbers to the decoder,
// never temperatures. Every temperature setting is checked by celsius, so
// that no range check written as "x < lo || x > hi" (false for nan) lets
// one through.

// celsius reports a mistake at the value of the key at ("global.fan.on") when x is not
// a finite number that ok accepts: "name = x: use". It reports whether x
// is good.
func (v *validator) celsius(at, name string, x float64, ok func(float64) bool, use string) bool {
	return v.celsiusAt(v.errAtValue, at, name, x, ok, use)
}

// celsiusAt is celsius reporting through report (v.errAt, at the key, or
// v.errAtValue, at its value).
func (v *validator) celsiusAt(report func(string, string, ...any), at, name string, x float64, ok func(float64) bool, use string) bool {
	if !math.IsNaN(x) && !math.IsInf(x, 0) && ok(x) {
		return true
	}
	report(at, "%s = %s: %s", name, celsiusText(x), use)
	return false
}

// celsiusText writes a temperature for a message: "65 °C", or nan, inf and
// -inf as TOML spells them.
func celsiusText(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strings.TrimSpace(fmt.Sprintf("%g °C", x))
}

// thermal validates [global] thermal (at is its key path). A key left out
// is the board's default; a key written with 0 is a mistake like any other
// value out of range.
func (v *validator) thermal(at string, t ThermalConfig) {
	limit, hyst := t.Limit, t.Hysteresis
	limitOK := true
	if v.has(at + ".limit") {
		limitOK = v.celsiusAt(v.errAtValue, at+".limit", "thermal limit", limit, func(c float64) bool { return c > 0 && c <= 150 },
			"use 1..150 °C (above it Arka sheds work)")
	} else {
		limit = board.DefaultHotC
	}
	below := "the limit"
	if limitOK {
		below = fmt.Sprintf("the limit (%s)", celsiusText(limit))
	}
	if !v.has(at + ".hysteresis") {
		hyst = board.DefaultHysteresisC
		if limitOK && hyst >= limit {
			v.errAtValue(at+".limit", "thermal limit = %s: use more than the hysteresis (%s; work resumes at limit - hysteresis)", celsiusText(limit), celsiusText(hyst))
		}
		return
	}
	v.celsiusAt(v.errAtValue, at+".hysteresis", "thermal hysteresis", hyst, func(c float64) bool { return c > 0 && (!limitOK || c < limit) },
		"use more than 0 and less than "+below+"; work resumes at limit - hysteresis")
}
