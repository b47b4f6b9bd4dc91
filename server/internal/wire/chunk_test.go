package wire

import "testing"

func TestParseChunkSize(t *testing.T) {
	for _, c := range []struct {
		line string
		size int64
		ok   bool
	}{
		{"0", 0, true},
		{"1a", 26, true},
		{"FF", 255, true},
		{"10;name=value", 16, true},
		{"10 \t;ext", 16, true},
		{"fffffffffffffff", 1<<60 - 1, true},
		{"1000000000000000", 0, false}, // 16 digits: would overflow
		{"", 0, false},
		{";ext", 0, false},
		{"10 ", 0, false}, // whitespace without an extension
		{"0x10", 0, false},
		{"-1", 0, false},
		{"10;a\x00", 0, false},
		{"10;a\x7f", 0, false},
		{"10;a\tb", 16, true},
	} {
		size, ok := ParseChunkSize([]byte(c.line))
		if size != c.size || ok != c.ok {
			t.Errorf("ParseChunkSize(%q) = %d, %v; want %d, %v", c.line, size, ok, c.size, c.ok)
		}
	}
}
