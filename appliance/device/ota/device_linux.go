package ota

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LinuxDevice is the Device of a running gokrazy system: the disk the
// running root file system is on, gokrazy's update API on its Unix socket.
type LinuxDevice struct {
	Disk    string // block device name of the disk, e.g. "vda", "mmcblk0"
	Gokrazy *Gokrazy
	Logf    func(format string, args ...any)
}

// Detect finds the running system's disk and root partitions: Running
// from the device of the mounted "/" (after gokrazy's trial-boot pivot that
// is the other root partition), KernelRoot from root= in /proc/cmdline.
func Detect() (dev *LinuxDevice, running, kernelRoot int, err error) {
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		return nil, 0, 0, err
	}
	sys, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("the root file system is not on a block device partition: %v", err)
	}
	running, err = readIntFile(filepath.Join(sys, "partition"))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("the root file system is not on a partition: %v", err)
	}
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return nil, 0, 0, err
	}
	kernelRoot, err = RootPartition(string(cmdline))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("/proc/cmdline: %v", err)
	}
	if running != 2 && running != 3 {
		return nil, 0, 0, fmt.Errorf("the root file system is on partition %d, not 2 or 3", running)
	}
	return &LinuxDevice{Disk: filepath.Base(filepath.Dir(sys)), Gokrazy: &Gokrazy{Password: GokrazyPassword()}}, running, kernelRoot, nil
}

// partitionPath returns /dev/<name> of partition n of the disk.
func (d *LinuxDevice) partitionPath(n int) (string, error) {
	dir := filepath.Join("/sys/class/block", d.Disk)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), d.Disk) {
			continue
		}
		if p, err := readIntFile(filepath.Join(dir, e.Name(), "partition")); err == nil && p == n {
			return "/dev/" + e.Name(), nil
		}
	}
	return "", fmt.Errorf("/dev/%s has no partition %d", d.Disk, n)
}

// OpenBoot opens partition 1.
func (d *LinuxDevice) OpenBoot() (BootPartition, error) {
	p, err := d.partitionPath(1)
	if err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_RDWR|unix.O_CLOEXEC, 0)
}

// OpenRoot opens root partition n for reading.
func (d *LinuxDevice) OpenRoot(n int) (io.ReadCloser, error) {
	if n != 2 && n != 3 {
		return nil, fmt.Errorf("partition %d is not a root partition", n)
	}
	p, err := d.partitionPath(n)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// Testboot asks gokrazy for a trial boot of the inactive root.
func (d *LinuxDevice) Testboot(ctx context.Context) error { return d.Gokrazy.Testboot(ctx) }

// Reboot reboots through gokrazy (programs stopped, /perm unmounted,
// kexec on amd64), or with reboot(2) if that does not happen within a
// minute.
func (d *LinuxDevice) Reboot() {
	if err := d.Gokrazy.Reboot(context.Background(), 10*time.Second); err != nil && d.Logf != nil {
		d.Logf("update: gokrazy's reboot: %v; rebooting directly", err)
	}
	time.Sleep(time.Minute) // gokrazy reboots a second after it answers
	unix.Sync()
	unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
}

// BootID returns the kernel's random boot ID.
func BootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// ReadBuild reads the running build's identity from gokrazy's SBOM file
// (/etc/gokrazy/sbom.json, written by the image builder).
func ReadBuild(path string) (Build, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Build{}, err
	}
	var f struct {
		Hash string `json:"sbom_hash"`
		SBOM struct {
			Board          string            `json:"board"`
			BuildTimestamp string            `json:"build_timestamp"`
			Versions       map[string]string `json:"versions"`
		} `json:"sbom"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return Build{}, fmt.Errorf("%s: %v", path, err)
	}
	return Build{Board: f.SBOM.Board, Version: f.SBOM.Versions["arka"], BuildTimestamp: f.SBOM.BuildTimestamp, SBOMHash: f.Hash}, nil
}

func readIntFile(p string) (int, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// RootBuild reads the build on root partition n: its SBOM
// (/etc/gokrazy/sbom.json), with the SquashFS mounted read-only for the
// moment.
func (d *LinuxDevice) RootBuild(n int) (Build, error) {
	if n != 2 && n != 3 {
		return Build{}, fmt.Errorf("partition %d is not a root partition", n)
	}
	p, err := d.partitionPath(n)
	if err != nil {
		return Build{}, err
	}
	dir, err := os.MkdirTemp("", "arka-root")
	if err != nil {
		return Build{}, err
	}
	defer os.Remove(dir)
	if err := unix.Mount(p, dir, "squashfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return Build{}, fmt.Errorf("root partition %d holds no root file system (%v)", n, err)
	}
	defer unix.Unmount(dir, 0)
	return ReadBuild(filepath.Join(dir, "etc", "gokrazy", "sbom.json"))
}
