// Package flash writes an image to an SD card, USB stick or disk and
// verifies it by reading it back. Before writing to a block device it
// refuses one that is mounted, holds the running system, or is not
// removable (unless forced). Regular files are written without those checks
// (the tests flash into files).
//
// /perm is not touched here: the image's perm partition ends where the image
// ends, and arka-init grows it to the whole card at first boot, so cards
// written by any tool (dd, Raspberry Pi Imager, Etcher) get the same result.
package flash

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ulikunitz/xz"
)

// Options for Write.
type Options struct {
	Image  string
	Target string // block device (/dev/sdX, /dev/mmcblk0) or regular file
	Force  bool   // skip the safety checks for block devices
	// Progress is called with bytes done of total, in the "write" and
	// "verify" phases.
	Progress func(phase string, done, total int64)
}

// Result of a Write.
type Result struct {
	Bytes  int64
	SHA256 [32]byte
}

// blkflsbuf is BLKFLSBUF, <linux/fs.h>: drop the device's buffer cache so
// verification reads the medium, not memory.
const blkflsbuf = 0x1261

// Write writes the image to the target and verifies it. An image whose
// name ends in .xz or .gz is decompressed on the way (XZ with
// github.com/ulikunitz/xz, gzip with compress/gzip); its write progress
// then counts compressed bytes read.
func Write(o Options) (*Result, error) {
	img, err := os.Open(o.Image)
	if err != nil {
		return nil, err
	}
	defer img.Close()
	st, err := img.Stat()
	if err != nil {
		return nil, err
	}
	compressed := st.Size()
	src, size, err := decompress(img, o.Image, compressed)
	if err != nil {
		return nil, err
	}

	tst, err := os.Stat(o.Target)
	isDev := err == nil && tst.Mode()&os.ModeDevice != 0
	if isDev && !o.Force {
		if problems := Check(o.Target, size); len(problems) > 0 {
			return nil, fmt.Errorf("refusing to write to %s:\n  - %s\n(use --force if you are sure)", o.Target, strings.Join(problems, "\n  - "))
		}
	}
	flags := os.O_WRONLY
	switch {
	case !isDev:
		flags |= os.O_CREATE
	case !o.Force:
		flags |= os.O_EXCL // Linux: EBUSY if the device is mounted after all
	}
	dst, err := os.OpenFile(o.Target, flags, 0o644)
	if err != nil {
		return nil, err
	}
	defer dst.Close()

	h := sha256.New()
	buf := make([]byte, 4<<20)
	var done int64
	readSoFar := func() int64 { // of the compressed file
		off, _ := img.Seek(0, io.SeekCurrent)
		return min(off, compressed)
	}
	for {
		n, rerr := io.ReadFull(src, buf)
		if n > 0 {
			h.Write(buf[:n])
			if _, err := dst.Write(buf[:n]); err != nil {
				return nil, fmt.Errorf("writing %s at byte %d: %w", o.Target, done, err)
			}
			done += int64(n)
			if o.Progress != nil {
				if src == io.Reader(img) {
					o.Progress("write", done, size)
				} else {
					o.Progress("write", readSoFar(), compressed)
				}
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return nil, fmt.Errorf("%s: %w", o.Image, rerr)
		}
	}
	size = done // the decompressed length
	if !isDev {
		if err := dst.Truncate(size); err != nil {
			return nil, err
		}
	}
	if err := dst.Sync(); err != nil {
		return nil, fmt.Errorf("syncing %s: %w", o.Target, err)
	}
	if isDev {
		syscall.Syscall(syscall.SYS_IOCTL, dst.Fd(), blkflsbuf, 0)
	}
	if err := dst.Close(); err != nil {
		return nil, err
	}
	res := &Result{Bytes: size}
	copy(res.SHA256[:], h.Sum(nil))

	// Read back exactly the image's length and compare digests.
	back, err := os.Open(o.Target)
	if err != nil {
		return nil, err
	}
	defer back.Close()
	vh := sha256.New()
	var vdone int64
	for vdone < size {
		n, err := back.Read(buf[:min(int64(len(buf)), size-vdone)])
		if n > 0 {
			vh.Write(buf[:n])
			vdone += int64(n)
			if o.Progress != nil {
				o.Progress("verify", vdone, size)
			}
		}
		if err != nil {
			if err == io.EOF {
				break
			}
			return nil, fmt.Errorf("reading back %s: %w", o.Target, err)
		}
	}
	if vdone != size || !bytes.Equal(vh.Sum(nil), res.SHA256[:]) {
		return nil, fmt.Errorf("verification failed: %s does not hold the image (read back %d of %d bytes, SHA-256 %x, want %x)", o.Target, vdone, size, vh.Sum(nil), res.SHA256)
	}
	return res, nil
}

// Check lists why dev (a block device) should not be written to: mounted
// (itself or a partition), holding the running system's root, not
// removable, smaller than need bytes.
func Check(dev string, need int64) []string {
	var problems []string
	real, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return []string{err.Error()}
	}
	name := filepath.Base(real)
	sys := "/sys/class/block/" + name
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		problems = append(problems, fmt.Sprintf("%s is a partition; give the whole device (e.g. %s)", dev, "/dev/"+parentDisk(sys)))
	}
	names := append([]string{name}, partitionsOf(sys, name)...)
	if mounts, err := os.ReadFile("/proc/self/mounts"); err == nil {
		for _, line := range strings.Split(string(mounts), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			src, _ := filepath.EvalSymlinks(f[0])
			for _, n := range names {
				if src == "/dev/"+n || f[0] == "/dev/"+n {
					problems = append(problems, fmt.Sprintf("/dev/%s is mounted on %s (unmount it first)", n, f[1]))
				}
			}
		}
	}
	if rootDisk, err := diskOf("/"); err == nil && rootDisk == name {
		problems = append(problems, fmt.Sprintf("%s holds the running system's root file system", dev))
	}
	if !removable(sys, name) {
		problems = append(problems, fmt.Sprintf("%s is not a removable device (an internal disk?)", dev))
	}
	if b, err := os.ReadFile(filepath.Join(sys, "size")); err == nil {
		var sectors int64
		fmt.Sscan(strings.TrimSpace(string(b)), &sectors)
		if sectors*512 < need {
			problems = append(problems, fmt.Sprintf("%s holds %d MB, the image needs %d MB", dev, sectors*512/1e6, need/1e6))
		}
	}
	return problems
}

func parentDisk(sys string) string {
	p, err := filepath.EvalSymlinks(sys)
	if err != nil {
		return "?"
	}
	return filepath.Base(filepath.Dir(p))
}

func partitionsOf(sys, name string) []string {
	ents, _ := os.ReadDir(sys)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), name) {
			out = append(out, e.Name())
		}
	}
	return out
}

// removable: the kernel's removable flag, or an SD card in a built-in
// reader (mmcblk devices of type SD often report removable=0).
func removable(sys, name string) bool {
	if b, err := os.ReadFile(filepath.Join(sys, "removable")); err == nil && strings.TrimSpace(string(b)) == "1" {
		return true
	}
	if strings.HasPrefix(name, "mmcblk") {
		if b, err := os.ReadFile(filepath.Join(sys, "device", "type")); err == nil && strings.TrimSpace(string(b)) == "SD" {
			return true
		}
	}
	// USB mass storage (card readers, sticks) that do not set the flag.
	if p, err := filepath.EvalSymlinks(sys); err == nil && strings.Contains(p, "/usb") {
		return true
	}
	return false
}

// diskOf returns the whole-disk block device name that holds path's file system.
func diskOf(path string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return "", err
	}
	major, minor := (st.Dev>>8)&0xfff|(st.Dev>>32)&^0xfff, st.Dev&0xff|(st.Dev>>12)&^0xff
	p, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", major, minor))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(p, "partition")); err == nil {
		return filepath.Base(filepath.Dir(p)), nil
	}
	if filepath.Base(p) == "" {
		return "", errors.New("no disk")
	}
	return filepath.Base(p), nil
}

// decompress returns the image's content: img itself, or a decompressing
// reader for .xz and .gz, and the content's size as far as known before
// reading it (the file's size; gzip's ISIZE trailer, which is exact for
// images under 4 GiB; the compressed size for XZ, a lower bound for the
// device check).
func decompress(img *os.File, name string, size int64) (io.Reader, int64, error) {
	switch {
	case strings.HasSuffix(name, ".xz"):
		r, err := xz.NewReader(bufio.NewReaderSize(img, 1<<20))
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %v", name, err)
		}
		return r, size, nil
	case strings.HasSuffix(name, ".gz"):
		var tail [4]byte
		isize := size
		if _, err := img.ReadAt(tail[:], size-4); err == nil {
			isize = int64(binary.LittleEndian.Uint32(tail[:]))
		}
		r, err := gzip.NewReader(bufio.NewReaderSize(img, 1<<20))
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %v", name, err)
		}
		return r, max(isize, size), nil
	}
	return img, size, nil
}

// Describe names a block device for a person about to overwrite it:
// vendor and model (sysfs), and size ("/dev/sdb: Generic STORAGE DEVICE,
// 31.9 GB"). For a regular file it says so.
func Describe(target string) string {
	st, err := os.Stat(target)
	if err != nil {
		return target + " (" + err.Error() + ")"
	}
	if st.Mode()&os.ModeDevice == 0 {
		return fmt.Sprintf("%s: a regular file of %.1f MB", target, float64(st.Size())/1e6)
	}
	real, err := filepath.EvalSymlinks(target)
	if err != nil {
		return target
	}
	sys := "/sys/class/block/" + filepath.Base(real)
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(sys, p))
		return strings.TrimSpace(string(b))
	}
	model := strings.TrimSpace(read("device/vendor") + " " + read("device/model"))
	if model == "" {
		model = read("device/name") // SD cards: the card's product name
	}
	if model == "" {
		model = "unknown model"
	}
	var sectors int64
	fmt.Sscan(read("size"), &sectors)
	return fmt.Sprintf("%s: %s, %.1f GB", target, model, float64(sectors)*512/1e9)
}
