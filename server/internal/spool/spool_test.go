package spool

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	mem := make([]byte, 8)
	buf := make([]byte, 4)
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		body   string
		n, max int64
		file   bool
		err    error
	}{
		{"small known", "abc", 3, 100, false, nil},
		{"small unknown", "abc", -1, 100, false, nil},
		{"large known", "0123456789abc", 13, 100, true, nil},
		{"large unknown", "0123456789abc", -1, 100, true, nil},
		{"short known", "0123456789", 13, 100, false, io.ErrUnexpectedEOF},
		{"short small", "ab", 3, 100, false, io.ErrUnexpectedEOF},
		{"known over max", "0123456789abc", 13, 12, false, ErrTooLarge},
		{"unknown over max", "0123456789abc", -1, 12, false, ErrTooLarge},
		{"unknown at max", "0123456789ab", -1, 12, true, nil},
	} {
		b, err := Read(strings.NewReader(tc.body), tc.n, mem, tc.max, dir, buf, nil, "")
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		got, _ := io.ReadAll(b.Reader())
		if string(got) != tc.body || b.Len != int64(len(tc.body)) || (b.File != nil) != tc.file {
			t.Errorf("%s: got %q len %d file %v", tc.name, got, b.Len, b.File != nil)
		}
		b.Close()
	}
}
