package server

import (
	"encoding/json"
	"testing"
)

// Log fields carry request bytes; none reaches the log raw if it could
// drive a terminal or break the line: C0 and C1 controls, DEL, quotes,
// backslashes, bytes that are not UTF-8.
func TestLogEscaping(t *testing.T) {
	in := "a\"b\\c\x1b[31m\x7f\xff\u009b2J\u00e9"
	if got, want := string(appendEscaped(nil, in)), `a\x22b\x5Cc\x1B[31m\x7F\xFF\xC2\x9B2J\xC3\xA9`; got != want {
		t.Errorf("combined: %s, want %s", got, want)
	}
	j := appendJSON(nil, in)
	for _, c := range j {
		if c < 0x20 || c == 0x7f {
			t.Fatalf("JSON has byte %#x: %q", c, j)
		}
	}
	var back string
	if err := json.Unmarshal(j, &back); err != nil || back != "a\"b\\c\x1b[31m\x7f\ufffd\u009b2J\u00e9" {
		t.Errorf("JSON %s decodes to %q, %v", j, back, err)
	}
	if string(j) != `"a\"b\\c\u001b[31m\u007f\ufffd\u009b2Jé"` {
		t.Errorf("JSON: %s", j)
	}
}
