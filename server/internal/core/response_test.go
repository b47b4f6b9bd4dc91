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
