package board

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

// fixtureBoards lists every fixture tree under testdata with the identity Detect
// must find in it. Sources of the file contents: testdata/README.md.
var fixtureBoards = []struct {
	dir      string
	model    string
	kind     Kind
	soc      string
	cpu      string
	cores    int
	memTotal uint64 // bytes, 0 = meminfo absent
	revRAM   uint64 // bytes, 0 = not a Pi
	qemu     bool
}{
	{"rpi-zero-2-w", "Raspberry Pi Zero 2 W Rev 1.0", KindRPiZero2W, "BCM2837", "Cortex-A53", 4, 426068 * KiB, 512 * MiB, false},
	{"rpi3-b", "Raspberry Pi 3 Model B Rev 1.2", KindRPi3B, "BCM2837", "Cortex-A53", 4, 948304 * KiB, 1 * GiB, false},
	{"rpi3-b-plus", "Raspberry Pi 3 Model B Plus Rev 1.3", KindRPi3BPlus, "BCM2837", "Cortex-A53", 4, 0, 1 * GiB, false},
	{"rpi4-b-1gb", "Raspberry Pi 4 Model B Rev 1.1", KindRPi4B, "BCM2711", "Cortex-A72", 4, 946664 * KiB, 1 * GiB, false},
	{"rpi4-b-2gb", "Raspberry Pi 4 Model B Rev 1.4", KindRPi4B, "BCM2711", "Cortex-A72", 4, 0, 2 * GiB, false},
	{"rpi4-b-4gb", "Raspberry Pi 4 Model B Rev 1.1", KindRPi4B, "BCM2711", "Cortex-A72", 4, 0, 4 * GiB, false},
	{"rpi4-b-8gb", "Raspberry Pi 4 Model B Rev 1.5", KindRPi4B, "BCM2711", "Cortex-A72", 4, 0, 8 * GiB, false},
	{"rpi-400", "Raspberry Pi 400 Rev 1.1", KindRPi400, "BCM2711", "Cortex-A72", 4, 0, 4 * GiB, false},
	{"rpi-cm4", "Raspberry Pi Compute Module 4 Rev 1.0", KindRPiCM4, "BCM2711", "Cortex-A72", 4, 0, 2 * GiB, false},
	{"rpi5-2gb", "Raspberry Pi 5 Model B Rev 1.1", KindRPi5, "BCM2712", "Cortex-A76", 4, 0, 2 * GiB, false},
	{"rpi5-4gb", "Raspberry Pi 5 Model B Rev 1.0", KindRPi5, "BCM2712", "Cortex-A76", 4, 0, 4 * GiB, false},
	{"rpi5-8gb", "Raspberry Pi 5 Model B Rev 1.0", KindRPi5, "BCM2712", "Cortex-A76", 4, 0, 8 * GiB, false},
	{"rpi5-16gb", "Raspberry Pi 5 Model B Rev 1.1", KindRPi5, "BCM2712", "Cortex-A76", 4, 16608944 * KiB, 16 * GiB, false},
	{"arm64-roc-rk3328-cc", "Firefly roc-rk3328-cc", KindARM64, "", "Cortex-A53", 4, 0, 0, false},
	{"x86-64-i9-10885h", "Intel(R) Core(TM) i9-10885H CPU @ 2.40GHz", KindX8664, "", "Intel(R) Core(TM) i9-10885H CPU @ 2.40GHz", 16, 98619100 * KiB, 0, false},
	{"qemu-x86-64", "Standard PC (i440FX + PIIX, 1996)", KindQEMU, "", "QEMU Virtual CPU version 2.5+", 1, 2004568 * KiB, 0, true},
}

func TestDetectFixtures(t *testing.T) {
	for _, fb := range fixtureBoards {
		t.Run(fb.dir, func(t *testing.T) {
			b, err := Detect(filepath.Join("testdata", fb.dir))
			if err != nil {
				t.Fatal(err)
			}
			if b.Model != fb.model || b.Kind != fb.kind || b.SoC != fb.soc || b.CPU != fb.cpu ||
				b.Cores != fb.cores || b.MemTotalBytes != fb.memTotal || b.RevisionRAMBytes != fb.revRAM || b.QEMU != fb.qemu {
				t.Errorf("got  %+v\nwant model=%q kind=%s soc=%q cpu=%q cores=%d mem=%d rev=%d qemu=%v",
					b, fb.model, fb.kind, fb.soc, fb.cpu, fb.cores, fb.memTotal, fb.revRAM, fb.qemu)
			}
			if b.IsRaspberryPi() != (fb.revRAM > 0) {
				t.Errorf("IsRaspberryPi = %v", b.IsRaspberryPi())
			}
			if len(b.Notes) > 0 {
				t.Errorf("unexpected notes: %q", b.Notes)
			}
		})
	}
}

func TestParseRevision(t *testing.T) {
	for _, tc := range []struct {
		in       string
		typ      string
		proc     string
		mem      uint64
		pcb      string
		warranty bool
	}{
		{"902120", "Zero 2 W", "BCM2837", 512 * MiB, "1.0", false},
		{"2902120", "Zero 2 W", "BCM2837", 512 * MiB, "1.0", true}, // adafruit PlatformDetect#210
		{"a020d3", "3B+", "BCM2837", 1 * GiB, "1.3", false},
		{"d03115", "4B", "BCM2711", 8 * GiB, "1.5", false},
		{"c03131", "400", "BCM2711", 4 * GiB, "1.1", false},
		{"b03140", "CM4", "BCM2711", 2 * GiB, "1.0", false},
		{"e04171", "5", "BCM2712", 16 * GiB, "1.1", false},
		{"0x00c04170", "5", "BCM2712", 4 * GiB, "1.0", false},
		{"0010", "B+", "BCM2835", 512 * MiB, "1.2", false},
		{"1000002", "B", "BCM2835", 256 * MiB, "1.0", true},
	} {
		r, err := ParseRevision(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if r.TypeName != tc.typ || r.Processor != tc.proc || r.MemoryBytes != tc.mem || r.PCBRevision != tc.pcb || r.WarrantyVoid != tc.warranty {
			t.Errorf("%s: got %+v", tc.in, r)
		}
	}
	for _, bad := range []string{"", "zz", "0000", "0001", "123456789"} {
		if _, err := ParseRevision(bad); err == nil {
			t.Errorf("ParseRevision(%q) succeeded", bad)
		}
	}
}

func TestDetectDegraded(t *testing.T) {
	t.Run("nothing readable", func(t *testing.T) {
		if _, err := DetectFS(fstest.MapFS{}); err == nil {
			t.Fatal("want error for an empty root")
		}
	})
	t.Run("root missing", func(t *testing.T) {
		if _, err := Detect(filepath.Join(t.TempDir(), "nope")); err == nil {
			t.Fatal("want error")
		}
	})
	t.Run("revision 0000 falls back to the device-tree model", func(t *testing.T) {
		// raspberrypi/linux#3161: Fedora on a 3B+ prints "Revision : 0000".
		b, err := DetectFS(fstest.MapFS{
			"proc/cpuinfo":           {Data: []byte("processor\t: 0\nCPU architecture: 7\nCPU part\t: 0xd03\n\nHardware\t: BCM2835\nRevision\t: 0000\n")},
			"proc/device-tree/model": {Data: []byte("Raspberry Pi 3 Model B+\x00")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if b.Kind != KindRPi3BPlus || b.Revision != nil || b.Cores != 1 || len(b.Notes) != 1 {
			t.Errorf("got %+v", b)
		}
	})
	t.Run("malformed meminfo and online list", func(t *testing.T) {
		b, err := DetectFS(fstest.MapFS{
			"proc/cpuinfo":                  {Data: []byte("processor : 0\nprocessor : 1\nvendor_id : GenuineIntel\nflags : fpu lm\n")},
			"proc/meminfo":                  {Data: []byte("MemTotal:  lots kB\n")},
			"sys/devices/system/cpu/online": {Data: []byte("garbage")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if b.Kind != KindX8664 || b.Cores != 2 || b.MemTotalBytes != 0 || len(b.Notes) != 1 || !strings.Contains(b.Notes[0], "not a number") {
			t.Errorf("got %+v", b)
		}
		if len(b.Missing) != 1 || b.Missing[0] != "proc/device-tree/model" {
			t.Errorf("missing = %q", b.Missing)
		}
	})
	t.Run("online list wins", func(t *testing.T) {
		b, _ := DetectFS(fstest.MapFS{
			"proc/cpuinfo":                  {Data: []byte("processor : 0\nCPU architecture: 8\n")},
			"sys/devices/system/cpu/online": {Data: []byte("0-3,6\n")},
			"proc/device-tree/compatible":   {Data: []byte("linux,dummy-virt\x00")},
		})
		if b.Cores != 5 || b.Kind != KindQEMU || !b.QEMU {
			t.Errorf("got %+v", b)
		}
	})
}

// TestDetectThisMachine runs Detect on the real root: the machine running the tests
// must come out as x86-64 or QEMU on amd64 (arm64 on a Pi), with its own CPU count
// and a MemTotal.
func TestDetectThisMachine(t *testing.T) {
	if _, err := os.Stat("/proc/cpuinfo"); err != nil {
		t.Skip("no /proc/cpuinfo here")
	}
	b, err := Detect("/")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("this machine: %s (%s), %d cores, MemTotal %s, CPU %q", b.Model, b.Kind, b.Cores, FormatBytes(b.MemTotalBytes), b.CPU)
	if runtime.GOARCH == "amd64" && b.Kind != KindX8664 && b.Kind != KindQEMU {
		t.Errorf("kind = %s on amd64", b.Kind)
	}
	if b.Cores < 1 || b.MemTotalBytes == 0 {
		t.Errorf("cores=%d mem=%d", b.Cores, b.MemTotalBytes)
	}
	if b.Cores != runtime.NumCPU() {
		t.Logf("note: %d online CPUs, %d usable by this process (affinity)", b.Cores, runtime.NumCPU())
	}
}
