package board

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sensors is one reading of the board's health. A nil pointer means the sensor is
// absent on this board (or its file was malformed; Notes says which), never zero.
type Sensors struct {
	TempC     *float64       `json:"temp_c"`      // SoC temperature, °C
	TempZone  string         `json:"temp_zone"`   // thermal zone type used, e.g. "cpu-thermal"
	Throttled *Throttle      `json:"throttled"`   // Raspberry Pi firmware flags; nil elsewhere
	CPUFreqHz *uint64        `json:"cpu_freq_hz"` // current frequency of CPU 0
	Load      *LoadAvg       `json:"load"`        // /proc/loadavg
	MemTotal  *uint64        `json:"mem_total_bytes"`
	MemAvail  *uint64        `json:"mem_available_bytes"` // MemAvailable
	Uptime    *time.Duration `json:"uptime_ns"`
	DiskFree  *uint64        `json:"disk_free_bytes"`  // free space for unprivileged writers on DiskPath
	DiskTotal *uint64        `json:"disk_total_bytes"` // size of the filesystem holding DiskPath
	DiskPath  string         `json:"disk_path,omitempty"`
	Fans      []KernelFan    `json:"fans,omitempty"`  // fans the kernel drives (Pi 5 fan header); see KernelFan
	Notes     []string       `json:"notes,omitempty"` // malformed files that were ignored
}

// LoadAvg is the 1, 5 and 15 minute load average.
type LoadAvg struct {
	Load1  float64 `json:"load1"`
	Load5  float64 `json:"load5"`
	Load15 float64 `json:"load15"`
}

// Throttle is the Raspberry Pi firmware's get_throttled bit mask
// (/sys/devices/platform/soc/soc:firmware/get_throttled, or .../axi/axi:firmware/...
// on a Pi 5; the same bits as "vcgencmd get_throttled"): bits 0-3 are the current
// state, bits 16-19 what has happened since boot.
type Throttle struct {
	Raw uint32 `json:"raw"`
}

// Throttle bits.
const (
	ThrottleUnderVoltage  = 1 << 0  // under-voltage now
	ThrottleFreqCapped    = 1 << 1  // ARM frequency capped now
	ThrottleThrottled     = 1 << 2  // throttled now
	ThrottleSoftTempLimit = 1 << 3  // soft temperature limit active now
	ThrottleSinceBootBase = 1 << 16 // the same four bits, shifted: occurred since boot
)

// UnderVoltage reports under-voltage now (bit 0) and since boot (bit 16).
func (t Throttle) UnderVoltage() (now, sinceBoot bool) {
	return t.Raw&ThrottleUnderVoltage != 0, t.Raw&(ThrottleUnderVoltage<<16) != 0
}

// Throttled reports throttling now (bit 2) and since boot (bit 18).
func (t Throttle) Throttled() (now, sinceBoot bool) {
	return t.Raw&ThrottleThrottled != 0, t.Raw&(ThrottleThrottled<<16) != 0
}

// FreqCapped reports frequency capping now (bit 1) and since boot (bit 17).
func (t Throttle) FreqCapped() (now, sinceBoot bool) {
	return t.Raw&ThrottleFreqCapped != 0, t.Raw&(ThrottleFreqCapped<<16) != 0
}

// SoftTempLimit reports the soft temperature limit now (bit 3) and since boot (bit 19).
func (t Throttle) SoftTempLimit() (now, sinceBoot bool) {
	return t.Raw&ThrottleSoftTempLimit != 0, t.Raw&(ThrottleSoftTempLimit<<16) != 0
}

// Flags lists the set conditions as short words ("under-voltage", "throttled",
// "freq-capped", "soft-temp-limit", each with a "-since-boot" twin), for display.
func (t Throttle) Flags() []string {
	var out []string
	names := []string{"under-voltage", "freq-capped", "throttled", "soft-temp-limit"}
	for i, n := range names {
		if t.Raw&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	for i, n := range names {
		if t.Raw&(1<<(16+i)) != 0 {
			out = append(out, n+"-since-boot")
		}
	}
	return out
}

// preferredZones are thermal zone types that measure the SoC, best first.
var preferredZones = []string{"cpu-thermal", "cpu_thermal", "soc-thermal", "soc_thermal", "x86_pkg_temp", "coretemp", "acpitz"}

// ReadSensors reads the sensors under root ("/" in production). diskPath, if not
// empty, is the writable partition whose free space is reported (on the appliance
// /perm); it is a real path, not relative to root, because free space comes from
// statfs(2). Missing sensors are left nil; malformed files are noted and left nil.
func ReadSensors(root, diskPath string) Sensors {
	if root == "" {
		root = defaultRootPath
	}
	s := ReadSensorsFS(os.DirFS(root))
	if diskPath != "" {
		s.DiskPath = diskPath
		var st syscall.Statfs_t
		if err := syscall.Statfs(diskPath, &st); err != nil {
			s.Notes = append(s.Notes, fmt.Sprintf("statfs %s: %v", diskPath, err))
		} else {
			free := st.Bavail * uint64(st.Bsize)
			total := st.Blocks * uint64(st.Bsize)
			s.DiskFree, s.DiskTotal = &free, &total
		}
	}
	return s
}

// ReadSensorsFS is ReadSensors without the disk reading, over an fs.FS whose root
// stands for "/".
func ReadSensorsFS(fsys fs.FS) Sensors {
	var s Sensors
	note := func(format string, args ...any) { s.Notes = append(s.Notes, fmt.Sprintf(format, args...)) }
	readTrim := func(name string) (string, bool) {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				note("%s: %v", name, err)
			}
			return "", false
		}
		return string(bytes.TrimSpace(data)), true
	}

	// Temperature: millidegrees Celsius in thermal_zone*/temp.
	zones, _ := fs.Glob(fsys, "sys/class/thermal/thermal_zone*")
	sort.Strings(zones)
	best, bestRank := "", len(preferredZones)+1
	for _, z := range zones {
		if _, ok := readTrim(path.Join(z, "temp")); !ok {
			continue
		}
		typ, _ := readTrim(path.Join(z, "type"))
		rank := len(preferredZones)
		for i, p := range preferredZones {
			if typ == p {
				rank = i
			}
		}
		if rank < bestRank {
			best, bestRank = z, rank
		}
	}
	if best != "" {
		raw, _ := readTrim(path.Join(best, "temp"))
		if v, err := strconv.ParseInt(raw, 10, 64); err != nil {
			note("%s/temp: %q is not millidegrees", best, raw)
		} else {
			c := float64(v) / 1000
			s.TempC = &c
			s.TempZone, _ = readTrim(path.Join(best, "type"))
		}
	}

	// Raspberry Pi throttling flags, hexadecimal as the firmware driver prints them.
	for _, pat := range []string{
		"sys/devices/platform/soc/soc:firmware/get_throttled",
		"sys/devices/platform/*/*:firmware/get_throttled",
		"sys/devices/platform/*:firmware/get_throttled",
	} {
		matches, _ := fs.Glob(fsys, pat)
		if len(matches) == 0 {
			continue
		}
		raw, ok := readTrim(matches[0])
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(raw, "0x"), 16, 32)
		if err != nil {
			note("%s: %q is not a hexadecimal mask", matches[0], raw)
			break
		}
		s.Throttled = &Throttle{Raw: uint32(v)}
		break
	}

	// CPU frequency, kHz.
	if raw, ok := readTrim("sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"); ok {
		if v, err := strconv.ParseUint(raw, 10, 64); err != nil {
			note("scaling_cur_freq: %q is not kHz", raw)
		} else {
			hz := v * 1000
			s.CPUFreqHz = &hz
		}
	}

	// Load averages: "0.20 0.18 0.12 1/80 11206".
	if raw, ok := readTrim("proc/loadavg"); ok {
		f := strings.Fields(raw)
		var l LoadAvg
		var err error
		if len(f) < 3 {
			err = errors.New("too few fields")
		} else {
			for i, dst := range []*float64{&l.Load1, &l.Load5, &l.Load15} {
				if *dst, err = strconv.ParseFloat(f[i], 64); err != nil {
					break
				}
			}
		}
		if err != nil {
			note("proc/loadavg: %q: %v", raw, err)
		} else {
			s.Load = &l
		}
	}

	// Memory.
	if data, err := fs.ReadFile(fsys, "proc/meminfo"); err == nil {
		for key, dst := range map[string]**uint64{"MemTotal": &s.MemTotal, "MemAvailable": &s.MemAvail} {
			v, ok, err := meminfoBytes(data, key)
			if err != nil {
				note("proc/meminfo: %v", err)
			} else if ok {
				*dst = &v
			}
		}
	}

	// Uptime: "350735.47 234388.90" (seconds since boot, idle seconds).
	if raw, ok := readTrim("proc/uptime"); ok {
		f := strings.Fields(raw)
		if len(f) == 0 {
			note("proc/uptime: empty")
		} else if secs, err := strconv.ParseFloat(f[0], 64); err != nil || secs < 0 {
			note("proc/uptime: %q is not seconds", f[0])
		} else {
			d := time.Duration(secs * float64(time.Second))
			s.Uptime = &d
		}
	}
	s.Fans = readKernelFans(fsys, note)
	sort.Strings(s.Notes)
	return s
}
