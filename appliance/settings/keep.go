package settings

import (
	"bytes"
	"crypto/sha256"
	"fmt"
)

// Build names the settings.txt an image build put into its boot partition
// (the image builder writes it as JSON to /etc/arka/settings-build.json).
type Build struct {
	SHA256 string `json:"sha256"` // of the built settings.txt
	Given  bool   `json:"given"`  // given at build time (flags or --settings), not the commented-out defaults
}

// NewBuild describes a built settings file.
func NewBuild(file []byte, given bool) Build {
	return Build{SHA256: fmt.Sprintf("%x", sha256.Sum256(file)), Given: given}
}

// Choose decides which settings file the device uses at boot. boot is the
// boot partition's settings.txt (nil if missing), build names the file
// the running build put there, kept is the file the device used at its
// last boot (nil if none, kept on /perm).
//
// An over-the-air update rewrites the whole boot partition, so after one
// the boot partition holds the new build's file. If nobody gave that file
// on purpose (the build's defaults) and the device had its own, the
// device's own file is used and should be written back to the boot
// partition (restore). In every other case the boot partition's file is
// used: a person edited the card, the build gave settings on purpose, or
// there is nothing to keep.
func Choose(boot []byte, build Build, kept []byte) (use []byte, restore bool) {
	if kept != nil && !build.Given && !bytes.Equal(boot, kept) &&
		(boot == nil || fmt.Sprintf("%x", sha256.Sum256(boot)) == build.SHA256) {
		return kept, true
	}
	return boot, false
}
