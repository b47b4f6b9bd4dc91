package flash

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ulikunitz/xz"
)

// diskImage returns a disk image of size bytes (a multiple of 512) the way
// the image builder lays one out: a hybrid MBR, a GPT whose backup header is
// the last sector, and one partition from 1 MiB to the end; part random,
// part zeros.
func diskImage(t *testing.T, size int64) []byte {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data[1<<20 : 1<<20+256<<10])
	// MBR: one partition entry (type 0x0c) from LBA 2048 to the end, and a
	// protective 0xEE entry over the GPT.
	e := data[446:]
	e[4] = 0xEE
	binary.LittleEndian.PutUint32(e[8:], 1)
	binary.LittleEndian.PutUint32(e[12:], 2047)
	e = data[446+16:]
	e[4] = 0x0c
	binary.LittleEndian.PutUint32(e[8:], 2048)
	binary.LittleEndian.PutUint32(e[12:], uint32(size/512-2048-33))
	data[510], data[511] = 0x55, 0xAA
	// GPT header at LBA 1 (UEFI 2.10 §5.3.2), entries at LBA 2.
	h := data[512:]
	copy(h, "EFI PART")
	binary.LittleEndian.PutUint64(h[24:], 1)
	binary.LittleEndian.PutUint64(h[32:], uint64(size/512-1))
	binary.LittleEndian.PutUint64(h[72:], 2)
	binary.LittleEndian.PutUint32(h[80:], 128)
	binary.LittleEndian.PutUint32(h[84:], 128)
	p := data[1024:]
	p[0] = 0xAF // a type GUID that is not all zeros
	binary.LittleEndian.PutUint64(p[32:], 2048)
	binary.LittleEndian.PutUint64(p[40:], uint64(size/512-34))
	return data
}

func compress(t *testing.T, ext string, data []byte) []byte {
	t.Helper()
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
	return buf.Bytes()
}

// existing returns the path of a new, empty regular file in dir.
func existing(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRefuseTruncatedCompressed: an .xz or .gz image cut short (a broken
// download) is an error that says so, not a card reported good.
func TestRefuseTruncatedCompressed(t *testing.T) {
	dir := t.TempDir()
	data := diskImage(t, 4<<20)
	for _, ext := range []string{".xz", ".gz"} {
		z := compress(t, ext, data)
		for _, cut := range []int{len(z) / 2, len(z) - 1} {
			img := filepath.Join(dir, "trunc.img"+ext)
			os.WriteFile(img, z[:cut], 0o644)
			target := existing(t, dir, "card")
			_, err := Write(Options{Image: img, Target: target})
			if err == nil || !strings.Contains(err.Error(), "truncated or corrupt") {
				t.Errorf("%s cut to %d of %d bytes: %v", ext, cut, len(z), err)
			}
		}
	}
	// A raw image cut short: its partition table reaches past its end.
	img := filepath.Join(dir, "trunc.img")
	os.WriteFile(img, data[:3<<20], 0o644)
	target := existing(t, dir, "card")
	if _, err := Write(Options{Image: img, Target: target}); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("raw image cut short: %v", err)
	}
	if st, _ := os.Stat(target); st.Size() != 0 {
		t.Errorf("raw image cut short: %d bytes written", st.Size())
	}
}

// TestRefuseMissingTarget: a target that does not exist is refused (a
// mistyped /dev/sdz would otherwise become a file in RAM), and nothing is
// created.
func TestRefuseMissingTarget(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "a.img")
	os.WriteFile(img, diskImage(t, 2<<20), 0o644)
	for _, target := range []string{filepath.Join(dir, "t1.img"), "/dev/arka-flash-test-no-such-device"} {
		_, err := Write(Options{Image: img, Target: target})
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("%s: %v", target, err)
		}
		if _, err := os.Stat(target); err == nil {
			os.Remove(target)
			t.Errorf("%s was created", target)
		}
	}
}

// TestRefuseNotAnImage: an empty file, or one that does not begin with a
// partition table, is refused before anything is written.
func TestRefuseNotAnImage(t *testing.T) {
	dir := t.TempDir()
	noSig := diskImage(t, 2<<20)
	noSig[510] = 0
	copy(noSig[512:], "NOT PART")
	noParts := make([]byte, 2<<20)
	noParts[510], noParts[511] = 0x55, 0xAA
	for name, data := range map[string][]byte{
		"empty.img":    nil,
		"short.img":    []byte("hello"),
		"nosig.img":    noSig,
		"noparts.img":  noParts,
		"empty.img.gz": compress(t, ".gz", nil),
		"text.img.xz":  compress(t, ".xz", bytes.Repeat([]byte("not an image\n"), 1000)),
	} {
		img := filepath.Join(dir, name)
		os.WriteFile(img, data, 0o644)
		target := filepath.Join(dir, "card")
		os.WriteFile(target, []byte("old"), 0o644)
		_, err := Write(Options{Image: img, Target: target})
		if err == nil || !strings.Contains(err.Error(), "not a disk image") {
			t.Errorf("%s: %v", name, err)
		}
		if got, _ := os.ReadFile(target); string(got) != "old" {
			t.Errorf("%s: target changed to %d bytes", name, len(got))
		}
	}
}

// TestRefuseSameFile: flashing an image onto itself is refused, and the
// image survives.
func TestRefuseSameFile(t *testing.T) {
	dir := t.TempDir()
	data := compress(t, ".gz", diskImage(t, 2<<20))
	img := filepath.Join(dir, "x.img.gz")
	os.WriteFile(img, data, 0o644)
	os.Symlink(img, filepath.Join(dir, "link"))
	for _, target := range []string{img, filepath.Join(dir, "link")} {
		_, err := Write(Options{Image: img, Target: target})
		if err == nil || !strings.Contains(err.Error(), "same file") {
			t.Errorf("%s: %v", target, err)
		}
		if got, _ := os.ReadFile(img); !bytes.Equal(got, data) {
			t.Fatalf("%s: the image was changed", target)
		}
	}
}

// TestCreate: with Create a new regular file is written, never under /dev.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	data := diskImage(t, 2<<20)
	img := filepath.Join(dir, "a.img")
	os.WriteFile(img, data, 0o644)
	target := filepath.Join(dir, "vm.img")
	if _, err := Write(Options{Image: img, Target: target, Create: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, data) {
		t.Error("the new file does not hold the image")
	}
	dev := "/dev/arka-flash-test-no-such-device"
	if _, err := Write(Options{Image: img, Target: dev, Create: true}); err == nil || !strings.Contains(err.Error(), "no such device") {
		t.Errorf("%s with Create: %v", dev, err)
	}
	if _, err := os.Stat(dev); err == nil {
		os.Remove(dev)
		t.Errorf("%s was created", dev)
	}
}

// TestUncompressedSize: the size checked against the device is the
// image's, not the compressed file's: from the XZ index (also with
// several blocks and streams, as xz -T writes them) and gzip's trailer.
func TestUncompressedSize(t *testing.T) {
	dir := t.TempDir()
	data := diskImage(t, 3<<20)
	files := map[string][]byte{
		"lib.img.xz": compress(t, ".xz", data),
		"lib.img.gz": compress(t, ".gz", data),
		// Two streams with stream padding between them.
		"two.img.xz": append(append(compress(t, ".xz", data[:1<<20]), 0, 0, 0, 0), compress(t, ".xz", data[1<<20:])...),
	}
	for name, z := range files {
		img := filepath.Join(dir, name)
		os.WriteFile(img, z, 0o644)
		p, err := Prepare(Options{Image: img, Target: existing(t, dir, "card")})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Size != int64(len(data)) {
			t.Errorf("%s: Size %d, want %d (compressed %d)", name, p.Size, len(data), len(z))
		}
		res, err := p.Write()
		if err != nil || res.Bytes != int64(len(data)) {
			t.Errorf("%s: %v, %d bytes", name, err, res.Bytes)
		}
	}
}

// TestXZToolSize: an image compressed by xz(1) in several blocks, as
// images are published, has its size read from the index.
func TestXZToolSize(t *testing.T) {
	xzTool, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("no xz here")
	}
	dir := t.TempDir()
	data := diskImage(t, 5<<20)
	img := filepath.Join(dir, "a.img")
	os.WriteFile(img, data, 0o644)
	if out, err := exec.Command(xzTool, "-T2", "--block-size=1MiB", "-0", img).CombinedOutput(); err != nil {
		t.Fatalf("xz: %v\n%s", err, out)
	}
	p, err := Prepare(Options{Image: img + ".xz", Target: existing(t, dir, "card")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Size != int64(len(data)) {
		t.Errorf("Size %d, want %d", p.Size, len(data))
	}
}
