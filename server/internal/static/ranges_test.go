package static

import (
	"net/http"
	"strings"
	"testing"
	"time"
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
		{"bytes=99999999999999999999-", 1000, nil, errUnsatisfiable},
		{"bytes=0-99999999999999999999", 1000, []byteRange{{0, 1000}}, nil},
		{"bytes=10-9223372036854775807", 1000, []byteRange{{10, 1000}}, nil},
		{"bytes=-99999999999999999999", 1000, []byteRange{{0, 1000}}, nil},
		{"bytes=9223372036854775807-9223372036854775807", 1000, nil, errUnsatisfiable},
		{"bytes=0-1", 1000, []byteRange{{0, 2}}, nil},
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

// Fields that hold one value (RFC 9110 sections 13.1.3, 13.1.4 and 13.1.5)
// sent on several lines are ignored or match nothing, never read as their
// first line: a cache and Arka must not disagree on which line counts.
func TestRepeatedSingleValueFields(t *testing.T) {
	mod := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const etag = `"5f-1a"`
	date := mod.Format(http.TimeFormat)
	old := mod.Add(-time.Hour).Format(http.TimeFormat)
	req := func(h http.Header) *http.Request {
		return &http.Request{Method: http.MethodGet, Header: h}
	}
	for _, c := range []struct {
		h    http.Header
		want precondition
	}{
		{http.Header{"If-Modified-Since": {date}}, notModified},
		{http.Header{"If-Modified-Since": {date, date}}, proceed},
		{http.Header{"If-Unmodified-Since": {old}}, failedPrecond},
		{http.Header{"If-Unmodified-Since": {old, old}}, proceed},
		{http.Header{"If-None-Match": {`"x"`, etag}}, notModified}, // a list: lines combine
	} {
		if got := evalPreconditions(req(c.h), etag, mod); got != c.want {
			t.Errorf("%v: %v, want %v", c.h, got, c.want)
		}
	}
	if !ifRangeAllows(req(http.Header{"If-Range": {etag}}), etag, mod) || ifRangeAllows(req(http.Header{"If-Range": {etag, etag}}), etag, mod) {
		t.Errorf("If-Range on one line must match, on two must not")
	}
}
