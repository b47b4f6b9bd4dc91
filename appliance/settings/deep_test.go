package settings

import (
	"strings"
	"testing"
)

// TestDeepSettings (QA A9): settings.txt is decoded in PID 1; a nested
// file is refused before decoding (config.CheckTOML), at file:line:col.
func TestDeepSettings(t *testing.T) {
	src := "hostname = \"garden\"\nx = " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n"
	_, errs := Parse("settings.txt", []byte(src))
	if len(errs) == 0 || !strings.Contains(errs.Error(), "settings.txt:2:37: nesting deeper than 32") {
		t.Errorf("errs = %v", errs)
	}
}
