// Package wifiimage puts what the Raspberry Pi's Wi-Fi needs into an
// appliance image: the Broadcom/Cypress chip firmware from Debian's
// firmware-brcm80211 (component non-free-firmware) and the wireless
// regulatory database from wireless-regdb, under /lib/firmware where the
// kernel's brcmfmac and cfg80211 load them. Packages are fetched with
// apt-get download into a cache (images/out/debs) and unpacked there once,
// like appliance/build/phpimage does for php-fpm.
//
// brcmfmac asks for <chip>-sdio.<board>.txt (the board's NVRAM: antenna
// and power calibration, <board> from the device tree's compatible) and
// falls back to <chip>-sdio.txt (newer kernels do the same for .bin and
// .clm_blob). Boards lists every supported Pi, its chip and the files it
// uses. The Pi Zero 2 W's chips have no firmware in Debian: it comes from
// Raspberry Pi's firmware-nonfree, downloaded at a pinned commit and checked
// by SHA-256 (nonfree.go).
package wifiimage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/arkaweb/arka/appliance/build/image"
)

// Board is one Raspberry Pi with Wi-Fi (one chip of it: the Zero 2 W is
// made with two).
type Board struct {
	Name       string // e.g. "Raspberry Pi 4 Model B"
	Compatible string // device tree compatible, e.g. "raspberrypi,4-model-b"
	Chip       string // e.g. "CYW43455"
	// Base is the name brcmfmac asks for, from the kernel's table of chip
	// and revision (kernel.rpi's brcmfmac.ko: "brcm/<Base>.bin"), e.g.
	// "brcmfmac43455-sdio". For each of .bin, .clm_blob and .txt it
	// loads "<Base>.<Compatible><ext>" if present, else "<Base><ext>".
	Base string
	// NVRAMFrom names the board whose NVRAM file serves this one when
	// Debian ships none for it ("" if it ships one).
	NVRAMFrom string
	// NonFree is the chip's file base in Raspberry Pi's firmware-nonfree
	// when Debian has no firmware for it ("" otherwise): its files are
	// downloaded (NonFreeFiles) and placed under the board's own names,
	// "<Base>.<Compatible><ext>"; an extension it lacks comes from Debian
	// under the chip's generic name.
	NonFree string
}

// Boards are the Pis the image supports, with their Wi-Fi chips.
var Boards = []Board{
	{Name: "Raspberry Pi 3 Model B", Compatible: "raspberrypi,3-model-b", Chip: "BCM43430A1", Base: "brcmfmac43430-sdio"},
	{Name: "Raspberry Pi 3 Model B+", Compatible: "raspberrypi,3-model-b-plus", Chip: "CYW43455", Base: "brcmfmac43455-sdio"},
	{Name: "Raspberry Pi 3 Model A+", Compatible: "raspberrypi,3-model-a-plus", Chip: "CYW43455", Base: "brcmfmac43455-sdio"},
	{Name: "Raspberry Pi 4 Model B", Compatible: "raspberrypi,4-model-b", Chip: "CYW43455", Base: "brcmfmac43455-sdio"},
	{Name: "Raspberry Pi 400", Compatible: "raspberrypi,400", Chip: "CYW43455", Base: "brcmfmac43455-sdio", NVRAMFrom: "raspberrypi,4-model-b"},
	{Name: "Raspberry Pi Compute Module 4", Compatible: "raspberrypi,4-compute-module", Chip: "CYW43455", Base: "brcmfmac43455-sdio", NVRAMFrom: "raspberrypi,4-model-b"},
	{Name: "Raspberry Pi 5", Compatible: "raspberrypi,5-model-b", Chip: "CYW43455", Base: "brcmfmac43455-sdio", NVRAMFrom: "raspberrypi,4-model-b"},
	// The Zero 2 W's two chips: the kernel sees the CYW43436 as a 43430
	// revision B0 and the CYW43436S as a 43430A1 (the Pi 3 B's chip, whose
	// CLM blob from Debian it then uses, as Raspberry Pi OS does).
	{Name: "Raspberry Pi Zero 2 W", Compatible: "raspberrypi,model-zero-2-w", Chip: "CYW43436", Base: "brcmfmac43430b0-sdio", NonFree: "brcmfmac43436-sdio"},
	{Name: "Raspberry Pi Zero 2 W", Compatible: "raspberrypi,model-zero-2-w", Chip: "CYW43436S", Base: "brcmfmac43430-sdio", NonFree: "brcmfmac43436s-sdio"},
}

// Packages are the Debian packages used (all "Architecture: all").
var Packages = []string{"firmware-brcm80211", "wireless-regdb"}

// FirmwareDir is where the kernel loads firmware from.
const FirmwareDir = "/lib/firmware"

// Options select the cache and what to do about firmware-nonfree.
type Options struct {
	CacheDir string
	Logf     func(format string, a ...any)
	// SkipNonFree leaves out the boards whose firmware only Raspberry
	// Pi's firmware-nonfree has (nothing is downloaded).
	SkipNonFree bool
	// NonFreeBaseURL and NonFreeDir replace NonFreeBaseURL and
	// NonFreeCache(CacheDir) (tests).
	NonFreeBaseURL, NonFreeDir string
}

// Placed is one board's files in the image.
type Placed struct {
	Board Board
	Files []string // root paths, e.g. /lib/firmware/brcm/brcmfmac43455-sdio.bin
}

// Result is what goes into the root file system.
type Result struct {
	Files    []image.File
	Boards   []Placed
	Packages map[string]string // Debian package -> version
	NonFree  string            // "RPi-Distro/firmware-nonfree@<commit>" when its files are in
	// Left are the boards without firmware in the image, and NonFreeErr
	// why (an error wrapping ErrNonFreeUnavailable, or nil when
	// Options.SkipNonFree left them out).
	Left       []Board
	NonFreeErr error
}

// Collect fetches the packages (or takes them from the cache) and the
// firmware-nonfree files, and returns the firmware files for every board
// in Boards. A firmware-nonfree file whose SHA-256 differs from
// NonFreeFiles is an error; if they cannot be downloaded, the boards that
// need them are listed in Result.Left with the reason in NonFreeErr.
func Collect(o Options) (*Result, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	res := &Result{Packages: map[string]string{}}
	trees := map[string]string{}
	for _, p := range Packages {
		dir, version, err := fetch(o, p)
		if err != nil {
			return nil, err
		}
		trees[p], res.Packages[p] = dir, version
	}
	var nonfree map[string]string // name -> cached path
	if !o.SkipNonFree {
		var names []string
		for n := range NonFreeFiles {
			names = append(names, n)
		}
		var err error
		nonfree, err = fetchNonFree(o, names)
		switch {
		case errors.Is(err, ErrNonFreeUnavailable):
			res.NonFreeErr = err
		case err != nil:
			return nil, err
		default:
			res.NonFree = NonFreeRepo + "@" + NonFreeCommit
		}
	}
	fw := filepath.Join(trees["firmware-brcm80211"], "lib", "firmware", "brcm")
	placed := map[string]string{} // image path -> source
	add := func(src, dst string) error {
		if prev, ok := placed[dst]; ok {
			if prev != src {
				return fmt.Errorf("wifiimage: %s from both %s and %s", dst, prev, src)
			}
			return nil
		}
		if _, err := os.Stat(src); err != nil {
			return err
		}
		placed[dst] = src
		res.Files = append(res.Files, image.File{Path: dst, Source: src, Mode: 0o644})
		return nil
	}
	brcm := func(name string) string { return path.Join(FirmwareDir, "brcm", name) }
	res.Files = append(res.Files, image.File{Path: FirmwareDir + "/brcm", Mode: fs.ModeDir | 0o755})
	for _, b := range Boards {
		pl := Placed{Board: b}
		if b.NonFree != "" {
			if nonfree == nil {
				res.Left = append(res.Left, b)
				continue
			}
			for _, ext := range []string{".bin", ".clm_blob", ".txt"} {
				if src, ok := nonfree[b.NonFree+ext]; ok {
					dst := brcm(b.Base + "." + b.Compatible + ext)
					if err := add(src, dst); err != nil {
						return nil, err
					}
					pl.Files = append(pl.Files, dst)
					continue
				}
				if err := add(filepath.Join(fw, b.Base+ext), brcm(b.Base+ext)); err != nil {
					return nil, fmt.Errorf("wifiimage: %s (%s): neither firmware-nonfree's %s%s nor firmware-brcm80211's %s%s", b.Name, b.Chip, b.NonFree, ext, b.Base, ext)
				}
				pl.Files = append(pl.Files, brcm(b.Base+ext))
			}
			res.Boards = append(res.Boards, pl)
			continue
		}
		for _, ext := range []string{".bin", ".clm_blob"} {
			name := b.Base + ext
			if err := add(filepath.Join(fw, name), brcm(name)); err != nil {
				return nil, fmt.Errorf("wifiimage: %s: firmware-brcm80211 has no %s", b.Name, name)
			}
			pl.Files = append(pl.Files, brcm(name))
		}
		from := b.Compatible
		if b.NVRAMFrom != "" {
			from = b.NVRAMFrom
		}
		nvram := b.Base + "." + from + ".txt"
		dst := brcm(b.Base + "." + b.Compatible + ".txt")
		if err := add(filepath.Join(fw, nvram), dst); err != nil {
			return nil, fmt.Errorf("wifiimage: %s: firmware-brcm80211 has no %s", b.Name, nvram)
		}
		pl.Files = append(pl.Files, dst)
		res.Boards = append(res.Boards, pl)
	}
	// The database signed with the upstream key (the one the kernel
	// builds in), not Debian's re-signed copy.
	reg := filepath.Join(trees["wireless-regdb"], "lib", "firmware")
	for _, name := range []string{"regulatory.db", "regulatory.db.p7s"} {
		if err := add(filepath.Join(reg, name+"-upstream"), path.Join(FirmwareDir, name)); err != nil {
			return nil, fmt.Errorf("wifiimage: wireless-regdb has no %s-upstream", name)
		}
	}
	return res, nil
}

// fetch downloads one Architecture: all package into the cache and unpacks
// it once; it returns the unpacked tree and the version.
func fetch(o Options, pkg string) (dir, version string, err error) {
	out, err := exec.Command("apt-cache", "show", "--no-all-versions", pkg).Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		hint := ""
		if pkg == "firmware-brcm80211" {
			hint = "\n(it is in Debian's non-free-firmware component: as root, " +
				"echo 'deb http://deb.debian.org/debian bookworm non-free-firmware' > /etc/apt/sources.list.d/non-free-firmware.list && apt-get update)"
		}
		return "", "", fmt.Errorf("wifiimage: apt knows no package %s%s", pkg, hint)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Version: "); ok {
			version = v
			break
		}
	}
	if version == "" {
		return "", "", errors.New("wifiimage: no version for " + pkg)
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return "", "", err
	}
	deb := fmt.Sprintf("%s_%s_all.deb", pkg, strings.ReplaceAll(version, ":", "%3a"))
	if _, err := os.Stat(filepath.Join(o.CacheDir, deb)); err != nil {
		o.Logf("downloading %s %s", pkg, version)
		cmd := exec.Command("apt-get", "download", "-q", pkg+"="+version)
		cmd.Dir = o.CacheDir
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("wifiimage: apt-get download %s: %v\n%s", pkg, err, b)
		}
	}
	dir = filepath.Join(o.CacheDir, "unpacked", strings.TrimSuffix(deb, ".deb"))
	if _, err := os.Stat(dir + ".done"); err != nil {
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", "", err
		}
		if b, err := exec.Command("dpkg-deb", "-x", filepath.Join(o.CacheDir, deb), dir).CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("wifiimage: dpkg-deb -x %s: %v\n%s", deb, err, b)
		}
		if err := os.WriteFile(dir+".done", nil, 0o644); err != nil {
			return "", "", err
		}
	}
	return dir, version, nil
}
