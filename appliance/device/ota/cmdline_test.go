package ota

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/fat16"
)

const testCmdline = "console=tty1 console=ttyS0,115200 root=PARTUUID=60c24cc1-f3f9-427a-8199-86ec6f860001/PARTNROFF=1 ro init=/gokrazy/init panic=10 oops=panic rootwait"

func TestRootPartition(t *testing.T) {
	for in, want := range map[string]int{
		testCmdline: 2,
		strings.Replace(testCmdline, "PARTNROFF=1", "PARTNROFF=2", 1): 3,
		"root=PARTUUID=202db793-03 init=/gokrazy/init":                3,
		"console=tty1 root=/dev/mmcblk0p2 rootwait":                   2,
		"root=/dev/sda3":         3,
		"root=/dev/nvme0n1p2 ro": 2,
	} {
		if got, err := RootPartition(in); err != nil || got != want {
			t.Errorf("RootPartition(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "init=/gokrazy/init", "root=/dev/sda4", "root=PARTUUID=x/PARTNROFF=3", "rootwait"} {
		if n, err := RootPartition(in); err == nil {
			t.Errorf("RootPartition(%q) = %d, want an error", in, n)
		}
	}
}

func TestSetRootPartition(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{testCmdline + "\n   ", 3, strings.Replace(testCmdline, "PARTNROFF=1", "PARTNROFF=2", 1) + "\n   "},
		{"options root=PARTUUID=202db793-02 x", 3, "options root=PARTUUID=202db793-03 x"},
		{"root=/dev/mmcblk0p3", 2, "root=/dev/mmcblk0p2"},
	} {
		got, err := SetRootPartition([]byte(c.in), c.n)
		if err != nil || string(got) != c.want {
			t.Errorf("SetRootPartition(%q, %d) = %q, %v; want %q", c.in, c.n, got, err, c.want)
		}
	}
	if _, err := SetRootPartition([]byte("root=/dev/sda2"), 4); err == nil {
		t.Error("accepted partition 4")
	}
}

// bootFAT writes a boot file system the way the image builder does (FAT16
// with cmdline.txt and gokrazy.conf) into a file and returns its path.
func bootFAT(t *testing.T, cmdline string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "boot.fat")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = fat16.Write(f, []fat16.File{
		{Path: "vmlinuz", Data: bytes.Repeat([]byte{0x90}, 5000)},
		{Path: "cmdline.txt", Data: image.CmdlineFile(cmdline)},
		{Path: "loader/entries/gokrazy.conf", Data: image.LoaderEntry(cmdline)},
	}, fat16.Options{Label: "ARKA", ModTime: time.Unix(1764441516, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// gokrazyTestboot edits the boot files as gokrazy's /update/testboot does
// (insert the flag before the newline), within their recorded size.
func gokrazyTestboot(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	files, err := ReadBootFiles(f)
	if err != nil {
		return err
	}
	for _, bf := range files {
		b := bytes.ReplaceAll(bf.Content, []byte("\n"), []byte(" "+TryFlag+"\n"))
		if _, err := f.WriteAt(b[:len(bf.Content)], bf.Offset); err != nil {
			return err
		}
	}
	return nil
}

// gokrazyPivot edits the boot files as gokrazy's init does at the start of
// a trial boot: the trial flag becomes the (shorter) switched flag, padded
// with spaces before the newline.
func gokrazyPivot(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	files, err := ReadBootFiles(f)
	if err != nil {
		return err
	}
	for _, bf := range files {
		b := bytes.ReplaceAll(bf.Content, []byte(TryFlag), []byte(SwitchedFlag))
		b = bytes.Replace(b, []byte("\n"), append(bytes.Repeat([]byte(" "), len(bf.Content)-len(b)), '\n'), 1)
		if _, err := f.WriteAt(b, bf.Offset); err != nil {
			return err
		}
	}
	return nil
}

func TestBootFiles(t *testing.T) {
	p := bootFAT(t, testCmdline)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, err := ReadBootFiles(f)
	if err != nil || len(files) != 2 {
		t.Fatalf("ReadBootFiles: %d files, %v", len(files), err)
	}
	for _, bf := range files {
		if bf.Line() != testCmdline || bf.Room() != image.CmdlinePadding {
			t.Errorf("%s: line %q, room %d", bf.Path, bf.Line(), bf.Room())
		}
	}
	if n, trial, err := NextBoot(files); n != 2 || trial || err != nil {
		t.Errorf("NextBoot = %d, %v, %v; want 2", n, trial, err)
	}

	if err := gokrazyTestboot(p); err != nil {
		t.Fatal(err)
	}
	files, _ = ReadBootFiles(f)
	if n, trial, err := NextBoot(files); n != 3 || !trial || err != nil {
		t.Errorf("after testboot NextBoot = %d, %v, %v; want 3 on trial", n, trial, err)
	}
	if r := files[0].Room(); r != image.CmdlinePadding-len(TryFlag)-1 {
		t.Errorf("room after testboot: %d", r)
	}

	if err := PointRootAt(f, 3); err != nil {
		t.Fatal(err)
	}
	files, _ = ReadBootFiles(f)
	for _, bf := range files {
		if n, err := RootPartition(bf.Line()); n != 3 || err != nil {
			t.Errorf("%s after PointRootAt(3): %q", bf.Path, bf.Line())
		}
		if len(bf.Content) != len(image.CmdlineFile(testCmdline)) && !strings.HasSuffix(bf.Path, ".conf") {
			t.Errorf("%s changed size", bf.Path)
		}
	}
	if !bytes.Contains(files[1].Content, []byte("\rlinux /vmlinuz\roptions ")) {
		t.Errorf("gokrazy.conf lost its linux line: %q", files[1].Content)
	}
}
