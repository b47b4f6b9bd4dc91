package ota

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/arkaweb/arka/appliance/fat16"
	"github.com/arkaweb/arka/internal/atomicfile"
)

// Boot files. Both root partitions boot from the one boot partition
// (partition 1): kernel, kernel command line, and the Raspberry Pi's
// firmware, device trees and config.txt or the PC's EFI loader. An update
// overwrites it with the new build's (gokrazy's /update/bootonly), so a
// rollback that only pointed root= back would start the old root with the
// new kernel, whose modules the old root does not have.
//
// So the Agent keeps a copy of the boot file system of each root
// partition's build on /perm (KeptBootFile: <dir>/boot/root2.fat and
// root3.fat next to the status file): Preflight copies the running
// build's before anything is written; every way back to the other root
// (a failed trial, a crash during one, a crash loop on probation, rollback
// on request) writes the copy of that root's build back; a rollback on
// request first keeps the running build's, so the next one returns again.
// A copy is used only if it names (bootBuildFile) the build the root
// partition holds; it is dropped when that root partition is overwritten.

// bootBuildFile is the file in the boot file system naming its build
// (image.BuildInfoFile; not imported: package image is build-machine code).
const bootBuildFile = "/arka-build.json"

// BootInfo describes a boot file system.
type BootInfo struct {
	Build   Build  `json:"build"`             // the build it belongs to (its arka-build.json)
	Bytes   int64  `json:"bytes"`             // size of the file system
	Cmdline string `json:"cmdline,omitempty"` // the kernel command line in cmdline.txt
}

// KeptBoot is a copy of a boot file system on /perm.
type KeptBoot struct {
	Partition int `json:"partition"` // the root partition whose build it boots
	BootInfo
}

// fatSize returns the bytes a FAT16 file system occupies (its boot
// sector's total sectors × bytes per sector).
func fatSize(r io.ReaderAt) (int64, error) {
	bpb := make([]byte, 36)
	if _, err := r.ReadAt(bpb, 0); err != nil {
		return 0, fmt.Errorf("boot sector: %v", err)
	}
	bps := int64(binary.LittleEndian.Uint16(bpb[11:]))
	total := int64(binary.LittleEndian.Uint16(bpb[19:]))
	if total == 0 {
		total = int64(binary.LittleEndian.Uint32(bpb[32:]))
	}
	if bps != 512 || total == 0 {
		return 0, fmt.Errorf("no FAT16 file system (%d sectors of %d bytes)", total, bps)
	}
	return total * bps, nil
}

// ReadBootInfo reads the build, size and command line of the boot file
// system in r.
func ReadBootInfo(r io.ReaderAt) (BootInfo, error) {
	var bi BootInfo
	size, err := fatSize(r)
	if err != nil {
		return bi, err
	}
	bi.Bytes = size
	b, err := readFATFile(r, bootBuildFile)
	if err != nil {
		return bi, err
	}
	if err := json.Unmarshal(b, &bi.Build); err != nil {
		return bi, fmt.Errorf("%s: %v", bootBuildFile, err)
	}
	if files, err := ReadBootFiles(r); err == nil {
		bi.Cmdline = files[0].Line()
	}
	return bi, nil
}

func readFATFile(r io.ReaderAt, p string) ([]byte, error) {
	off, n, err := fat16.Extents(r, p)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	return b, nil
}

// kernelSum is the SHA-256 of /vmlinuz in the boot file system r ("" if
// it has none).
func kernelSum(r io.ReaderAt) string {
	b, err := readFATFile(r, "/vmlinuz")
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// KeptBootFile is where the copy of root partition n's boot files is kept,
// in dir (the Agent's: "boot" next to its status file).
func KeptBootFile(dir string, n int) string {
	return filepath.Join(dir, "root"+strconv.Itoa(n)+".fat")
}

// keepBoot copies the boot file system in boot to file: written to a
// temporary file, synced, renamed. It returns what it copied.
func keepBoot(boot io.ReaderAt, file string) (BootInfo, error) {
	bi, err := ReadBootInfo(boot)
	if err != nil {
		return bi, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return bi, err
	}
	tmp := file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return bi, err
	}
	_, err = io.Copy(f, io.NewSectionReader(boot, 0, bi.Bytes))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		os.Remove(tmp)
		return bi, fmt.Errorf("keeping the boot files: %v", err)
	}
	atomicfile.SyncDir(filepath.Dir(file))
	return bi, nil
}

// readKept returns what the kept copy in file holds.
func readKept(file string) (BootInfo, error) {
	f, err := os.Open(file)
	if err != nil {
		return BootInfo{}, err
	}
	defer f.Close()
	return ReadBootInfo(f)
}

// restoreBlock is the unit restoreBoot compares and writes.
const restoreBlock = 64 << 10

// restoreBoot writes the kept boot file system in file back onto boot:
// only the blocks that differ (an interruption then leaves less half
// written, and a copy equal to what is there writes nothing), synced, and
// read back to compare. It reports whether anything was written and
// whether the kernel (/vmlinuz) changed.
func restoreBoot(boot BootPartition, file string) (changed, kernelChanged bool, err error) {
	kept, err := os.Open(file)
	if err != nil {
		return false, false, err
	}
	defer kept.Close()
	st, err := kept.Stat()
	if err != nil {
		return false, false, err
	}
	size := st.Size()
	if n, err := fatSize(kept); err != nil || n != size {
		return false, false, fmt.Errorf("%s is not a whole boot file system (%d bytes, %v)", file, size, err)
	}
	before := kernelSum(boot)
	want := sha256.New()
	a, b := make([]byte, restoreBlock), make([]byte, restoreBlock)
	for off := int64(0); off < size; off += restoreBlock {
		n := int(min(restoreBlock, size-off))
		if _, err := kept.ReadAt(a[:n], off); err != nil {
			return changed, false, fmt.Errorf("%s: %v", file, err)
		}
		want.Write(a[:n])
		if _, err := boot.ReadAt(b[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return changed, false, fmt.Errorf("boot partition: %v", err)
		}
		if bytes.Equal(a[:n], b[:n]) {
			continue
		}
		if _, err := boot.WriteAt(a[:n], off); err != nil {
			return true, false, fmt.Errorf("boot partition: %v", err)
		}
		changed = true
	}
	if err := boot.Sync(); err != nil {
		return changed, false, err
	}
	got := sha256.New()
	if _, err := io.Copy(got, io.NewSectionReader(boot, 0, size)); err != nil {
		return changed, false, fmt.Errorf("boot partition: %v", err)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		return changed, false, errors.New("the boot partition does not read back as the kept copy")
	}
	return changed, kernelSum(boot) != before, nil
}

// bootDir is where the Agent keeps boot file systems: "boot" next to its
// status file.
func (a *Agent) bootDir() string { return filepath.Join(filepath.Dir(a.statusFile()), "boot") }

// bootKeepNeed is how many more bytes of /perm keeping the running build's
// boot files takes (the copies of both root partitions are replaced).
func (a *Agent) bootKeepNeed() int64 {
	boot, err := a.Device.OpenBoot()
	if err != nil {
		return 0
	}
	defer boot.Close()
	size, err := fatSize(boot)
	if err != nil {
		return 0
	}
	for _, n := range []int{2, 3} {
		if st, err := os.Stat(KeptBootFile(a.bootDir(), n)); err == nil {
			size -= st.Size()
		}
	}
	return max(size, 0)
}

// keepRunningBoot is Preflight's: it keeps the boot partition's files as
// those of the running root partition, if they are the running build's,
// and drops the copy of the other root partition, which the update is
// about to overwrite.
func (a *Agent) keepRunningBoot() error {
	os.Remove(KeptBootFile(a.bootDir(), 5-a.Running))
	boot, err := a.Device.OpenBoot()
	if err != nil {
		return err
	}
	defer boot.Close()
	cur, err := ReadBootInfo(boot)
	if err != nil {
		a.logf("update: boot partition: %v; its files are not kept for a rollback", err)
		return nil
	}
	if cur.Build.SBOMHash != a.Build.SBOMHash {
		a.logf("update: the boot partition holds the boot files of Arka %s (sbom %.12s), not of the running build: keeping the copy taken before, if any", cur.Build.Version, cur.Build.SBOMHash)
		return nil
	}
	if _, err := keepBoot(boot, KeptBootFile(a.bootDir(), a.Running)); err != nil {
		return err
	}
	a.logf("update: kept the boot files of Arka %s (%s) for a rollback to root partition %d", cur.Build.Version, mib(cur.Bytes), a.Running)
	return nil
}

// restoreBootLocked writes the kept boot files of root partition n, which
// holds build want, back onto boot; with keepCurrent it first keeps the
// running build's boot files (a rollback on request, which a second one
// undoes). It returns what it did, in a sentence for the attempt's record,
// and whether the kernel changed. Whatever happens, the caller points
// root= at n afterwards.
func (a *Agent) restoreBootLocked(boot BootPartition, n int, want Build, keepCurrent bool) (note string, kernelChanged bool) {
	file := KeptBootFile(a.bootDir(), n)
	kept, err := readKept(file)
	cur, curErr := ReadBootInfo(boot)
	stay := "the boot partition's kernel and firmware stay"
	if curErr == nil {
		stay = fmt.Sprintf("the kernel and firmware of Arka %s stay", cur.Build.Version)
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		if curErr == nil && cur.Build.SBOMHash == want.SBOMHash {
			return "", false // the boot files are that build's already
		}
		return fmt.Sprintf("no boot files of root partition %d were kept: %s", n, stay), false
	case err != nil:
		return fmt.Sprintf("the kept boot files of root partition %d do not read (%v): %s", n, err, stay), false
	case want.SBOMHash == "" || kept.Build.SBOMHash != want.SBOMHash:
		return fmt.Sprintf("the kept boot files are of Arka %s (sbom %.12s), root partition %d holds Arka %s (sbom %.12s): not restored, %s",
			kept.Build.Version, kept.Build.SBOMHash, n, want.Version, want.SBOMHash, stay), false
	}
	if keepCurrent && curErr == nil && cur.Build.SBOMHash == a.Build.SBOMHash && cur.Build.SBOMHash != kept.Build.SBOMHash {
		if _, err := keepBoot(boot, KeptBootFile(a.bootDir(), a.Running)); err != nil {
			a.logf("update: %v; a rollback to Arka %s will keep the other build's kernel", err, a.Build.Version)
		}
	}
	changed, kernelChanged, err := restoreBoot(boot, file)
	if err != nil {
		return fmt.Sprintf("restoring the boot files of Arka %s failed: %v", kept.Build.Version, err), kernelChanged
	}
	if !changed {
		return fmt.Sprintf("the boot files of Arka %s were in place", kept.Build.Version), false
	}
	a.logf("update: restored the boot files of Arka %s (kernel changed: %v)", kept.Build.Version, kernelChanged)
	return fmt.Sprintf("the boot files of Arka %s (kernel, command line, firmware) restored", kept.Build.Version), kernelChanged
}

// keptBoots lists the kept boot file systems.
func (a *Agent) keptBoots() []KeptBoot {
	var out []KeptBoot
	for _, n := range []int{2, 3} {
		if bi, err := readKept(KeptBootFile(a.bootDir(), n)); err == nil {
			out = append(out, KeptBoot{Partition: n, BootInfo: bi})
		}
	}
	return out
}

// restoreOwnBootLocked is Start's, on the old root after a trial that
// ended by a crash, hang or power cut: the boot partition still holds the
// new build's files, so the running build's kept ones are written back,
// and if that changed the kernel, Settle reboots into it.
func (a *Agent) restoreOwnBootLocked() string {
	boot, err := a.Device.OpenBoot()
	if err != nil {
		return fmt.Sprintf("boot partition: %v", err)
	}
	defer boot.Close()
	if cur, err := ReadBootInfo(boot); err == nil && cur.Build.SBOMHash == a.Build.SBOMHash {
		return "" // this build's already
	}
	note, kernelChanged := a.restoreBootLocked(boot, a.Running, a.Build, false)
	if err := PointRootAt(boot, a.Running); err != nil {
		a.logf("update: %v", err)
	}
	if kernelChanged {
		a.rebootForBoot = true
		note += "; rebooted to run its kernel"
	}
	return note
}

// Settle is called once the supervised programs run (gokrazy's API
// answers): if Start restored the boot files of the running build and
// that changed the kernel, the device reboots, so that the old build runs
// with its own kernel (and finds its kernel modules) again. It returns
// whether it reboots.
func (a *Agent) Settle() bool {
	a.mu.Lock()
	reboot := a.rebootForBoot
	a.rebootForBoot = false
	a.mu.Unlock()
	if reboot {
		a.logf("update: rebooting to start the kernel of Arka %s, restored on the boot partition", a.Build.Version)
		go a.Device.Reboot()
	}
	return reboot
}
