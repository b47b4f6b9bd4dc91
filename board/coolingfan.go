package board

import (
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// KernelFan is a fan the kernel's thermal framework drives itself: the
// Raspberry Pi 5's fan header (cooling device type "pwm-fan"), or a fan under
// the gpio-fan device-tree overlay ("gpio-fan"). Arka only reports it.
type KernelFan struct {
	Device   string `json:"device"`        // cooling device directory name, "cooling_device0"
	Type     string `json:"type"`          // "pwm-fan" or "gpio-fan"
	Level    int    `json:"level"`         // cur_state: 0 is off
	MaxLevel int    `json:"max_level"`     // max_state
	RPM      *int   `json:"rpm,omitempty"` // fan1_input of the matching hwmon device ("pwmfan"), when it has a tachometer
}

// kernelFanTypes are the cooling device types that are fans.
var kernelFanTypes = map[string]string{"pwm-fan": "pwmfan", "gpio-fan": "gpiofan"} // type -> hwmon name

// readKernelFans reads ROOT/sys/class/thermal/cooling_device*/{type,cur_state,max_state}
// and the fan1_input of the hwmon device named after the type. Malformed
// files are noted and the fan left out.
func readKernelFans(fsys fs.FS, note func(string, ...any)) []KernelFan {
	devs, _ := fs.Glob(fsys, "sys/class/thermal/cooling_device*")
	sort.Strings(devs)
	rpms := map[string]int{} // hwmon name -> rpm
	hw, _ := fs.Glob(fsys, "sys/class/hwmon/hwmon*/fan1_input")
	for _, f := range hw {
		name, err1 := fs.ReadFile(fsys, path.Join(path.Dir(f), "name"))
		raw, err2 := fs.ReadFile(fsys, f)
		if err1 != nil || err2 != nil {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && n >= 0 {
			rpms[strings.TrimSpace(string(name))] = n
		}
	}
	var out []KernelFan
	for _, d := range devs {
		typ, err := fs.ReadFile(fsys, path.Join(d, "type"))
		if err != nil {
			continue
		}
		t := strings.TrimSpace(string(typ))
		hwName, ok := kernelFanTypes[t]
		if !ok {
			continue
		}
		kf := KernelFan{Device: path.Base(d), Type: t}
		bad := false
		for file, dst := range map[string]*int{"cur_state": &kf.Level, "max_state": &kf.MaxLevel} {
			raw, err := fs.ReadFile(fsys, path.Join(d, file))
			v, perr := strconv.Atoi(strings.TrimSpace(string(raw)))
			if err != nil || perr != nil || v < 0 {
				note("%s/%s: %q is not a fan level", d, file, strings.TrimSpace(string(raw)))
				bad = true
				continue
			}
			*dst = v
		}
		if bad {
			continue
		}
		if rpm, ok := rpms[hwName]; ok {
			kf.RPM = &rpm
		}
		out = append(out, kf)
	}
	return out
}
