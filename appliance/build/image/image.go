// Package image builds a bootable, read-only Arka appliance disk image for a
// board (images/boards/*.toml) in gokrazy's layout:
//
//	LBA 0        hybrid MBR (the Raspberry Pi boot ROM reads only this)
//	LBA 1-33     GPT (UEFI 2.10 §5.3), backup GPT at the end
//	partition 1  boot: FAT16, one FAT (package fat16): kernel, cmdline.txt,
//	             loader/entries/gokrazy.conf, systemd-boot or Pi firmware
//	partition 2  root A: SquashFS (gzip) with /gokrazy/init (cmd/arka-init),
//	             the gokrazy helpers, /user/arka, /etc
//	partition 3  root B: empty until the first over-the-air update
//	partition 4  perm: ext4, grown to the whole disk by arka-init at boot
//
// The partition table and FAT16 are written in Go; the SquashFS and ext4
// file systems by mksquashfs (Debian: squashfs-tools) and mkfs.ext4
// (e2fsprogs). The same inputs and SourceDateEpoch give a byte-identical
// image.
package image

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/arkaweb/arka/appliance/devices"
	"github.com/arkaweb/arka/appliance/initcfg"
	"github.com/arkaweb/arka/appliance/partition"
)

// DefaultSize is the default image size: 1200 MiB, the smallest gok writes.
const DefaultSize = 1200 << 20

// File is an extra file or directory for the root file system.
type File struct {
	Path   string      // absolute path in the root, e.g. "/etc/php/php.ini"
	Data   []byte      // content (when Source is empty and Mode is not a dir)
	Source string      // host file to copy
	Mode   fs.FileMode // permission bits, plus fs.ModeDir for a directory, fs.ModeSymlink (Data = target)
}

// Config describes one image build.
type Config struct {
	Board    *Board
	Output   string // image path, e.g. images/out/arka-rpi.img
	Hostname string // default "arka"; partition GUIDs derive from it

	ModuleDir string // the Arka module root (go.mod); default: found from the working directory
	GoCmd     string // default "go"
	ArkaPkg   string // package for /user/arka, default "./cmd/arka"
	Version   string // Arka version, set as github.com/arkaweb/arka/server.Version

	// PasswordFile holds the gokrazy web UI / update password. If it exists
	// it is reused (so rebuilt images keep the password and the build stays
	// reproducible); otherwise a new password is generated into it (0600).
	// Default: Output with ".img" replaced by ".gokr-pw.txt".
	PasswordFile string

	HTTPPort  int // gokrazy web UI ports, moved off 80/443 for Arka: default 8080
	HTTPSPort int // default 8443

	SourceDateEpoch int64  // build time (seconds); 0: now
	Size            int64  // image bytes, default DefaultSize
	CABundle        string // default /etc/ssl/certs/ca-certificates.crt
	Timezone        string // zoneinfo name for /etc/localtime, default "UTC"
	KernelExtraArgs string // appended to the kernel command line
	Site            fs.FS  // default site (sites/, www/); default images.Site

	// Settings is settings.txt in the boot partition (appliance/settings);
	// default: the file with every setting commented out. SettingsGiven
	// says it was given at build time (flags or a file): after an
	// over-the-air update arka-init applies it instead of the device's own
	// settings, or, when SettingsKeys name the settings given one by one
	// (flags, settings.Key constants), applies those and keeps the rest of
	// the device's own (settings.Choose).
	Settings      []byte
	SettingsGiven bool
	SettingsKeys  []string

	ExtraFiles    []File            // more root files (php-fpm, …)
	ExtraServices []initcfg.Service // more programs for arka-init to supervise
	// ExtraVersions are recorded with the build's versions (Summary and
	// /etc/gokrazy/sbom.json, so they change the SBOM hash): for example
	// the Debian packages of php-fpm.
	ExtraVersions map[string]string

	Progress Progress // may be nil
}

// Summary describes a built image.
type Summary struct {
	Board          string
	Output         string
	Size           int64
	Partitions     []partition.Entry
	BootUsed       int64
	RootUsed       int64
	Versions       map[string]string // "arka", kernel/firmware modules, "systemd-boot"
	BuildTimestamp string
	SBOMHash       string // gokrazy's SBOMHash of the running build: identifies this root exactly
	PasswordFile   string
	Cmdline        string
	Duration       time.Duration
}

// Progress receives build progress: Stage when stage n of the build
// starts, Bytes while a stage copies data (done of total bytes).
type Progress interface {
	Stage(n, of int, name string)
	Bytes(done, total int64)
}

// CheckTools reports, with the Debian package to install, any host tool the
// build needs that is missing.
func CheckTools(b *Board) error {
	var missing []string
	for _, t := range [][2]string{{"mksquashfs", "squashfs-tools"}, {"mkfs.ext4", "e2fsprogs"}} {
		if _, err := exec.LookPath(t[0]); err != nil {
			if _, err := os.Stat("/usr/sbin/" + t[0]); err != nil {
				missing = append(missing, fmt.Sprintf("%s (install the Debian package %s)", t[0], t[1]))
			}
		}
	}
	if b != nil && b.EFILoader != "" {
		if _, err := os.Stat(b.EFILoader); err != nil {
			missing = append(missing, fmt.Sprintf("%s (install the Debian package systemd-boot-efi)", b.EFILoader))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("image: missing build tools: %s", strings.Join(missing, "; "))
	}
	return nil
}

func lookTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return "/usr/sbin/" + name
}

func (c *Config) defaults() error {
	if c.Board == nil {
		return errors.New("image: no board")
	}
	if c.Output == "" {
		return errors.New("image: no output path")
	}
	if c.Hostname == "" {
		c.Hostname = "arka"
	}
	if c.GoCmd == "" {
		c.GoCmd = "go"
	}
	if c.ArkaPkg == "" {
		c.ArkaPkg = "./cmd/arka"
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.PasswordFile == "" {
		c.PasswordFile = strings.TrimSuffix(c.Output, ".img") + ".gokr-pw.txt"
	}
	if c.HTTPPort == 0 {
		c.HTTPPort = 8080
	}
	if c.HTTPSPort == 0 {
		c.HTTPSPort = 8443
	}
	for _, p := range []int{c.HTTPPort, c.HTTPSPort} {
		if p == 80 || p == 443 || p < 1 || p > 65535 {
			return fmt.Errorf("image: gokrazy UI port %d: must be 1-65535 and not 80/443 (Arka serves those)", p)
		}
	}
	if c.SourceDateEpoch == 0 {
		c.SourceDateEpoch = time.Now().Unix()
	}
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	if c.Size%partition.SectorSize != 0 || c.Size/partition.SectorSize < partition.MinDiskSectors+2048 {
		return fmt.Errorf("image: size %d: must be a multiple of 512 and at least 1101 MiB", c.Size)
	}
	if c.CABundle == "" {
		c.CABundle = "/etc/ssl/certs/ca-certificates.crt"
	}
	if c.Timezone == "" {
		c.Timezone = "UTC"
	}
	if c.ModuleDir == "" {
		dir, err := findModuleDir()
		if err != nil {
			return err
		}
		c.ModuleDir = dir
	}
	return nil
}

func findModuleDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/arkaweb/arka\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("image: cannot find the Arka module (go.mod) above the working directory")
		}
		dir = parent
	}
}

// password returns the UI password, reusing c.PasswordFile or creating it.
func (c *Config) password() (string, error) {
	if b, err := os.ReadFile(c.PasswordFile); err == nil {
		pw := strings.TrimSpace(string(b))
		if len(pw) < 8 {
			return "", fmt.Errorf("image: %s: password shorter than 8 characters", c.PasswordFile)
		}
		return pw, nil
	} else if !os.IsNotExist(err) {
		return "", err
	}
	raw := make([]byte, 15)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	pw := strings.ToLower(base32.StdEncoding.EncodeToString(raw)) // 24 characters, 120 bits
	// Created whole and exclusively: two builds for one new device at
	// once agree on the password of the one that created the file.
	created, err := devices.CreateFile(c.PasswordFile, []byte(pw+"\n"))
	if err != nil {
		return "", err
	}
	if !created {
		return c.password()
	}
	return pw, nil
}

// Build builds the image described by c.
func Build(c Config) (*Summary, error) {
	start := time.Now()
	if err := c.defaults(); err != nil {
		return nil, err
	}
	if err := CheckTools(c.Board); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "arka-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	const stages = 6
	stage := func(n int, name string) {
		if c.Progress != nil {
			c.Progress.Stage(n, stages, name)
		}
	}
	sum := &Summary{
		Board:          c.Board.Name,
		Output:         c.Output,
		Size:           c.Size,
		Versions:       map[string]string{"arka": c.Version},
		BuildTimestamp: time.Unix(c.SourceDateEpoch, 0).UTC().Format(time.RFC3339),
		PasswordFile:   c.PasswordFile,
	}

	for k, v := range c.ExtraVersions {
		sum.Versions[k] = v
	}
	stage(1, "fetching kernel and firmware modules")
	modDirs := map[string]string{}
	for _, m := range c.Board.Modules() {
		dir, err := downloadModule(c.GoCmd, m)
		if err != nil {
			return nil, err
		}
		modDirs[m.Module] = dir
		sum.Versions[m.Module] = m.Version
	}

	shipModules, err := checkKernelModules(c.Board, modDirs[c.Board.Kernel.Module])
	if err != nil {
		return nil, err
	}
	pw, err := c.password() // after the checks: a refused build writes nothing
	if err != nil {
		return nil, err
	}

	stage(2, "building arka, arka-init and the gokrazy helpers for linux/"+c.Board.GOARCH)
	bins, err := c.buildBinaries(work, sum.BuildTimestamp)
	if err != nil {
		return nil, err
	}

	stage(3, "assembling and compressing the root file system (SquashFS)")
	rootImg := filepath.Join(work, "root.squashfs")
	kernelModules := ""
	if shipModules {
		kernelModules = modDirs[c.Board.Kernel.Module]
	}
	sum.SBOMHash, err = c.buildRoot(work, bins, kernelModules, pw, rootImg, sum.Versions, sum.BuildTimestamp)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(rootImg)
	if err != nil {
		return nil, err
	}
	if st.Size() > partition.RootSectors*partition.SectorSize {
		return nil, fmt.Errorf("image: root file system is %d MiB, a root partition holds 500 MiB", st.Size()>>20)
	}
	sum.RootUsed = st.Size()

	table, err := partition.Layout(uint64(c.Size/partition.SectorSize), c.Hostname, partition.MustParseGUID(c.Board.RootType))
	if err != nil {
		return nil, err
	}
	sum.Partitions = table.Entries
	p1, _ := table.Entry(partition.Boot)

	if err := os.MkdirAll(filepath.Dir(c.Output), 0o755); err != nil {
		return nil, err
	}
	tmpOut := c.Output + ".tmp"
	out, err := os.OpenFile(tmpOut, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmpOut)
	defer out.Close()
	if err := out.Truncate(c.Size); err != nil {
		return nil, err
	}
	if err := partition.Write(out, table); err != nil {
		return nil, err
	}

	stage(4, "writing the boot file system (FAT16)")
	cmdline := c.cmdline(modDirs[c.Board.Kernel.Module], p1.GUID)
	sum.Cmdline = cmdline
	build := BuildInfo{Board: c.Board.Name, Version: c.Version, BuildTimestamp: sum.BuildTimestamp, SBOMHash: sum.SBOMHash}
	bootUsed, err := c.writeBoot(out, modDirs, p1, cmdline, sum.Versions, build)
	if err != nil {
		return nil, err
	}
	sum.BootUsed = bootUsed

	stage(5, "writing root A")
	p2, _ := table.Entry(partition.RootA)
	if err := copyInto(out, p2.Offset(), rootImg, c.Progress); err != nil {
		return nil, err
	}

	stage(6, "formatting perm (ext4)")
	p4, _ := table.Entry(partition.Perm)
	if err := out.Sync(); err != nil {
		return nil, err
	}
	if err := c.mkfsPerm(tmpOut, p4, table.Signature); err != nil {
		return nil, err
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmpOut, c.Output); err != nil {
		return nil, err
	}
	sum.Duration = time.Since(start)
	return sum, nil
}

// copyInto copies the file src into w at off, reporting progress.
func copyInto(w io.WriterAt, off int64, src string, p Progress) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	var done int64
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, werr := w.WriteAt(buf[:n], off+done); werr != nil {
				return werr
			}
			done += int64(n)
			if p != nil {
				p.Bytes(done, st.Size())
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// mkfsPerm formats partition 4 inside the image file with mkfs.ext4.
// UUID, hash seed and time are fixed so the result is reproducible; the
// block size is 4 KiB (not the 1 KiB mke2fs picks for small file systems)
// because arka-init grows it online to the whole disk at first boot. The
// journal is 16 MiB, not the 4 MiB mke2fs picks for 96 MiB: an online
// resize transaction needs journal credits for every reserved GDT block,
// and a 4 MiB journal is too small for that (jbd2 refuses, ENOSPC). Beyond
// the reserved GDT blocks (1024x the initial size) the kernel switches the
// file system to meta_bg by itself.
func (c *Config) mkfsPerm(img string, p partition.Entry, sig uint32) error {
	uuid := fmt.Sprintf("%08x-0000-4000-8000-%012x", sig, c.SourceDateEpoch&0xffffffffffff)
	args := []string{
		"-q", "-F", "-t", "ext4", "-L", "perm",
		"-b", "4096", "-i", "16384", "-m", "1",
		"-U", uuid,
		"-J", "size=16",
		"-E", fmt.Sprintf("offset=%d,hash_seed=%s,nodiscard", p.Offset(), uuid),
		img, fmt.Sprintf("%dk", p.Size()/1024),
	}
	cmd := exec.Command(lookTool("mkfs.ext4"), args...)
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("E2FSPROGS_FAKE_TIME=%d", c.SourceDateEpoch),
		fmt.Sprintf("SOURCE_DATE_EPOCH=%d", c.SourceDateEpoch),
		"MKE2FS_CONFIG=/nonexistent")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("image: mkfs.ext4: %v\n%s", err, out)
	}
	return nil
}
