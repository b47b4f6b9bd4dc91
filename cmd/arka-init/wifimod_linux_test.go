package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A Pi whose NVRAM file is missing from the image is named; a Pi with one,
// a machine without a device tree and a non-Pi board are not.
func TestNoFirmwareFor(t *testing.T) {
	root := t.TempDir()
	if c := noFirmwareFor(root); c != "" {
		t.Errorf("no device tree: %q", c)
	}
	dt := filepath.Join(root, "proc", "device-tree")
	os.MkdirAll(dt, 0o755)
	fw := filepath.Join(root, "lib", "firmware", "brcm")
	os.MkdirAll(fw, 0o755)
	os.WriteFile(filepath.Join(fw, "brcmfmac43455-sdio.raspberrypi,4-model-b.txt"), nil, 0o644)
	for compat, want := range map[string]string{
		"raspberrypi,4-model-b\x00brcm,bcm2711\x00":      "",
		"raspberrypi,model-zero-2-w\x00brcm,bcm2837\x00": "raspberrypi,model-zero-2-w",
		"pine64,rockpro64\x00rockchip,rk3399\x00":        "",
		"raspberrypi,model-zero-2-w*\x00":                "",
	} {
		os.WriteFile(filepath.Join(dt, "compatible"), []byte(compat), 0o644)
		if got := noFirmwareFor(root); got != want {
			t.Errorf("%q: %q, want %q", compat, got, want)
		}
	}
	os.WriteFile(filepath.Join(fw, "brcmfmac43430b0-sdio.raspberrypi,model-zero-2-w.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(dt, "compatible"), []byte("raspberrypi,model-zero-2-w\x00brcm,bcm2837\x00"), 0o644)
	if got := noFirmwareFor(root); got != "" {
		t.Errorf("with its NVRAM file: %q", got)
	}
}
