package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/arkaweb/arka/appliance/partition"
)

const (
	blkpg           = 0x1269     // BLKPG, <linux/fs.h>
	ext4IocResizeFS = 0x40086610 // EXT4_IOC_RESIZE_FS, _IOW('f', 16, __u64)
)

// growPerm grows partition 4 and its ext4 file system, online, to the end
// of the disk when the disk is larger than the image that was written to it
// (an image is 1.2 GB; a card or disk is usually much larger). Steps: rewrite
// the GPT for the disk's real size (partition.GrowPerm), tell the kernel the
// new partition size (BLKPG_RESIZE_PARTITION), then grow the mounted file
// system (EXT4_IOC_RESIZE_FS). It returns what it did ("" if nothing).
func growPerm() (string, error) {
	dev, fstype, _, err := mountOf("/perm")
	if err != nil {
		return "", err
	}
	if fstype != "ext4" {
		return "", fmt.Errorf("/perm is %s, not ext4", fstype)
	}
	part := filepath.Base(dev)
	sys, err := filepath.EvalSymlinks("/sys/class/block/" + part)
	if err != nil {
		return "", err
	}
	if n, err := readInt(filepath.Join(sys, "partition")); err != nil || n != partition.Perm {
		return "", fmt.Errorf("%s is not partition %d", dev, partition.Perm)
	}
	disk := filepath.Base(filepath.Dir(sys))
	diskSectors, err := readInt(filepath.Join(filepath.Dir(sys), "size")) // in 512-byte units
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile("/dev/"+disk, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	t, err := partition.Read(f)
	if err != nil {
		return "", fmt.Errorf("/dev/%s: %v", disk, err)
	}
	p4, ok := t.Entry(partition.Perm)
	if !ok {
		return "", fmt.Errorf("/dev/%s: no partition 4 in the GPT", disk)
	}
	n := uint64(diskSectors)
	if n <= t.DiskSectors || partition.PermLastLBA(n)-p4.LastLBA < 2048 {
		// Already as large as the disk (less than 1 MiB to gain).
		return resizeFS(dev, p4)
	}
	grown, err := partition.GrowPerm(f, t, n)
	if err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	g4, _ := grown.Entry(partition.Perm)
	arg := unix.BlkpgPartition{Start: g4.Offset(), Length: g4.Size(), Pno: partition.Perm}
	ioc := unix.BlkpgIoctlArg{Op: unix.BLKPG_RESIZE_PARTITION, Datalen: int32(unsafe.Sizeof(arg)), Data: (*byte)(unsafe.Pointer(&arg))}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), blkpg, uintptr(unsafe.Pointer(&ioc))); errno != 0 {
		return "", fmt.Errorf("BLKPG_RESIZE_PARTITION /dev/%s: %v", disk, errno)
	}
	msg, err := resizeFS(dev, g4)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("partition grown from %d to %d sectors; %s", p4.Sectors(), g4.Sectors(), msg), nil
}

// resizeFS grows the ext4 file system on dev (mounted at /perm) to fill
// partition p, if it does not already. The current size comes from the
// superblock (s_blocks_count, s_log_block_size).
func resizeFS(dev string, p partition.Entry) (string, error) {
	sb := make([]byte, 1024)
	f, err := os.Open(dev)
	if err != nil {
		return "", err
	}
	_, err = f.ReadAt(sb, 1024)
	f.Close()
	if err != nil {
		return "", err
	}
	if binary.LittleEndian.Uint16(sb[0x38:]) != 0xEF53 {
		return "", fmt.Errorf("%s: no ext4 superblock", dev)
	}
	bs := uint64(1024) << binary.LittleEndian.Uint32(sb[0x18:])
	have := uint64(binary.LittleEndian.Uint32(sb[0x4:])) | uint64(binary.LittleEndian.Uint32(sb[0x150:]))<<32
	want := uint64(p.Size()) / bs
	if have >= want {
		return "", nil
	}
	d, err := os.Open("/perm")
	if err != nil {
		return "", err
	}
	defer d.Close()
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, d.Fd(), ext4IocResizeFS, uintptr(unsafe.Pointer(&want))); errno != 0 {
		return "", fmt.Errorf("EXT4_IOC_RESIZE_FS from %d to %d blocks: %v", have, want, errno)
	}
	return fmt.Sprintf("ext4 grown from %d to %d blocks of %d bytes", have, want, bs), nil
}

func fsSize(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks) * int64(st.Bsize), nil
}

func readInt(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
