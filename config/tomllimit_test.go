package config

import (
	"runtime"
	"strings"
	"testing"
)

// TestTOMLNestingLimit (QA A9): the TOML library's cost is quadratic in
// the nesting of arrays and inline tables (a 20 KB file cost 186 MB, 400
// KB ran to 11 GB). A file nested deeper than MaxTOMLNesting, or larger
// than MaxTOMLSize, is refused before decoding, at file:line:col, with
// little memory; brackets in strings and comments do not count.
func TestTOMLNestingLimit(t *testing.T) {
	deep := func(n int) string { return "x = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n" }
	for _, c := range []struct{ name, src, want string }{
		{"arrays", deep(MaxTOMLNesting + 1), "deep.toml:1:37: nesting deeper than 32"},
		{"inline tables", "\n  y = " + strings.Repeat("{a=", 40) + strings.Repeat("}", 40), "deep.toml:2:103: nesting deeper than 32"},
		{"mixed", "z = [" + strings.Repeat("{a=[", 20) + "]}" + strings.Repeat("]}", 19) + "]", "deep.toml:1:"},
		{"too large", "# " + strings.Repeat("x", MaxTOMLSize) + "\n", "larger than"},
	} {
		_, err := Parse("deep.toml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	for _, src := range []string{
		deep(MaxTOMLNesting),
		"x = \"" + strings.Repeat("[", 100) + "\"\n",
		"x = '''\n" + strings.Repeat("{[", 100) + "\n'''\n",
		"x = \"\"\"\n\\\"" + strings.Repeat("[", 100) + "\"\"\"\n",
		"# " + strings.Repeat("[", 100) + "\nx = 1\n",
		"[[" + strings.Repeat("a.", 40) + "b]]\n",
	} {
		if _, err := Parse("ok.toml", []byte(src)); err == nil || strings.Contains(err.Error(), "nesting") || strings.Contains(err.Error(), "larger than") {
			t.Errorf("%.60q: err = %v, want the file decoded (and refused for its keys only)", src, err)
		}
	}

	// 400 KB of nesting: refused quickly and with little memory.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Parse("deep.toml", []byte(deep(200000)))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "nesting deeper") {
		t.Errorf("400 KB nested: err = %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("400 KB nested file: %d MB allocated", n>>20)
	}
}
