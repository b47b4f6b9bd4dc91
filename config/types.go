package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Size is a number of bytes written with a unit: "512B", "64KiB", "1MB",
// "1.5MiB", or a bare integer meaning bytes.
//
// Units, case-insensitive: B; KB, MB, GB, TB are powers of 1000 (SI);
// KiB, MiB, GiB, TiB and the nginx-style K, M, G are powers of 1024.
type Size int64

var sizeUnits = map[string]float64{
	"":    1,
	"b":   1,
	"k":   1 << 10,
	"m":   1 << 20,
	"g":   1 << 30,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
	"tib": 1 << 40,
}

// ParseSize parses a size such as "64KiB" (see Size). It rejects negative
// values, unknown units and sizes that do not fit in an int64.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("size %q: expected a number with a unit, like \"512B\", \"64KiB\" or \"1MB\"", s)
	}
	mul, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B; KB, MB, GB, TB: powers of 1000; KiB, MiB, GiB, TiB or K, M, G: powers of 1024)", s, t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %q is not a number", s, num)
	}
	b := v * mul
	if b > math.MaxInt64 {
		// A TOML float such as 1e30 reaches here written out in full
		// ("1000000000000000019884624838656.000000"): echo it short.
		if len(num) > 20 {
			return 0, fmt.Errorf("size %s bytes is too large", strconv.FormatFloat(b, 'g', 4, 64))
		}
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return Size(b), nil
}

// UnmarshalText implements encoding.TextUnmarshaler for TOML strings and
// integers.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// String formats the size with the largest binary unit that divides it.
func (s Size) String() string {
	n := int64(s)
	for _, u := range []struct {
		name string
		mul  int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mul == 0 {
			return strconv.FormatInt(n/u.mul, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Duration is a time.Duration written the Go way: "30s", "1m30s", "250ms".
// A unit is required, so "30" is an error rather than 30 nanoseconds.
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s != "" && strings.Trim(s, "0123456789") == "" {
		return fmt.Errorf("duration %q needs a unit, like \"%ss\" or \"%sms\"", s, s, s)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: expected a value like \"30s\", \"1m30s\" or \"250ms\"", s)
	}
	if v < 0 {
		return fmt.Errorf("duration %q must not be negative", s)
	}
	*d = Duration(v)
	return nil
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// AutoInt is a count that is either "auto" (derived from the board budget at
// start) or a positive integer.
type AutoInt struct {
	Set   bool // false means "auto"
	Value int
}

// UnmarshalText implements encoding.TextUnmarshaler for "auto" and integers.
func (a *AutoInt) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.EqualFold(s, "auto") {
		*a = AutoInt{}
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("expected \"auto\" or a positive integer, got %q", s)
	}
	*a = AutoInt{Set: true, Value: v}
	return nil
}

// Or returns the configured value, or def when it is "auto".
func (a AutoInt) Or(def int) int {
	if a.Set {
		return a.Value
	}
	return def
}

// AutoSize is a Size that may also be "auto" (derived from the board budget).
type AutoSize struct {
	Set   bool
	Value Size
}

// UnmarshalText implements encoding.TextUnmarshaler for "auto" and sizes.
func (a *AutoSize) UnmarshalText(b []byte) error {
	if strings.EqualFold(strings.TrimSpace(string(b)), "auto") {
		*a = AutoSize{}
		return nil
	}
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*a = AutoSize{Set: true, Value: v}
	return nil
}

// Or returns the configured value, or def when it is "auto".
func (a AutoSize) Or(def int64) int64 {
	if a.Set {
		return int64(a.Value)
	}
	return def
}

// StringList accepts either one string or an array of strings, so
// `index = "index.html"` and `index = ["index.html", "index.htm"]` both work.
type StringList []string

var errStringList = errors.New("expected a string or an array of strings")

// UnmarshalTOML implements toml.Unmarshaler.
func (l *StringList) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*l = StringList{v}
	case []any:
		out := make(StringList, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return errStringList
			}
			out = append(out, s)
		}
		*l = out
	default:
		return errStringList
	}
	return nil
}

// MarshalText writes the size as String does, in a form UnmarshalText
// reads back.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalText writes the duration the Go way ("1m30s"), as it is read.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// MarshalText writes "auto" or the number.
func (a AutoInt) MarshalText() ([]byte, error) {
	if !a.Set {
		return []byte("auto"), nil
	}
	return []byte(strconv.Itoa(a.Value)), nil
}

// MarshalText writes "auto" or the size.
func (a AutoSize) MarshalText() ([]byte, error) {
	if !a.Set {
		return []byte("auto"), nil
	}
	return a.Value.MarshalText()
}
