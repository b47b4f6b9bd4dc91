// Package encoding implements content coding (RFC 9110 section 8.4): parsing
// Accept-Encoding, choosing a coding, pooled encoders for zstd, brotli and
// gzip, the middleware that encodes responses made per request, and the
// one-time compression of static files.
//
// # Where the time goes
//
// Coding a response made per request costs more than sending it: on the
// bench's 25 KB PHP page compressed for browsers (php-page-br), zstd at
// level 1 was 45 to 50% of Arka's CPU (pprof of a whole run), AES-GCM and
// the system calls most of the rest. The same page with each coding, one
// encoder reused (go test -bench, the shared 2-core machine under load,
// so times are relative; sizes exact):
//
//	zstd 1     3693 B   120 us   (level 2: 3716 B, no quicker)
//	br 0/1/2   5397 / 4709 / 3575 B   165 / 185 / 400 us
//	br 4       3221 B   610 us   (nginx's brotli_comp_level 4)
//	gzip 1/5   4802 / 3829 B   64 / 103 us
//
// No cheaper setting gives zstd 1's size: gzip 1 is quicker but 30%
// larger, brotli small enough is 3 to 5 times slower. What removed the
// cost is not coding the same bytes twice (reuse.go): a body of declared
// length is coded whole and its coded form kept for the next identical
// one, which brought Arka's CPU per php-page-br request from about 0.37
// to 0.20-0.25 ms (the whole tree, php-fpm's 0.18-0.20 ms included),
// below the uncompressed page's. Of what remains in this package on that
// test, the hash and comparison of the body are 5%.
package encoding

import (
	"strings"
	"sync/atomic"
)

// Coding is a content coding Arka can produce or serve precompressed.
type Coding uint8

// The codings, in Arka's order of preference for responses made per request:
// zstd is as small as brotli at low levels and quicker to make; brotli is for
// clients without zstd (Safari); gzip for everyone else.
const (
	Identity Coding = iota
	Zstd
	Brotli
	Gzip
	NumCodings
)

var codingNames = [NumCodings]string{"", "zstd", "br", "gzip"}
var codingExts = [NumCodings]string{"", ".zst", ".br", ".gz"}

// String returns the coding's registered name as used in Content-Encoding
// ("br", "zstd", "gzip"), or "identity".
func (c Coding) String() string {
	if c == Identity {
		return "identity"
	}
	return codingNames[c]
}

// Token returns the Content-Encoding value, "" for Identity.
func (c Coding) Token() string { return codingNames[c] }

// Ext returns the file-name suffix of a precompressed sibling (".br",
// ".zst", ".gz"), "" for Identity.
func (c Coding) Ext() string { return codingExts[c] }

// Accept is a parsed Accept-Encoding field (RFC 9110 section 12.5.3): the
// quality each coding was given, in thousandths (0 = not acceptable,
// 1000 = q=1).
type Accept struct {
	q [NumCodings]uint16
}

// AcceptIdentity is what a request without Accept-Encoding gets: identity
// only. RFC 9110 allows any coding then, but clients that send no
// Accept-Encoding (curl without --compressed, scripts) cannot decode one.
var AcceptIdentity = Accept{q: [NumCodings]uint16{Identity: 1000}}

// Q returns the quality of c in thousandths.
func (a Accept) Q(c Coding) int { return int(a.q[c]) }

// Acceptable reports whether c may be sent.
func (a Accept) Acceptable(c Coding) bool { return a.q[c] > 0 }

// AnyCoding reports whether some coding other than identity is acceptable.
func (a Accept) AnyCoding() bool { return a.q[Zstd]|a.q[Brotli]|a.q[Gzip] != 0 }

// ParseAccept parses the Accept-Encoding field lines of a request. It does
// not allocate. Rules (RFC 9110 section 12.5.3):
//   - no field: identity only (see AcceptIdentity); an empty field likewise;
//   - names are case-insensitive; "x-gzip" is "gzip" (section 8.4.1.3);
//   - "*" gives its quality to every coding not named;
//   - identity is acceptable unless "identity;q=0", or "*;q=0" without an
//     identity entry;
//   - a malformed q-value makes its element be ignored; unknown codings
//     are ignored.
//
// A one-line field that was parsed before is answered from a small memo
// (see acceptMemo): browsers send a handful of distinct values, each on
// every request.
func ParseAccept(lines []string) Accept {
	if len(lines) == 0 {
		return AcceptIdentity
	}
	if len(lines) == 1 && len(lines[0]) <= maxMemoLen {
		slot := &acceptMemo[memoSlot(lines[0])]
		if m := slot.Load(); m != nil && m.field == lines[0] {
			return m.a
		}
		a := parseAccept(lines)
		slot.Store(&memoEntry{field: strings.Clone(lines[0]), a: a})
		return a
	}
	return parseAccept(lines)
}

// The memo of parsed Accept-Encoding values: memoSlots entries, each the
// last value that hashed to it. A hit costs a string comparison instead
// of the parse (about 100 ns for "gzip, deflate, br, zstd"); a miss
// allocates the entry and a copy of the value (the request's bytes are
// reused by the engine), so a client alternating values that share a slot
// costs one small allocation per request, never more memory than
// memoSlots entries of at most maxMemoLen bytes.
const (
	memoSlots  = 16
	maxMemoLen = 128
)

type memoEntry struct {
	field string
	a     Accept
}

var acceptMemo [memoSlots]atomic.Pointer[memoEntry]

// memoSlot spreads values by length and two of their bytes.
func memoSlot(s string) int {
	h := len(s)
	if len(s) > 0 {
		h += int(s[0])*7 + int(s[len(s)-1])*31
	}
	return h % memoSlots
}

func parseAccept(lines []string) Accept {
	var (
		a         Accept
		named     [NumCodings]bool
		star      = -1
		identityQ = -1
	)
	for _, line := range lines {
		for i := 0; i < len(line); {
			// One element: token *( OWS ";" OWS param ).
			j := i
			for j < len(line) && line[j] != ',' {
				j++
			}
			el := line[i:j]
			i = j + 1
			name, q, ok := parseElement(el)
			if !ok {
				continue
			}
			switch {
			case name == "*":
				star = q
			case eqFold(name, "identity"):
				identityQ = q
			default:
				c := codingOf(name)
				if c != Identity {
					a.q[c] = uint16(q)
					named[c] = true
				}
			}
		}
	}
	if star >= 0 {
		for c := Zstd; c < NumCodings; c++ {
			if !named[c] {
				a.q[c] = uint16(star)
			}
		}
	}
	switch {
	case identityQ >= 0:
		a.q[Identity] = uint16(identityQ)
	case star == 0:
		a.q[Identity] = 0
	default:
		// Identity is acceptable by default; give it the lowest rank so any
		// acceptable coding with the same q is preferred only by size.
		a.q[Identity] = 1
		if star > 0 {
			a.q[Identity] = uint16(star)
		}
	}
	return a
}

// parseElement parses `token [; q=value] [; other params]`, returning the
// token and its quality in thousandths.
func parseElement(el string) (string, int, bool) {
	el = trimOWS(el)
	if el == "" {
		return "", 0, false
	}
	k := 0
	for k < len(el) && el[k] != ';' && el[k] != ' ' && el[k] != '\t' {
		k++
	}
	name := el[:k]
	q := 1000
	rest := el[k:]
	for rest != "" {
		rest = trimOWS(rest)
		if rest == "" || rest[0] != ';' {
			if rest != "" {
				return "", 0, false
			}
			break
		}
		rest = trimOWS(rest[1:])
		e := 0
		for e < len(rest) && rest[e] != ';' {
			e++
		}
		param := trimOWS(rest[:e])
		rest = rest[e:]
		if len(param) >= 2 && (param[0] == 'q' || param[0] == 'Q') {
			v := trimOWS(param[1:])
			if v == "" || v[0] != '=' {
				return "", 0, false
			}
			var ok bool
			if q, ok = parseQ(trimOWS(v[1:])); !ok {
				return "", 0, false
			}
		}
	}
	return name, q, true
}

// parseQ parses a qvalue (RFC 9110 section 12.4.2): "0", "0.5", "1.000".
func parseQ(s string) (int, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	switch s[0] {
	case '0':
		if len(s) == 1 {
			return 0, true
		}
		if s[1] != '.' {
			return 0, false
		}
		v, mul := 0, 100
		for i := 2; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			v += int(s[i]-'0') * mul
			mul /= 10
		}
		return v, true
	case '1':
		if len(s) == 1 {
			return 1000, true
		}
		if s[1] != '.' {
			return 0, false
		}
		for i := 2; i < len(s); i++ {
			if s[i] != '0' {
				return 0, false
			}
		}
		return 1000, true
	}
	return 0, false
}

func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func codingOf(name string) Coding {
	switch {
	case eqFold(name, "br"):
		return Brotli
	case eqFold(name, "zstd"):
		return Zstd
	case eqFold(name, "gzip"), eqFold(name, "x-gzip"):
		return Gzip
	}
	return Identity
}

// eqFold compares an ASCII token with a lower-case name, case-insensitively.
func eqFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// ChooseDynamic picks the coding for a response made per request: the
// acceptable coding with the highest quality, ties broken by Arka's
// preference (zstd, br, gzip). allowed masks codings the server will not
// make now (for example brotli while the board is hot). It returns Identity
// when no coding is acceptable.
func (a Accept) ChooseDynamic(allowed [NumCodings]bool) Coding {
	best, bestQ := Identity, 0
	for c := Zstd; c < NumCodings; c++ {
		if allowed[c] && int(a.q[c]) > bestQ {
			best, bestQ = c, int(a.q[c])
		}
	}
	if best != Identity && int(a.q[Identity]) > bestQ {
		return Identity // the client prefers identity outright
	}
	return best
}

// ChooseStatic picks among available representations of one resource:
// sizes[c] is the byte size of the representation in coding c, or -1 when
// there is none. The acceptable one with the highest quality wins; among
// equals, the smallest. If nothing acceptable exists, identity is chosen
// anyway (RFC 9110 section 12.5.3: send it without content coding rather
// than 406) when it exists; ok is false only if no representation exists.
func (a Accept) ChooseStatic(sizes *[NumCodings]int64) (Coding, bool) {
	best, bestQ, bestSize := Identity, -1, int64(-1)
	for c := Identity; c < NumCodings; c++ {
		s := sizes[c]
		if s < 0 || a.q[c] == 0 {
			continue
		}
		q := int(a.q[c])
		if c == Identity && q == 1 {
			q = 0 // identity's implicit rank: below any named coding
		}
		if q > bestQ || q == bestQ && s < bestSize {
			best, bestQ, bestSize = c, q, s
		}
	}
	if bestQ >= 0 {
		return best, true
	}
	if sizes[Identity] >= 0 {
		return Identity, true
	}
	return Identity, false
}
