package encoding

import (
	"testing"

	"github.com/arkaweb/arka/config"
)

// Levels from the configuration are used as given: brotli 0 is a level,
// not "unset"; only Options with no levels at all take the defaults.
func TestLevelsKept(t *testing.T) {
	var lv [NumCodings]int
	lv[Zstd], lv[Brotli], lv[Gzip] = 2, 0, 7
	if got := New(Options{Levels: lv}).o.Levels; got != lv {
		t.Errorf("levels %v, want %v", got, lv)
	}
	var def [NumCodings]int
	def[Zstd], def[Brotli], def[Gzip] = config.DefaultZstdLevel, config.DefaultBrotliLevel, config.DefaultGzipLevel
	if got := New(Options{}).o.Levels; got != def {
		t.Errorf("no levels: %v, want the defaults %v", got, def)
	}
}
