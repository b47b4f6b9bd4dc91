package static

import (
	"strings"
	"testing"
)

// RFC 9110 section 14.1.2 range syntax.
func TestParseRange(t *testing.T) {
	cases := []struct {
		in   string
		size int64
		want []byteRange
		err  error
	}{
		{"bytes=0-499", 1000, []byteRange{{0, 500}}, nil},
		{"bytes=500-999", 1000, []byteRange{{500, 1000}}, nil},
		{"bytes=-500", 1000, []byteRange{{500, 1000}}, nil},
		{"bytes=9500-", 1000, nil, errUnsatisfiable},
		{"bytes=0-0,-1", 1000, []byteRange{{0, 1}, {999, 1000}}, nil},
		{"bytes= 0-1 , 5-6 ", 1000, []byteRange{{0, 2}, {5, 7}}, nil},
		{"bytes=-2000", 1000, []byteRange{{0, 1000}}, nil},
		{"bytes=0-", 0, nil, errUnsatisfiable},
		{"bytes=-1", 0, nil, errUnsatisfiable},
		{"bytes=1000-, 0-1", 1000, []byteRange{{0, 2}}, nil},
		{"bytes=", 1000, nil, errIgnoreRange},
		{"bytes=a-b", 1000, nil, errIgnoreRange},
		{"bytes=1-0", 1000, nil, errIgnoreRange},
		{"bytes=--1", 1000, nil, errIgnoreRange},
		{"bytes 0-1", 1000, nil, errIgnoreRange},
		{"pages=0-1", 1000, nil, errIgnoreRange},
		{"bytes=0-1,1-2", 1000, nil, errIgnoreRange},
		{"bytes=99999999999999999999-", 1000, nil, errIgnoreRange},
		{"bytes=" + strings.Repeat("0-0,", 40), 1000, nil, errIgnoreRange},
	}
	for _, c := range cases {
		got, err := parseRange(c.in, c.size, nil)
		if err != c.err || len(got) != len(c.want) {
			t.Errorf("parseRange(%q, %d) = %v, %v; want %v, %v", c.in, c.size, got, err, c.want, c.err)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("parseRange(%q)[%d] = %v, want %v", c.in, i, got[i], c.want[i])
			}
		}
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-499", "bytes=-5", "bytes=5-", "bytes=0-0,2-3,-1", "bytes=1-0", "bytes=,,", "Bytes=0-"} {
		f.Add(s, int64(1000))
	}
	f.Fuzz(func(t *testing.T, s string, size int64) {
		if size < 0 {
			size = -size
		}
		rs, err := parseRange(s, size, nil)
		if err != nil {
			return
		}
		if len(rs) == 0 || len(rs) > maxRanges {
			t.Fatalf("%q: %d ranges without error", s, len(rs))
		}
		for _, r := range rs {
			if r.Start < 0 || r.End > size || r.Start >= r.End {
				t.Fatalf("%q size %d: bad range %v", s, size, r)
			}
		}
	})
}

func TestETagMatching(t *testing.T) {
	const tag = `"5f-1a"`
	for in, want := range map[string][2]bool{ // strong, weak
		`"5f-1a"`:          {true, true},
		`W/"5f-1a"`:        {false, true},
		`"x", "5f-1a"`:     {true, true},
		`*`:                {true, true},
		`"x"`:              {false, false},
		`5f-1a`:            {false, false},
		`"5f-1a`:           {false, false},
		` , ,"5f-1a"`:      {true, true},
		`W/"x",W/"5f-1a" `: {false, true},
	} {
		if got := etagListMatch([]string{in}, tag, true); got != want[0] {
			t.Errorf("strong %q: %v", in, got)
		}
		if got := etagListMatch([]string{in}, tag, false); got != want[1] {
			t.Errorf("weak %q: %v", in, got)
		}
	}
}
