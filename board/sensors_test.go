package board

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// A Raspberry Pi 4 sysfs/procfs tree, in the kernel's formats.
func piSensorTree() fstest.MapFS {
	return fstest.MapFS{
		"sys/class/thermal/thermal_zone0/temp":                 {Data: []byte("48692\n")},
		"sys/class/thermal/thermal_zone0/type":                 {Data: []byte("cpu-thermal\n")},
		"sys/devices/platform/soc/soc:firmware/get_throttled":  {Data: []byte("50005\n")},
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq": {Data: []byte("1500000\n")},
		"proc/loadavg": {Data: []byte("0.52 0.58 0.59 1/180 12345\n")},
		"proc/uptime":  {Data: []byte("350735.47 1234388.90\n")},
		"proc/meminfo": {Data: []byte("MemTotal:        3884324 kB\nMemFree:         2700000 kB\nMemAvailable:    3300000 kB\n")},
	}
}

func TestReadSensors(t *testing.T) {
	s := ReadSensorsFS(piSensorTree())
	if s.TempC == nil || *s.TempC != 48.692 || s.TempZone != "cpu-thermal" {
		t.Errorf("temp: %v %q", s.TempC, s.TempZone)
	}
	if s.Throttled == nil {
		t.Fatal("throttled absent")
	}
	if now, boot := s.Throttled.UnderVoltage(); !now || !boot {
		t.Errorf("under-voltage now=%v boot=%v", now, boot)
	}
	if now, boot := s.Throttled.Throttled(); !now || !boot {
		t.Errorf("throttled now=%v boot=%v", now, boot)
	}
	if now, _ := s.Throttled.FreqCapped(); now {
		t.Error("freq capped")
	}
	if got := strings.Join(s.Throttled.Flags(), ","); got != "under-voltage,throttled,under-voltage-since-boot,throttled-since-boot" {
		t.Errorf("flags %s", got)
	}
	if s.CPUFreqHz == nil || *s.CPUFreqHz != 1_500_000_000 {
		t.Errorf("freq %v", s.CPUFreqHz)
	}
	if s.Load == nil || *s.Load != (LoadAvg{0.52, 0.58, 0.59}) {
		t.Errorf("load %v", s.Load)
	}
	if s.Uptime == nil || s.Uptime.Truncate(time.Second) != 350735*time.Second {
		t.Errorf("uptime %v", s.Uptime)
	}
	if s.MemTotal == nil || *s.MemTotal != 3884324*KiB || s.MemAvail == nil || *s.MemAvail != 3300000*KiB {
		t.Errorf("mem %v %v", s.MemTotal, s.MemAvail)
	}
	if len(s.Notes) != 0 {
		t.Errorf("notes %q", s.Notes)
	}
}

func TestReadSensorsPi5ThrottlePath(t *testing.T) {
	s := ReadSensorsFS(fstest.MapFS{"sys/devices/platform/axi/axi:firmware/get_throttled": {Data: []byte("0\n")}})
	if s.Throttled == nil || s.Throttled.Raw != 0 || len(s.Throttled.Flags()) != 0 {
		t.Errorf("got %+v", s.Throttled)
	}
}

func TestReadSensorsMissingIsAbsent(t *testing.T) {
	s := ReadSensorsFS(fstest.MapFS{})
	if s.TempC != nil || s.Throttled != nil || s.CPUFreqHz != nil || s.Load != nil || s.MemTotal != nil ||
		s.MemAvail != nil || s.Uptime != nil || s.DiskFree != nil || len(s.Notes) != 0 {
		t.Errorf("missing files must read as absent: %+v", s)
	}
}

func TestReadSensorsMalformed(t *testing.T) {
	s := ReadSensorsFS(fstest.MapFS{
		"sys/class/thermal/thermal_zone0/temp":                 {Data: []byte("hot\n")},
		"sys/devices/platform/soc/soc:firmware/get_throttled":  {Data: []byte("xyz\n")},
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq": {Data: []byte("\n")},
		"proc/loadavg": {Data: []byte("0.1 0.2\n")},
		"proc/uptime":  {Data: []byte("-5 0\n")},
		"proc/meminfo": {Data: []byte("MemTotal: 12 MB\nMemAvailable: 5 kB\n")},
	})
	if s.TempC != nil || s.Throttled != nil || s.CPUFreqHz != nil || s.Load != nil || s.Uptime != nil || s.MemTotal != nil {
		t.Errorf("malformed files must read as absent: %+v", s)
	}
	if s.MemAvail == nil || *s.MemAvail != 5*KiB {
		t.Errorf("the good meminfo line must still be read: %v", s.MemAvail)
	}
	if len(s.Notes) != 6 {
		t.Errorf("want 6 notes, got %q", s.Notes)
	}
}

func TestReadSensorsZonePreference(t *testing.T) {
	s := ReadSensorsFS(fstest.MapFS{
		"sys/class/thermal/thermal_zone0/temp": {Data: []byte("27800\n")},
		"sys/class/thermal/thermal_zone0/type": {Data: []byte("acpitz\n")},
		"sys/class/thermal/thermal_zone1/temp": {Data: []byte("-1000\n")},
		"sys/class/thermal/thermal_zone1/type": {Data: []byte("iwlwifi_1\n")},
		"sys/class/thermal/thermal_zone2/temp": {Data: []byte("61000\n")},
		"sys/class/thermal/thermal_zone2/type": {Data: []byte("x86_pkg_temp\n")},
	})
	if s.TempC == nil || *s.TempC != 61 || s.TempZone != "x86_pkg_temp" {
		t.Errorf("got %v %q", s.TempC, s.TempZone)
	}
}

func TestReadSensorsDisk(t *testing.T) {
	dir := t.TempDir()
	s := ReadSensors(dir, dir)
	if s.DiskFree == nil || s.DiskTotal == nil || *s.DiskTotal == 0 || *s.DiskFree > *s.DiskTotal {
		t.Errorf("disk %v %v", s.DiskFree, s.DiskTotal)
	}
	s = ReadSensors(dir, filepath.Join(dir, "absent"))
	if s.DiskFree != nil || len(s.Notes) != 1 {
		t.Errorf("absent disk path: %+v", s)
	}
}

// TestThermalFromFixture drives the governor with a temperature file, as the
// sampler does: above 80 °C it turns hot, it stays hot down to 75 °C and turns
// cool at 75 °C.
func TestThermalFromFixture(t *testing.T) {
	root := t.TempDir()
	zone := filepath.Join(root, "sys/class/thermal/thermal_zone0")
	if err := os.MkdirAll(zone, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	th := NewThermal(0, 0, slog.New(slog.NewTextHandler(&logs, nil)))
	steps := []struct {
		milli string
		hot   bool
	}{
		{"60000", false}, {"80000", false}, {"80001", true}, {"85500", true},
		{"78000", true}, {"75001", true}, {"75000", false}, {"79999", false}, {"90000", true},
	}
	for _, st := range steps {
		if err := os.WriteFile(filepath.Join(zone, "temp"), []byte(st.milli+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s := ReadSensors(root, "")
		if s.TempC == nil {
			t.Fatalf("no temperature read: %q", s.Notes)
		}
		if got := th.Update(*s.TempC); got != st.hot || th.Hot() != st.hot {
			t.Errorf("at %s m°C: hot=%v, want %v", st.milli, got, st.hot)
		}
	}
	state := th.State()
	if state.Transitions != 3 || state.LimitC != 80 || state.ResumeC != 75 || state.LastC == nil || *state.LastC != 90 {
		t.Errorf("state %+v", state)
	}
	if n := strings.Count(logs.String(), "too hot"); n != 2 {
		t.Errorf("want 2 hot log lines, got %d:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "cooled down") {
		t.Errorf("no resume log line:\n%s", logs.String())
	}
	if th.Level(11, 4) != 4 {
		t.Error("Level when hot")
	}
}

func TestThermalCustomLimits(t *testing.T) {
	th := NewThermal(70, 10, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	if th.Update(70.5) != true || th.Update(61) != true || th.Update(60) != false {
		t.Error("custom limit/hysteresis")
	}
	if st := th.State(); st.LimitC != 70 || st.ResumeC != 60 {
		t.Errorf("%+v", st)
	}
}

// TestReadSensorsKernelFans reads a Raspberry Pi 5 tree: the fan header is the
// "pwm-fan" cooling device (levels 0-4) with a tachometer on hwmon "pwmfan";
// the CPU frequency cooling device is not a fan.
func TestReadSensorsKernelFans(t *testing.T) {
	s := ReadSensorsFS(fstest.MapFS{
		"sys/class/thermal/cooling_device0/type":      {Data: []byte("pwm-fan\n")},
		"sys/class/thermal/cooling_device0/cur_state": {Data: []byte("2\n")},
		"sys/class/thermal/cooling_device0/max_state": {Data: []byte("4\n")},
		"sys/class/thermal/cooling_device1/type":      {Data: []byte("cpufreq-cpu0\n")},
		"sys/class/thermal/cooling_device1/cur_state": {Data: []byte("0\n")},
		"sys/class/thermal/cooling_device1/max_state": {Data: []byte("3\n")},
		"sys/class/hwmon/hwmon0/name":                 {Data: []byte("cpu_thermal\n")},
		"sys/class/hwmon/hwmon2/name":                 {Data: []byte("pwmfan\n")},
		"sys/class/hwmon/hwmon2/fan1_input":           {Data: []byte("3012\n")},
	})
	if len(s.Fans) != 1 {
		t.Fatalf("fans %+v", s.Fans)
	}
	f := s.Fans[0]
	if f.Device != "cooling_device0" || f.Type != "pwm-fan" || f.Level != 2 || f.MaxLevel != 4 || f.RPM == nil || *f.RPM != 3012 {
		t.Errorf("fan %+v", f)
	}
	s = ReadSensorsFS(fstest.MapFS{
		"sys/class/thermal/cooling_device0/type":      {Data: []byte("gpio-fan\n")},
		"sys/class/thermal/cooling_device0/cur_state": {Data: []byte("on\n")},
		"sys/class/thermal/cooling_device0/max_state": {Data: []byte("1\n")},
	})
	if len(s.Fans) != 0 || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "cur_state") {
		t.Errorf("malformed level: fans %+v notes %q", s.Fans, s.Notes)
	}
}
