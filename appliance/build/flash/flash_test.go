package flash

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ulikunitz/xz"
)

func TestWriteFileAndVerify(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "a.img")
	data := diskImage(t, 9<<20+512) // not a multiple of the copy buffer
	rand.Read(data[2<<20:])
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

// TestWriteCompressed: .img.xz and .img.gz are decompressed while written;
// the target holds the image itself, verified; progress reaches the
// compressed file's size.
func TestWriteCompressed(t *testing.T) {
	dir := t.TempDir()
	data := diskImage(t, 2<<20+512) // part random, part zeros, as an image is
	for _, ext := range []string{".xz", ".gz"} {
		img := filepath.Join(dir, "a.img"+ext)
		var buf bytes.Buffer
		var w io.WriteCloser
		if ext == ".xz" {
			xw, err := xz.NewWriter(&buf)
			if err != nil {
				t.Fatal(err)
			}
			w = xw
		} else {
			w = gzip.NewWriter(&buf)
		}
		w.Write(data)
		w.Close()
		os.WriteFile(img, buf.Bytes(), 0o644)
		target := filepath.Join(dir, "card"+ext)
		var lastWrite [2]int64
		res, err := Write(Options{Image: img, Target: target, Create: true, Progress: func(p string, done, total int64) {
			if p == "write" {
				lastWrite = [2]int64{done, total}
			}
		}})
		if err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		got, _ := os.ReadFile(target)
		if !bytes.Equal(got, data) || res.Bytes != int64(len(data)) || res.SHA256 != sha256.Sum256(data) {
			t.Errorf("%s: target holds %d bytes, result %d", ext, len(got), res.Bytes)
		}
		if lastWrite[1] != int64(buf.Len()) || lastWrite[0] != lastWrite[1] {
			t.Errorf("%s: last write progress %d/%d, want %d/%d", ext, lastWrite[0], lastWrite[1], buf.Len(), buf.Len())
		}
	}
	// A damaged compressed image is an error, not a short card.
	os.WriteFile(filepath.Join(dir, "bad.img.xz"), []byte("not xz at all"), 0o644)
	if _, err := Write(Options{Image: filepath.Join(dir, "bad.img.xz"), Target: filepath.Join(dir, "card.bad"), Create: true}); err == nil {
		t.Error("no error for a damaged .xz")
	}
}

func TestDescribe(t *testing.T) {
	f := filepath.Join(t.TempDir(), "card")
	os.WriteFile(f, make([]byte, 2e6), 0o644)
	if got := Describe(f); got != f+": a regular file of 2.0 MB" {
		t.Errorf("Describe = %q", got)
	}
	if d := Describe("/dev/null"); !strings.HasPrefix(d, "/dev/null: ") {
		t.Errorf("Describe(/dev/null) = %q", d)
	}
}
