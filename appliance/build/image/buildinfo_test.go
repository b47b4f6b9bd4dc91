package image

import (
	"io"
	"os"
	"testing"
)

// TestSections finds in a built image what an over-the-air update sends:
// the boot FAT16 and root SquashFS (their used size only), and the build's
// identity in arka-build.json.
func TestSections(t *testing.T) {
	img, sum := builtAmd64(t)
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := OpenSections(f)
	if err != nil {
		t.Fatal(err)
	}
	want := BuildInfo{Board: "amd64", Version: "test", BuildTimestamp: sum.BuildTimestamp, SBOMHash: sum.SBOMHash}
	if s.Build != want {
		t.Errorf("build info %+v, want %+v", s.Build, want)
	}
	if s.Boot.Size() != sum.BootUsed {
		t.Errorf("boot section %d bytes, the FAT16 uses %d", s.Boot.Size(), sum.BootUsed)
	}
	// mksquashfs pads its output to 4 KiB; the section is all of it.
	if s.Root.Size() != sum.RootUsed {
		t.Errorf("root section %d bytes, the SquashFS file has %d", s.Root.Size(), sum.RootUsed)
	}
	if _, err := OpenSections(io.NewSectionReader(f, 0, 1<<20)); err == nil {
		t.Error("a truncated image was accepted")
	}
}
