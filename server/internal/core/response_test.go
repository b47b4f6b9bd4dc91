package core

import (
	"net/http"
	"testing"
)

func TestDeclaredLength(t *testing.T) {
	for _, tc := range []struct {
		vals []string
		want int64
		kept bool
	}{
		{nil, -1, false},
		{[]string{"5"}, 5, true},
		{[]string{"0"}, 0, true},
		{[]string{"+5"}, -1, false},
		{[]string{"-1"}, -1, false},
		{[]string{"5", "5"}, -1, false},
		{[]string{"0x5"}, -1, false},
	} {
		h := http.Header{}
		if tc.vals != nil {
			h["Content-Length"] = tc.vals
		}
		got := DeclaredLength(h)
		_, kept := h["Content-Length"]
		if got != tc.want || kept != tc.kept {
			t.Errorf("%q: %d kept %v, want %d kept %v", tc.vals, got, kept, tc.want, tc.kept)
		}
	}
}

func TestBodyAllowed(t *testing.T) {
	for code, want := range map[int]bool{100: false, 103: false, 200: true, 204: false, 304: false, 404: true, 500: true} {
		if BodyAllowed(code) != want {
			t.Errorf("%d: %v", code, !want)
		}
	}
}

func TestPrepareHead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		r        Head
		hdr      http.Header
		want     int64
		wantCL   string
		trailers int
	}{
		{"final", Head{Status: 200, BodyOK: true, Final: true, CL: -1, Written: 3, Pending: []byte("abc")}, http.Header{}, 3, "3", 0},
		{"streaming", Head{Status: 200, BodyOK: true, CL: -1, Written: 3, Pending: []byte("abc")}, http.Header{}, -1, "", 0},
		{"declared", Head{Status: 200, BodyOK: true, Final: true, CL: 9}, http.Header{"Content-Length": {"9"}}, 9, "9", 0},
		{"trailers", Head{Status: 200, BodyOK: true, Final: true, CL: -1}, http.Header{"Trailer": {"X-A, x-b"}}, -1, "", 2},
		{"head", Head{Status: 200, BodyOK: true, HEAD: true, Final: true, CL: -1, Written: 7}, http.Header{}, 7, "7", 0},
		{"204", Head{Status: 204, Final: true, CL: 5}, http.Header{"Content-Length": {"5"}}, -1, "", 0},
		{"304", Head{Status: 304, Final: true, CL: 5}, http.Header{"Content-Length": {"5"}}, -1, "5", 0},
	} {
		got, tr := PrepareHead(tc.hdr, tc.r, nil)
		if got != tc.want || tc.hdr.Get("Content-Length") != tc.wantCL || len(tr) != tc.trailers {
			t.Errorf("%s: length %d, Content-Length %q, trailers %v", tc.name, got, tc.hdr.Get("Content-Length"), tr)
		}
	}
	h := http.Header{}
	PrepareHead(h, Head{Status: 200, BodyOK: true, CL: -1, Pending: []byte("<html>")}, nil)
	if h.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("sniffed %q", h.Get("Content-Type"))
	}
	h = http.Header{"Content-Type": nil}
	PrepareHead(h, Head{Status: 200, BodyOK: true, CL: -1, Pending: []byte("<html>")}, nil)
	if h["Content-Type"] != nil {
		t.Errorf("a nil Content-Type was replaced: %q", h["Content-Type"])
	}
	if !Short(Head{BodyOK: true, CL: 10, Written: 3}) || Short(Head{BodyOK: true, HEAD: true, CL: 10}) || Short(Head{BodyOK: true, CL: -1, Written: 3}) {
		t.Error("Short")
	}
}

func TestEachTrailer(t *testing.T) {
	h := http.Header{"X-A": {"1"}, "X-B": {"2"}, http.TrailerPrefix + "x-late": {"3"}}
	got := map[string]string{}
	EachTrailer(h, []string{"X-A", "X-Missing"}, func(name string, v []string) { got[name] = v[0] })
	if len(got) != 2 || got["X-A"] != "1" || got["X-Late"] != "3" {
		t.Errorf("%v", got)
	}
	if !HasTrailers(http.Header{http.TrailerPrefix + "x": {"1"}}, nil) || HasTrailers(http.Header{"X": {"1"}}, nil) {
		t.Error("HasTrailers")
	}
}

func TestHold(t *testing.T) {
	if !Hold(-1, 0, PendingLimit) || Hold(-1, 1, PendingLimit) || Hold(10, 0, 1) {
		t.Error("Hold")
	}
	if ok, cl := Final(204, http.Header{"Content-Length": {"3"}}); ok || cl != 3 {
		t.Errorf("Final(204): %v %d", ok, cl)
	}
}

func TestFieldChecks(t *testing.T) {
	for name, want := range map[string]bool{"X-Ok": true, "x_ok~": true, "": false, "Bad Name": false, "X:y": false, "X(y)": false, "X\xffy": false} {
		if ValidFieldName(name) != want {
			t.Errorf("ValidFieldName(%q) = %v", name, !want)
		}
	}
	for v, want := range map[string]string{"plain\tvalue": "plain\tvalue", "a\r\nb": "a  b", "\x00x\x7f": " x ", "caf\xc3\xa9": "caf\xc3\xa9"} {
		if got := CleanValue(v); got != want {
			t.Errorf("CleanValue(%q) = %q, want %q", v, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { CleanValue("clean value") }); n != 0 {
		t.Errorf("CleanValue of a clean value allocates %v times", n)
	}
}
