package flash

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileAndVerify(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "a.img")
	data := make([]byte, 9<<20+512) // not a multiple of the copy buffer
	rand.Read(data)
	if err := os.WriteFile(img, data, 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "card")
	// A target that already holds more (and other) data: the image's
	// length is written and verified; a file target is cut to the image.
	os.WriteFile(target, bytes.Repeat([]byte{0xAB}, 12<<20), 0o644)
	var phases []string
	res, err := Write(Options{Image: img, Target: target, Progress: func(p string, done, total int64) {
		if len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
		}
		if total != int64(len(data)) || done > total {
			t.Errorf("progress %s %d/%d", p, done, total)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.SHA256 != sha256.Sum256(data) || res.Bytes != int64(len(data)) {
		t.Errorf("result %x %d", res.SHA256, res.Bytes)
	}
	got, _ := os.ReadFile(target)
	if !bytes.Equal(got, data) {
		t.Error("target differs from the image")
	}
	if strings.Join(phases, ",") != "write,verify" {
		t.Errorf("phases %v", phases)
	}
}

// TestCheckRefusesSystemDisk runs the safety checks against the disk that
// holds this machine's root file system.
func TestCheckRefusesSystemDisk(t *testing.T) {
	disk, err := diskOf("/")
	if err != nil {
		t.Skipf("cannot find the root file system's disk: %v", err)
	}
	dev := "/dev/" + disk
	if st, err := os.Stat(dev); err != nil || st.Mode()&os.ModeDevice == 0 {
		t.Skipf("%s is not a block device node here", dev)
	}
	problems := Check(dev, 1<<20)
	joined := strings.Join(problems, "\n")
	if !strings.Contains(joined, "running system") {
		t.Errorf("Check(%s) does not name the system disk: %q", dev, problems)
	}
	t.Logf("Check(%s):\n%s", dev, joined)
}
