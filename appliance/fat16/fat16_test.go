package fat16

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testFiles() []File {
	big := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640 000 bytes, many clusters
	return []File{
		{Path: "vmlinuz", Data: big},
		{Path: "cmdline.txt", Data: []byte("console=tty1 root=PARTUUID=x/PARTNROFF=1\n" + strings.Repeat(" ", 64))},
		{Path: "config.txt", Data: nil},
		{Path: "loader/entries/gokrazy.conf", Data: []byte("title gokrazy\rlinux /vmlinuz\roptions a b\n" + strings.Repeat(" ", 64))},
		{Path: "EFI/BOOT/BOOTX64.EFI", Data: []byte("MZ fake")},
		{Path: "overlays/a-very-long-overlay-name.dtbo", Data: []byte("x")},
		{Path: "overlays/a-very-long-overlay-name2.dtbo", Data: []byte("y")},
		{Path: "pieeprom.sig", Data: []byte("abc\nts: 1\n")},
	}
}

func writeImage(t *testing.T, files []File) (string, *Layout) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "boot.img")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lay, err := Write(f, files, Options{Label: "ARKA", VolumeID: 0x1234, ModTime: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), HiddenSecs: 8192})
	if err != nil {
		t.Fatal(err)
	}
	return p, lay
}

// TestGokrazyReaderFindsFiles reads the volume back the way gokrazy's init
// does (§3.3) and checks that every file it edits is found, with the right
// content, and that extension-less names survive only when stored exactly.
func TestGokrazyReaderFindsFiles(t *testing.T) {
	files := testFiles()
	p, lay := writeImage(t, files)
	img, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(img)
	for _, f := range files {
		if strings.HasPrefix(f.Path, "overlays/") {
			continue // long extension-less-free names are not looked up by init
		}
		off, n, err := Extents(r, "/"+f.Path)
		if err != nil {
			t.Errorf("Extents(%s): %v", f.Path, err)
			continue
		}
		if got := img[off : off+n]; !bytes.Equal(got, f.Data) {
			t.Errorf("%s: content differs (%d bytes at %d)", f.Path, n, off)
		}
		if want := lay.FileExtents[f.Path]; n > 0 && want != [2]int64{off, n} {
			t.Errorf("%s: reader extents %d+%d, writer placed it at %v", f.Path, off, n, want)
		}
	}
	if _, _, err := Extents(r, "/loader/entries/missing.conf"); err == nil {
		t.Error("found a file that does not exist")
	}
	// gokrazy's header fields: one FAT, 4 reserved sectors, 4 sectors/cluster.
	if img[16] != 1 || img[13] != 4 || img[14] != 4 || string(img[54:62]) != "FAT16   " {
		t.Errorf("BPB: fats=%d spc=%d reserved=%d type=%q", img[16], img[13], img[14], img[54:62])
	}
	if lay.Clusters < 4085 {
		t.Errorf("only %d clusters: that is FAT12", lay.Clusters)
	}
}

// TestExtensionlessNamesStoredExactly checks the trap of §3.3 rule 4: an
// upper-case LOADER entry is invisible to gokrazy's reader.
func TestExtensionlessNamesStoredExactly(t *testing.T) {
	if got := readerShortName("loader"); got != "LOADER." {
		t.Fatalf("reader conversion of loader = %q", got)
	}
	if got := readerShortName("gokrazy.conf"); got != "GOKRAZ~1.CON" {
		t.Fatalf("reader conversion of gokrazy.conf = %q", got)
	}
	seen := map[string]bool{}
	for name, want := range map[string]string{
		"loader":       "loader     ",
		"cmdline.txt":  "CMDLINE TXT",
		"gokrazy.conf": "GOKRAZ~1CON",
		"EFI":          "EFI        ",
	} {
		got, err := shortName(name, seen)
		if err != nil {
			t.Fatal(err)
		}
		if string(got[:]) != want {
			t.Errorf("shortName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestInPlaceEditsSurvive applies the edits gokrazy's init makes to
// cmdline.txt and gokrazy.conf (testboot inserts " gokrazy.try_boot_inactive=1"
// before every "\n", writing past the recorded file size; switch rewrites
// root=) and checks that the flag stays inside the file and that the
// systemd-boot entry keeps its "linux" line intact.
func TestInPlaceEditsSurvive(t *testing.T) {
	p, _ := writeImage(t, testFiles())
	img, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(img)
	for _, name := range []string{"/cmdline.txt", "/loader/entries/gokrazy.conf"} {
		off, n, err := Extents(r, name)
		if err != nil {
			t.Fatal(err)
		}
		b := append([]byte(nil), img[off:off+n]...)
		rep := bytes.ReplaceAll(b, []byte("\n"), []byte(" gokrazy.try_boot_inactive=1\n"))
		if int(n)%clusterSize+len(rep)-len(b) > clusterSize {
			t.Fatalf("%s: testboot would write past its cluster", name)
		}
		after := rep[:n] // what a reader sees: the size field is not changed
		if !bytes.Contains(after, []byte("gokrazy.try_boot_inactive=1")) {
			t.Errorf("%s after testboot lost the flag: %q", name, after)
		}
		if name == "/loader/entries/gokrazy.conf" && !bytes.Contains(after, []byte("\rlinux /vmlinuz\r")) {
			t.Errorf("testboot broke the linux line: %q", after)
		}
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := writeImage(t, testFiles())
	b, _ := writeImage(t, testFiles())
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Fatal("two writes of the same files differ")
	}
}

// TestDosfsck lets dosfstools and mtools check the volume.
func TestDosfsck(t *testing.T) {
	fsck, err := exec.LookPath("fsck.vfat")
	if err != nil {
		t.Skip("fsck.vfat not installed (Debian package dosfstools)")
	}
	p, _ := writeImage(t, testFiles())
	out, err := exec.Command(fsck, "-n", "-v", p).CombinedOutput()
	if err != nil {
		t.Fatalf("fsck.vfat: %v\n%s", err, out)
	}
	if bytes.Contains(bytes.ToLower(out), []byte("differ")) || bytes.Contains(out, []byte("Free cluster summary wrong")) {
		t.Errorf("fsck.vfat complains:\n%s", out)
	}
	mtype, err := exec.LookPath("mtype")
	if err != nil {
		t.Skip("mtools not installed")
	}
	cmd := exec.Command(mtype, "-i", p, "::loader/entries/gokrazy.conf")
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
	out, err = cmd.CombinedOutput()
	if err != nil || !bytes.HasPrefix(out, []byte("title gokrazy")) {
		t.Fatalf("mtype gokrazy.conf: %v\n%s", err, out)
	}
	cmd = exec.Command("mdir", "-i", p, "-b", "::overlays")
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
	out, err = cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("a-very-long-overlay-name2.dtbo")) {
		t.Fatalf("mdir overlays: %v\n%s", err, out)
	}
}
