package wifiimage

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestFirmwarePerBoard fetches Debian's packages (skipped when apt does not
// know firmware-brcm80211: the non-free-firmware component is missing) and
// lists, per board, the chip and the files the image carries; every board
// that is not marked Missing has its firmware, CLM blob and NVRAM.
func TestFirmwarePerBoard(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads Debian packages")
	}
	if out, err := exec.Command("apt-cache", "show", "--no-all-versions", "firmware-brcm80211").Output(); err != nil || len(out) == 0 {
		t.Skip("apt does not know firmware-brcm80211 (add Debian's non-free-firmware component, as .ci/run does)")
	}
	cache := os.Getenv("ARKA_DEB_CACHE")
	if cache == "" {
		cache = t.TempDir()
	}
	res, err := Collect(Options{CacheDir: cache, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range res.Files {
		have[f.Path] = true
	}
	covered := map[string]bool{}
	for _, p := range res.Boards {
		covered[p.Board.Compatible] = true
		t.Logf("%-30s %-12s %s", p.Board.Name, p.Board.Chip, strings.Join(p.Files, " "))
		if len(p.Files) != 3 {
			t.Errorf("%s: %d files, want firmware, CLM blob and NVRAM", p.Board.Name, len(p.Files))
		}
		for _, f := range p.Files {
			if !have[f] {
				t.Errorf("%s: %s is not in the image", p.Board.Name, f)
			}
		}
		want := "/lib/firmware/brcm/" + p.Board.Base + "." + p.Board.Compatible + ".txt"
		if !have[want] {
			t.Errorf("%s: no NVRAM at %s (brcmfmac asks for it by the device tree's compatible)", p.Board.Name, want)
		}
	}
	for _, b := range Boards {
		if b.Missing != "" {
			t.Logf("%-30s %-12s not in the image: %s", b.Name, b.Chip, b.Missing)
			continue
		}
		if !covered[b.Compatible] {
			t.Errorf("%s has no firmware in the image", b.Name)
		}
	}
	for _, f := range []string{"/lib/firmware/regulatory.db", "/lib/firmware/regulatory.db.p7s"} {
		if !have[f] {
			t.Errorf("%s missing", f)
		}
	}
	t.Logf("packages: %v", res.Packages)
}
