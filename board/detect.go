// Package board identifies the machine Arka runs on (a Raspberry Pi model, a generic
// arm64 board, an x86-64 box or a QEMU guest), derives resource budgets from its cores
// and memory, reads its health sensors and decides when it is too hot for optional
// CPU work.
//
// Every reader takes a filesystem root, so tests run on fixture trees
// (testdata/<board>/proc/..., .../sys/...) and production passes "/".
//
// periph.io/x/host/v3 (v3.8.5) is Arka's hardware library where hardware is
// driven: the case fan's GPIO pin (package board/fan: host.Init,
// gpioreg.ByName). It is not used for what this package reads, because none
// of it can read a root other than "/": its distro package (DTModel,
// DTCompatible, CPUInfo) reads fixed absolute paths (/proc/device-tree/model,
// /proc/cpuinfo) and caches them in package-level variables; its Raspberry Pi
// revision decoder (rpi's parseRevision) is unexported; its sysfs thermal
// sensors (sysfs.ThermalSensors) and LEDs (sysfs.LEDs) are discovered once,
// from /sys, when its drivers register from init(). Using them would lose the
// fixture-root tests (testdata/<board>/...) and bring global mutable state,
// so the few files involved are parsed here, and the activity LED (package
// board/led) writes the kernel's LED class files itself: periph's LED cannot
// set the trigger, so it could neither take the LED from the kernel nor give
// it back.
package board

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Kind is a short machine-readable board family, used in logs, the status page and
// the budget table.
type Kind string

// Board kinds. Raspberry Pi kinds follow the revision-code type; the rest come from
// cpuinfo, DMI and the device tree.
const (
	KindRPiZero2W   Kind = "rpi-zero-2-w"
	KindRPi3B       Kind = "rpi3-b"
	KindRPi3BPlus   Kind = "rpi3-b-plus"
	KindRPi3APlus   Kind = "rpi3-a-plus"
	KindRPi4B       Kind = "rpi4-b"
	KindRPi400      Kind = "rpi-400"
	KindRPiCM4      Kind = "rpi-cm4"
	KindRPi5        Kind = "rpi5"
	KindRPiCM5      Kind = "rpi-cm5"
	KindRPi500      Kind = "rpi-500"
	KindRPiOther    Kind = "rpi" // any other Raspberry Pi
	KindARM64       Kind = "arm64"
	KindARM         Kind = "arm"
	KindX8664       Kind = "x86-64"
	KindX86         Kind = "x86"
	KindQEMU        Kind = "qemu"
	KindUnknown     Kind = "unknown"
	defaultRootPath      = "/"
)

var piKinds = map[uint8]Kind{
	0x08: KindRPi3B, 0x0d: KindRPi3BPlus, 0x0e: KindRPi3APlus, 0x11: KindRPi4B, 0x12: KindRPiZero2W,
	0x13: KindRPi400, 0x14: KindRPiCM4, 0x15: KindRPiCM4, 0x17: KindRPi5, 0x18: KindRPiCM5,
	0x19: KindRPi500, 0x1a: KindRPiCM5,
}

// Board is what Detect learned about the machine. Fields that could not be read
// are zero; Missing names the files that were absent and Notes explains anything
// malformed, so "unknown" is never confused with "zero".
type Board struct {
	Model string // human name: device-tree model, DMI product name or CPU model name
	Kind  Kind
	SoC   string // "BCM2711", "rockchip,rk3328", ...; empty when unknown
	CPU   string // "Cortex-A72", "Intel(R) Core(TM) i9-10885H CPU @ 2.40GHz", ...
	Cores int    // online logical CPUs; at least 1

	// MemTotalBytes is MemTotal from /proc/meminfo: what the kernel can use, after
	// firmware and GPU reservations. 0 when meminfo is absent or malformed.
	MemTotalBytes uint64
	// RevisionRAMBytes is the installed RAM encoded in a Raspberry Pi revision code;
	// 0 on other boards.
	RevisionRAMBytes uint64
	Revision         *Revision // decoded Raspberry Pi revision; nil on other boards
	QEMU             bool      // running as a QEMU (or QEMU/KVM) guest

	Missing []string // files under the root that did not exist, for example "proc/meminfo"
	Notes   []string // malformed input that was ignored
}

// IsRaspberryPi reports whether the board is any Raspberry Pi.
func (b Board) IsRaspberryPi() bool { return strings.HasPrefix(string(b.Kind), "rpi") }

// UsableRAMBytes is the memory the budget is computed from: MemTotal when known;
// otherwise 90% of the revision-code RAM (the firmware, GPU and kernel keep the rest;
// measured MemTotal is 81-99% of installed RAM on the fixture boards); otherwise 0.
func (b Board) UsableRAMBytes() uint64 {
	if b.MemTotalBytes > 0 {
		return b.MemTotalBytes
	}
	return b.RevisionRAMBytes / 10 * 9
}

// Detect identifies the board from the files under root ("/" in production): the
// device-tree model and compatible strings, /proc/cpuinfo (including the Raspberry Pi
// revision code), /proc/meminfo, /sys/devices/system/cpu/online and DMI
// (/sys/class/dmi/id/product_name, sys_vendor) on x86. Missing files are listed in
// Board.Missing, not treated as errors; Detect fails only when none of them can be
// read, or when root itself cannot be opened.
func Detect(root string) (Board, error) {
	if root == "" {
		root = defaultRootPath
	}
	st, err := os.Stat(root)
	if err != nil {
		return Board{}, fmt.Errorf("board: root %s: %w", root, err)
	}
	if !st.IsDir() {
		return Board{}, fmt.Errorf("board: root %s is not a directory", root)
	}
	return DetectFS(os.DirFS(root))
}

// DetectFS is Detect over an fs.FS whose root stands for "/" (paths such as
// "proc/cpuinfo").
func DetectFS(fsys fs.FS) (Board, error) {
	var b Board
	read := func(name string) []byte {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				b.Missing = append(b.Missing, name)
			} else {
				b.Notes = append(b.Notes, fmt.Sprintf("%s: %v", name, err))
			}
			return nil
		}
		return data
	}
	cpuinfo := read("proc/cpuinfo")
	meminfo := read("proc/meminfo")
	dtModel := nulStrings(read("proc/device-tree/model"))
	dtCompat := nulStrings(readQuiet(fsys, "proc/device-tree/compatible"))
	online := readQuiet(fsys, "sys/devices/system/cpu/online")
	dmiProduct := strings.TrimSpace(string(readQuiet(fsys, "sys/class/dmi/id/product_name")))
	dmiVendor := strings.TrimSpace(string(readQuiet(fsys, "sys/class/dmi/id/sys_vendor")))
	if cpuinfo == nil && meminfo == nil && len(dtModel) == 0 && dmiProduct == "" {
		return b, fmt.Errorf("board: none of proc/cpuinfo, proc/meminfo, proc/device-tree/model, sys/class/dmi/id/product_name is readable")
	}

	ci := parseCPUInfo(cpuinfo)
	if meminfo != nil {
		if v, ok, err := meminfoBytes(meminfo, "MemTotal"); err != nil {
			b.Notes = append(b.Notes, "proc/meminfo: "+err.Error())
		} else if ok {
			b.MemTotalBytes = v
		} else {
			b.Notes = append(b.Notes, "proc/meminfo: no MemTotal line")
		}
	}

	// Cores: the online CPU list is authoritative; cpuinfo blocks next; "siblings"
	// covers a cpuinfo that shows one block of a larger package.
	if n, err := parseCPUList(string(online)); err == nil && n > 0 {
		b.Cores = n
	} else {
		b.Cores = max(ci.processors, ci.siblings)
	}

	if len(dtModel) > 0 {
		b.Model = dtModel[0]
	}
	if ci.revision != "" {
		r, err := ParseRevision(ci.revision)
		switch {
		case err != nil:
			b.Notes = append(b.Notes, "proc/cpuinfo: "+err.Error())
		case r.NewStyle || strings.HasPrefix(b.Model, "Raspberry Pi") || ci.hardware == "BCM2835":
			b.Revision = &r
		}
	}
	b.QEMU = isQEMU(ci, dmiProduct, dmiVendor, dtModel, dtCompat)

	switch {
	case b.Revision != nil:
		r := b.Revision
		b.Kind = piKinds[r.Type]
		if b.Kind == "" {
			b.Kind = KindRPiOther
		}
		b.SoC = r.Processor
		b.RevisionRAMBytes = r.MemoryBytes
		if b.Model == "" {
			b.Model = ci.model
		}
		if b.Model == "" {
			b.Model = "Raspberry Pi " + r.TypeName + " Rev " + r.PCBRevision
		}
		if b.Cores == 0 && r.ProcessorID >= 1 {
			b.Cores = 4 // every Pi from BCM2836 on has four cores
		}
	case strings.HasPrefix(b.Model, "Raspberry Pi"):
		// A kernel that does not print the revision (Revision 0000 on some distros):
		// fall back to the device-tree model string.
		b.Kind = kindFromPiModel(b.Model)
	case b.QEMU:
		b.Kind = KindQEMU
	case ci.x86:
		b.Kind = KindX86
		if ci.longMode {
			b.Kind = KindX8664
		}
	case ci.armArch >= 8:
		b.Kind = KindARM64
	case ci.armArch > 0:
		b.Kind = KindARM
	default:
		b.Kind = KindUnknown
	}

	if b.SoC == "" && len(dtCompat) > 0 {
		b.SoC = dtCompat[len(dtCompat)-1]
	}
	b.CPU = ci.cpuName()
	if b.Model == "" && dmiProduct != "" {
		b.Model = dmiProduct
	}
	if b.Model == "" {
		b.Model = b.CPU
	}
	if b.Model == "" {
		b.Model = "unknown"
	}
	if b.Cores < 1 {
		b.Cores = 1
		b.Notes = append(b.Notes, "CPU count unknown, assuming 1")
	}
	return b, nil
}

func readQuiet(fsys fs.FS, name string) []byte {
	data, _ := fs.ReadFile(fsys, name)
	return data
}

// nulStrings splits a device-tree string property (NUL-separated, NUL-terminated).
func nulStrings(data []byte) []string {
	var out []string
	for _, s := range bytes.Split(data, []byte{0}) {
		if t := strings.TrimSpace(string(s)); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func kindFromPiModel(model string) Kind {
	for _, m := range []struct {
		prefix string
		kind   Kind
	}{
		{"Raspberry Pi Zero 2", KindRPiZero2W}, {"Raspberry Pi 3 Model B Plus", KindRPi3BPlus},
		{"Raspberry Pi 3 Model B+", KindRPi3BPlus}, {"Raspberry Pi 3 Model A", KindRPi3APlus},
		{"Raspberry Pi 3 Model B", KindRPi3B}, {"Raspberry Pi 4", KindRPi4B}, {"Raspberry Pi 400", KindRPi400},
		{"Raspberry Pi Compute Module 4", KindRPiCM4}, {"Raspberry Pi 500", KindRPi500},
		{"Raspberry Pi 5", KindRPi5}, {"Raspberry Pi Compute Module 5", KindRPiCM5},
	} {
		if strings.HasPrefix(model, m.prefix) {
			// "Raspberry Pi 400" also starts with "Raspberry Pi 4": prefer the longer match.
			if m.kind == KindRPi4B && strings.HasPrefix(model, "Raspberry Pi 400") {
				return KindRPi400
			}
			if m.kind == KindRPi5 && strings.HasPrefix(model, "Raspberry Pi 500") {
				return KindRPi500
			}
			return m.kind
		}
	}
	return KindRPiOther
}

func isQEMU(ci cpuInfo, dmiProduct, dmiVendor string, dtModel, dtCompat []string) bool {
	if strings.Contains(ci.modelName, "QEMU") || strings.Contains(dmiVendor, "QEMU") ||
		strings.Contains(dmiProduct, "QEMU") || strings.HasPrefix(dmiProduct, "Standard PC (") {
		return true
	}
	for _, s := range append(append([]string{}, dtModel...), dtCompat...) {
		if s == "linux,dummy-virt" || strings.Contains(s, "QEMU") {
			return true
		}
	}
	return false
}

// cpuInfo is what Detect needs from /proc/cpuinfo.
type cpuInfo struct {
	processors int    // "processor" entries
	siblings   int    // x86 logical CPUs per package
	modelName  string // x86 / 32-bit ARM "model name"
	hardware   string // "Hardware"
	revision   string // "Revision"
	model      string // "Model" (Raspberry Pi kernels)
	cpuPart    string // ARM "CPU part"
	armArch    int    // ARM "CPU architecture"
	x86        bool
	longMode   bool // x86 "lm" flag: 64-bit capable
}

// parseCPUInfo reads "key : value" lines. Lines without a colon (a value wrapped by
// whoever copied the file) are ignored.
func parseCPUInfo(data []byte) cpuInfo {
	var ci cpuInfo
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			if _, err := strconv.Atoi(v); err == nil {
				ci.processors++
			}
		case "siblings":
			if n, err := strconv.Atoi(v); err == nil {
				ci.siblings = max(ci.siblings, n)
			}
		case "model name":
			if ci.modelName == "" {
				ci.modelName = v
			}
		case "Hardware":
			ci.hardware = v
		case "Revision":
			ci.revision = v
		case "Model":
			ci.model = v
		case "CPU part":
			ci.cpuPart = v
		case "CPU architecture":
			if n, err := strconv.Atoi(v); err == nil {
				ci.armArch = n
			}
		case "vendor_id":
			ci.x86 = true
		case "flags":
			ci.x86 = true
			ci.longMode = ci.longMode || hasWord(v, "lm")
		}
	}
	return ci
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// armParts names the ARM implementer 0x41 "CPU part" numbers seen on the boards Arka targets.
var armParts = map[string]string{
	"0xb76": "ARM1176", "0xc07": "Cortex-A7", "0xd03": "Cortex-A53", "0xd04": "Cortex-A35",
	"0xd05": "Cortex-A55", "0xd07": "Cortex-A57", "0xd08": "Cortex-A72", "0xd09": "Cortex-A73",
	"0xd0b": "Cortex-A76", "0xd0c": "Neoverse-N1", "0xd40": "Neoverse-V1", "0xd49": "Neoverse-N2",
}

func (ci cpuInfo) cpuName() string {
	if ci.x86 && ci.modelName != "" {
		return ci.modelName
	}
	if n := armParts[strings.ToLower(ci.cpuPart)]; n != "" {
		return n
	}
	return ci.modelName
}

// parseCPUList counts the CPUs in a kernel CPU list such as "0-3" or "0,2-5".
func parseCPUList(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty CPU list")
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("bad CPU list %q", s)
			}
		}
		n += b - a + 1
	}
	return n, nil
}

// meminfoBytes returns the value of key in /proc/meminfo ("MemTotal:  948304 kB"),
// in bytes. ok is false when the key is absent; err reports a malformed line.
func meminfoBytes(data []byte, key string) (v uint64, ok bool, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, rest, found := strings.Cut(sc.Text(), ":")
		if !found || strings.TrimSpace(k) != key {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false, fmt.Errorf("%s: no value", key)
		}
		n, perr := strconv.ParseUint(f[0], 10, 64)
		if perr != nil {
			return 0, false, fmt.Errorf("%s: %q is not a number", key, f[0])
		}
		mult := uint64(1)
		if len(f) > 1 {
			switch strings.ToLower(f[1]) {
			case "kb":
				mult = 1024 // the kernel's "kB" is KiB
			default:
				return 0, false, fmt.Errorf("%s: unknown unit %q", key, f[1])
			}
		}
		return n * mult, true, nil
	}
	return 0, false, nil
}
