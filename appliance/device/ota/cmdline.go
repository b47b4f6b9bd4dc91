package ota

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/arkaweb/arka/appliance/fat16"
)

// Kernel command line flags of gokrazy's trial boot:
// POST /update/testboot inserts TryFlag before the newline of cmdline.txt;
// at the next boot gokrazy's init (still on the old root) replaces it with
// SwitchedFlag and pivots into the other root partition. So the trial
// applies to exactly one boot: the one after that starts the root that
// root= names again.
const (
	TryFlag      = "gokrazy.try_boot_inactive=1"
	SwitchedFlag = "gokrazy.switch_on_boot=1"
)

// Files on the boot partition that carry the kernel command line. gokrazy
// edits both in place, and so does PointRootAt.
var cmdlineFiles = []string{"/cmdline.txt", "/loader/entries/gokrazy.conf"}

// rootArg matches the root= argument in the forms gokrazy's init
// understands; the last submatch is the digit that
// selects the root partition:
//
//	root=PARTUUID=<GUID of partition 1>/PARTNROFF=<n-1>
//	root=PARTUUID=<MBR signature>-0<n>
//	root=/dev/<disk><n>   (sda2, mmcblk0p2, nvme0n1p2, loop0p2)
var rootArg = regexp.MustCompile(`(?:^|\s)root=(PARTUUID=[0-9A-Fa-f-]+/PARTNROFF=|PARTUUID=[0-9A-Fa-f]{8}-0|/dev/[a-z0-9]+?)([0-9])(?:\s|$)`)

// RootPartition returns the root partition (2 or 3) that the root=
// argument of a kernel command line selects.
func RootPartition(cmdline string) (int, error) {
	m := rootArg.FindStringSubmatch(cmdline)
	if m == nil {
		return 0, fmt.Errorf("no root= argument naming partition 2 or 3 in %q", strings.TrimSpace(cmdline))
	}
	n, _ := strconv.Atoi(m[2])
	if strings.HasSuffix(m[1], "PARTNROFF=") {
		n++
	}
	if n != 2 && n != 3 {
		return 0, fmt.Errorf("root= names partition %d, not 2 or 3", n)
	}
	return n, nil
}

// SetRootPartition returns cmdline with its root= argument changed to
// select partition n (2 or 3), in the same form and at the same length.
func SetRootPartition(cmdline []byte, n int) ([]byte, error) {
	loc := rootArg.FindSubmatchIndex(cmdline)
	if loc == nil || (n != 2 && n != 3) {
		return nil, fmt.Errorf("cannot point %q at partition %d", bytes.TrimSpace(cmdline), n)
	}
	digit := n
	if bytes.HasSuffix(cmdline[loc[2]:loc[3]], []byte("PARTNROFF=")) {
		digit--
	}
	out := bytes.Clone(cmdline)
	out[loc[4]] = byte('0' + digit)
	return out, nil
}

// BootFile is one kernel command line file on the boot partition.
type BootFile struct {
	Path    string
	Offset  int64 // byte offset of the content in the boot partition
	Content []byte
}

// Line returns the command line: the content up to the first newline, with
// systemd-boot's "options " line picked out of gokrazy.conf.
func (f BootFile) Line() string {
	s := string(f.Content)
	if i := strings.Index(s, "options "); i >= 0 && strings.HasSuffix(f.Path, ".conf") {
		s = s[i+len("options "):]
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Room returns how many bytes an in-place edit may still add: the spaces
// after the newline, which gokrazy's edits push past the recorded size.
func (f BootFile) Room() int {
	i := bytes.IndexByte(f.Content, '\n')
	if i < 0 {
		return 0
	}
	return len(f.Content) - i - 1 - len(bytes.TrimLeft(f.Content[i+1:], " "))
}

// ReadBootFiles reads cmdline.txt and loader/entries/gokrazy.conf from a
// boot partition the way gokrazy's init finds them (package fat16).
// gokrazy.conf is optional (boards without systemd-boot may lack it).
func ReadBootFiles(boot io.ReaderAt) ([]BootFile, error) {
	var files []BootFile
	for i, p := range cmdlineFiles {
		off, n, err := fat16.Extents(boot, p)
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("boot partition: %v", err)
			}
			continue
		}
		b := make([]byte, n)
		if _, err := boot.ReadAt(b, off); err != nil {
			return nil, fmt.Errorf("boot partition: %s: %v", p, err)
		}
		files = append(files, BootFile{Path: p, Offset: off, Content: b})
	}
	return files, nil
}

// NextBoot tells which root partition the next boot runs, from cmdline.txt:
// the one root= names, or the other one when the trial flag is set.
func NextBoot(files []BootFile) (partition int, trial bool, err error) {
	if len(files) == 0 {
		return 0, false, errors.New("no cmdline.txt")
	}
	line := files[0].Line()
	n, err := RootPartition(line)
	if err != nil {
		return 0, false, err
	}
	if strings.Contains(line, TryFlag) {
		return 5 - n, true, nil
	}
	return n, false, nil
}

// PointRootAt rewrites root= in every kernel command line file in place to
// select partition n, the way gokrazy's /update/switch does, and checks the
// result by reading the files back.
func PointRootAt(boot interface {
	io.ReaderAt
	io.WriterAt
}, n int) error {
	files, err := ReadBootFiles(boot)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := SetRootPartition(f.Content, n)
		if err != nil {
			return fmt.Errorf("%s: %v", f.Path, err)
		}
		if _, err := boot.WriteAt(b, f.Offset); err != nil {
			return fmt.Errorf("%s: %v", f.Path, err)
		}
	}
	if s, ok := boot.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			return err
		}
	}
	files, err = ReadBootFiles(boot)
	if err != nil {
		return err
	}
	for _, f := range files {
		if got, err := RootPartition(f.Line()); err != nil || got != n {
			return fmt.Errorf("%s still names partition %d after the edit (%v)", f.Path, got, err)
		}
	}
	return nil
}
