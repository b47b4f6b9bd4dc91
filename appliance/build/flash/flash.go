// Package flash writes an image to an SD card, USB stick or disk and
// verifies it by reading it back. Before writing anything it refuses a
// target that does not exist (a mistyped device name), the image itself as
// target, and an image that is not one (no MBR or GPT at its start) or is
// truncated; before writing to a block device, one that is mounted, holds
// the running system, is not removable or too small (unless forced).
// Regular files (VMs, tests) are written without the device checks; a new
// one only with Options.Create.
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
	"io/fs"
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
	// Create lets Target be a regular file that does not exist yet (for
	// VMs and tests); never under /dev. Without it a target that does not
	// exist is refused: a mistyped device name must not become a file.
	Create bool
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

// headSize is how much of the (decompressed) image Prepare reads to check
// its partition table: the MBR, the GPT header and 128 entries of 128
// bytes fit many times.
const headSize = 1 << 20

// Plan is a write that passed every check; Write carries it out. Close it
// if it is not written.
type Plan struct {
	o          Options
	img        *os.File
	compressed int64     // the image file's size
	raw        bool      // not compressed: progress counts written bytes
	src        io.Reader // the image's content from its start
	// Size is the image's uncompressed size as known before writing:
	// exact for raw and .xz images (the XZ index), gzip's ISIZE trailer
	// (exact below 4 GiB) for .gz, and never less than the end of the
	// last partition.
	Size     int64
	end      int64 // where the image's last partition (or backup GPT) ends
	isDev    bool
	capacity int64 // of a block device; 0 = unknown or a file
}

// Close releases the image without writing.
func (p *Plan) Close() error { return p.img.Close() }

// Write writes the image to the target and verifies it: Prepare, then
// Plan.Write.
func Write(o Options) (*Result, error) {
	p, err := Prepare(o)
	if err != nil {
		return nil, err
	}
	return p.Write()
}

// CheckTarget refuses a target that cannot be meant: one that does not
// exist (unless create, and then never under /dev), a regular file under
// /dev, or something that is neither a device nor a regular file. It
// reports whether target is a device.
func CheckTarget(target string, create bool) (isDev bool, err error) {
	abs, err := filepath.Abs(target)
	if err != nil {
		return false, err
	}
	st, err := os.Stat(target)
	switch {
	case err == nil && st.Mode()&os.ModeDevice != 0:
		return true, nil
	case err == nil && st.Mode().IsRegular():
		if real, err := filepath.EvalSymlinks(abs); err == nil && underDev(real) {
			return false, fmt.Errorf("%s is a regular file under /dev, not a device (left over from a mistyped name?): remove it, and check the device's name with lsblk", target)
		}
		return false, nil
	case err == nil:
		return false, fmt.Errorf("%s is neither a device nor a regular file", target)
	case errors.Is(err, fs.ErrNotExist):
		dir, derr := filepath.EvalSymlinks(filepath.Dir(abs))
		if derr != nil {
			dir = filepath.Dir(abs)
		}
		if underDev(dir) {
			return false, fmt.Errorf("%s does not exist: no such device (lsblk lists the disks and cards)", target)
		}
		if !create {
			return false, fmt.Errorf("%s does not exist: give a device (lsblk lists them), or add --create to write the image into a new file", target)
		}
		return false, nil
	}
	return false, err
}

func underDev(p string) bool { return p == "/dev" || strings.HasPrefix(p, "/dev/") }

// Prepare makes every check before anything is written: the target (see
// CheckTarget), the image and the target not being the same file, the
// image being complete and a disk image (an MBR or GPT partition table
// at its start, and as long as its partitions), and, for a block device
// unless Force, Check. Errors are one sentence on what is wrong.
func Prepare(o Options) (_ *Plan, err error) {
	isDev, err := CheckTarget(o.Target, o.Create)
	if err != nil {
		return nil, err
	}
	img, err := os.Open(o.Image)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			img.Close()
		}
	}()
	st, err := img.Stat()
	if err != nil {
		return nil, err
	}
	if tst, err := os.Stat(o.Target); err == nil && os.SameFile(st, tst) {
		return nil, fmt.Errorf("%s and %s are the same file: writing the image onto itself would destroy it", o.Image, o.Target)
	}
	p := &Plan{o: o, img: img, compressed: st.Size(), isDev: isDev}
	src, size, exact, err := decompress(img, o.Image, st.Size())
	if err != nil {
		return nil, err
	}
	p.raw = src == io.Reader(img)
	head := make([]byte, headSize)
	n, err := fill(src, head)
	if err != nil && err != io.EOF {
		return nil, corrupt(o.Image, err)
	}
	head = head[:n]
	end, err := partitionEnd(head)
	if err != nil {
		return nil, fmt.Errorf("%s is not a disk image: %v", o.Image, err)
	}
	switch {
	case size >= end:
	case exact:
		return nil, fmt.Errorf("the image %s is truncated: it holds %d bytes, its partition table reaches byte %d", o.Image, size, end)
	case end-size < 1<<32 && end < 1<<32:
		// gzip's ISIZE is the size mod 2^32: below 4 GiB it is exact.
		return nil, fmt.Errorf("the image %s is truncated or corrupt: it holds %d bytes (gzip trailer), its partition table reaches byte %d", o.Image, size, end)
	default:
		size = end
	}
	p.Size, p.end = size, end
	p.src = io.MultiReader(bytes.NewReader(head), src)
	if isDev && !o.Force {
		if problems := Check(o.Target, size); len(problems) > 0 {
			return nil, fmt.Errorf("refusing to write to %s:\n  - %s\n(use --force if you are sure)", o.Target, strings.Join(problems, "\n  - "))
		}
	}
	if tst, err := os.Stat(o.Target); err == nil && tst.Mode()&os.ModeDevice != 0 && tst.Mode()&os.ModeCharDevice == 0 {
		if f, err := os.Open(o.Target); err == nil {
			p.capacity, _ = f.Seek(0, io.SeekEnd)
			f.Close()
		}
		if p.capacity > 0 && p.capacity < size {
			return nil, fmt.Errorf("%s holds %d MB, the image needs %d MB", o.Target, p.capacity/1e6, size/1e6)
		}
	}
	return p, nil
}

func corrupt(image string, err error) error {
	return fmt.Errorf("the image %s is truncated or corrupt (a download cut short?): %v", image, err)
}

// fill reads r into buf until buf is full or r ends: io.EOF only for the
// real end, unlike io.ReadFull, which turns a decompressor's
// io.ErrUnexpectedEOF (a truncated file) into a normal short read.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Write writes the planned image and verifies it by reading it back. A
// decompressed image that turns out longer than the device stops before
// its end with an error.
func (p *Plan) Write() (*Result, error) {
	o := p.o
	defer p.img.Close()
	flags := os.O_WRONLY
	switch {
	case !p.isDev:
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
		off, _ := p.img.Seek(0, io.SeekCurrent)
		return min(off, p.compressed)
	}
	for {
		n, rerr := fill(p.src, buf)
		if n > 0 {
			if p.capacity > 0 && done+int64(n) > p.capacity {
				return nil, fmt.Errorf("the image is larger than %s (%d MB): stopped at byte %d; the device does not hold a complete image", o.Target, p.capacity/1e6, done)
			}
			h.Write(buf[:n])
			if _, err := dst.Write(buf[:n]); err != nil {
				return nil, fmt.Errorf("writing %s at byte %d: %w", o.Target, done, err)
			}
			done += int64(n)
			if o.Progress != nil {
				if p.raw {
					o.Progress("write", done, p.Size)
				} else {
					o.Progress("write", readSoFar(), p.compressed)
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, corrupt(o.Image, rerr)
		}
	}
	if done < p.end || (done != p.Size && !strings.HasSuffix(o.Image, ".gz")) {
		return nil, corrupt(o.Image, fmt.Errorf("it ended at byte %d, expected %d", done, max(p.end, p.Size)))
	}
	size := done // the decompressed length
	if !p.isDev {
		if err := dst.Truncate(size); err != nil {
			return nil, err
		}
	}
	if err := dst.Sync(); err != nil {
		return nil, fmt.Errorf("syncing %s: %w", o.Target, err)
	}
	if p.isDev {
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
// reading it, and whether that size is exact: the file's size; the sizes
// in the XZ index; gzip's ISIZE trailer, the size mod 2^32 (exact for
// images under 4 GiB, a hint otherwise, and garbage for a truncated file).
func decompress(img *os.File, name string, size int64) (_ io.Reader, _ int64, exact bool, _ error) {
	switch {
	case strings.HasSuffix(name, ".xz"):
		usize, err := xzSize(img, size)
		if err != nil {
			return nil, 0, false, corrupt(name, err)
		}
		r, err := xz.NewReader(bufio.NewReaderSize(img, 1<<20))
		if err != nil {
			return nil, 0, false, corrupt(name, err)
		}
		return r, usize, true, nil
	case strings.HasSuffix(name, ".gz"):
		var tail [4]byte
		var isize int64
		if _, err := img.ReadAt(tail[:], size-4); err == nil {
			isize = int64(binary.LittleEndian.Uint32(tail[:]))
		}
		r, err := gzip.NewReader(bufio.NewReaderSize(img, 1<<20))
		if err != nil {
			return nil, 0, false, corrupt(name, err)
		}
		return r, isize, false, nil
	}
	return img, size, true, nil
}

// Describe names a block device for a person about to overwrite it:
// vendor and model (sysfs), and size ("/dev/sdb: Generic STORAGE DEVICE,
// 31.9 GB"). For a regular file it says so.
func Describe(target string) string {
	st, err := os.Stat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return target + ": a new regular file"
	}
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
