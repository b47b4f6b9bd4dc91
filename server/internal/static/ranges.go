package static

import (
	"errors"
	"math"
	"strconv"
)

// byteRange is a satisfiable range of a representation: bytes [Start, End)
// in Go terms; Content-Range shows End-1.
type byteRange struct {
	Start, End int64
}

func (b byteRange) length() int64 { return b.End - b.Start }

// maxRanges bounds how many ranges one request may ask for. Beyond it the
// Range field is ignored and the whole representation is sent, as RFC 9110
// section 14.2 permits, so many tiny ranges cannot multiply the work.
const maxRanges = 32

var (
	// errIgnoreRange: the Range field is not usable (another unit, bad
	// syntax, too many or overlapping ranges); send 200 with everything.
	errIgnoreRange = errors.New("range ignored")
	// errUnsatisfiable: no range overlaps the representation: 416.
	errUnsatisfiable = errors.New("range not satisfiable")
)

// parseRange parses a Range field value (RFC 9110 section 14.1.2) against a
// representation of size bytes. It returns the satisfiable ranges in the
// order given, errUnsatisfiable when none is, or errIgnoreRange. dst is
// reused when large enough.
func parseRange(s string, size int64, dst []byteRange) ([]byteRange, error) {
	s = trimOWS(s)
	if len(s) < 6 || !(s[:6] == "bytes=" || eqFoldASCII(s[:6], "bytes=")) {
		return nil, errIgnoreRange
	}
	s = s[6:]
	out := dst[:0]
	any := false
	for s != "" {
		var el string
		if i := indexByte(s, ','); i >= 0 {
			el, s = s[:i], s[i+1:]
		} else {
			el, s = s, ""
		}
		el = trimOWS(el)
		if el == "" {
			continue // empty list elements are allowed (RFC 9110 section 5.6.1)
		}
		any = true
		dash := indexByte(el, '-')
		if dash < 0 {
			return nil, errIgnoreRange
		}
		first, last := trimOWS(el[:dash]), trimOWS(el[dash+1:])
		var r byteRange
		switch {
		case first == "":
			// Suffix range: the last N bytes.
			n, ok := parseDigits(last)
			if !ok {
				return nil, errIgnoreRange
			}
			if n == 0 || size == 0 {
				continue // unsatisfiable element
			}
			if n > size {
				n = size
			}
			r = byteRange{size - n, size}
		default:
			a, ok := parseDigits(first)
			if !ok {
				return nil, errIgnoreRange
			}
			end := size
			if last != "" {
				b, ok := parseDigits(last)
				if !ok || b < a {
					return nil, errIgnoreRange
				}
				if b < end-1 {
					end = b + 1
				}
			}
			if a >= size {
				continue // unsatisfiable element
			}
			r = byteRange{a, end}
		}
		if len(out) == maxRanges {
			return nil, errIgnoreRange
		}
		out = append(out, r)
	}
	if !any {
		return nil, errIgnoreRange
	}
	if len(out) == 0 {
		return nil, errUnsatisfiable
	}
	// Overlapping ranges are a known amplification trick; send the whole
	// representation instead (RFC 9110 section 14.2 allows ignoring Range).
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[i].Start < out[j].End && out[j].Start < out[i].End {
				return nil, errIgnoreRange
			}
		}
	}
	return out, nil
}

// parseDigits parses 1*DIGIT. Values too large for an int64 saturate at
// math.MaxInt64, past any representation's length: RFC 9110 section
// 14.1.1 gives every length of digits a meaning (a last-pos past the end
// means "to the end", a first-pos past it is unsatisfiable).
func parseDigits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-9)/10 {
			n = math.MaxInt64
			continue
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func eqFoldASCII(a, lower string) bool {
	if len(a) != len(lower) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// contentRange formats "bytes first-last/size".
func contentRange(dst []byte, r byteRange, size int64) []byte {
	dst = append(dst, "bytes "...)
	dst = strconv.AppendInt(dst, r.Start, 10)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, r.End-1, 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, size, 10)
}
