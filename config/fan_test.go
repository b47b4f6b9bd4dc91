package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFan(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "www"), 0o755)
	const routes = "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n"
	load := func(name, global string) ([]*Site, string, error) {
		f := filepath.Join(root, name+".toml")
		os.WriteFile(f, []byte(routes+"[global]\n"+global), 0o644)
		sites, err := Load(f)
		return sites, f, err
	}

	sites, _, err := load("ok", "fan = { pin = \"GPIO14\", on = 70, off = 60 }\n")
	if err != nil {
		t.Fatal(err)
	}
	f := GlobalOf(sites).Fan
	if f == nil || f.Pin != "GPIO14" || f.On != 70 || f.Off != 60 {
		t.Fatalf("fan = %+v", f)
	}
	file, line, col := f.PinPosition()
	if !strings.HasSuffix(file, "ok.toml") || line != 5 || col != 9 {
		t.Errorf("pin position %s:%d:%d, want ok.toml:5:9", file, line, col)
	}
	if e := f.PinError("fan pin \"GPIO14\" does not exist").Error(); !strings.HasSuffix(e, "ok.toml:5:9: fan pin \"GPIO14\" does not exist") {
		t.Errorf("PinError = %q", e)
	}

	sites, _, err = load("defaults", "fan = { pin = \"P1_8\" }\n")
	if err != nil {
		t.Fatal(err)
	}
	if f := GlobalOf(sites).Fan; f.On != DefaultFanOn || f.Off != DefaultFanOn-DefaultFanHysteresis {
		t.Errorf("defaults: %+v", f)
	}
	if GlobalOf(sites).LED != nil {
		t.Error("led unset must stay nil (auto)")
	}
	sites, _, err = load("led", "led = false\n")
	if err != nil || GlobalOf(sites).LED == nil || *GlobalOf(sites).LED {
		t.Errorf("led = false: %v", err)
	}
	if GlobalOf(sites).Thermal.Limit != 0 {
		t.Error("fan changed the thermal limit")
	}

	for _, c := range []struct{ name, global, want string }{
		{"on_not_above_off", "fan = { pin = \"GPIO14\", on = 55, off = 55 }\n", ":5:34: fan off = 55 °C must be below on = 55 °C"},
		{"off_above_on", "[global.fan]\npin = \"GPIO14\"\non = 50\noff = 60\n", ":8:1: fan off = 60 °C must be below on = 50 °C"},
		{"only_off_above_default_on", "fan = { pin = \"GPIO14\", off = 70 }\n", ":5:25: fan off = 70 °C must be below on = 65 °C"},
		{"no_pin", "fan = { on = 60 }\n", ":5:1: fan: pin is missing"},
		{"empty_pin", "fan = { pin = \"\" }\n", ":5:9: fan: pin is missing"},
		{"pin_with_space", "fan = { pin = \"GPIO 14\" }\n", ":5:9: fan pin \"GPIO 14\": a pin name has no spaces"},
		{"on_too_hot", "fan = { pin = \"GPIO14\", on = 200 }\n", ":5:30: fan on = 200 °C: use 20..110"},
		{"unknown_key", "fan = { pin = \"GPIO14\", speed = 3 }\n", ":5:25: unknown key \"global.fan.speed\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, file, err := load(c.name, c.global)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), file+c.want) {
				t.Errorf("error %q\nwant %s%s", err, file, c.want)
			}
		})
	}
}

// TestFanBadNumbers: every temperature TOML can write that is not one Arka
// can use is a located mistake, each reported (not only the first): nan
// and inf (numbers to TOML, never temperatures), a written 0 (not "unset"),
// values of another TOML type named in TOML's words.
func TestFanBadNumbers(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "www"), 0o755)
	const routes = "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n[global]\n"
	for _, c := range []struct {
		name, global string
		want         []string // every error, in order, after the file name
	}{
		{"on_nan", `fan = { pin = "GPIO14", on = nan }`, []string{":5:30: fan on = nan: use 20..110 °C (the temperature at which the fan starts)"}},
		{"on_inf", `fan = { pin = "GPIO14", on = inf, off = 50 }`, []string{":5:30: fan on = inf: use 20..110 °C (the temperature at which the fan starts)"}},
		{"off_nan", `fan = { pin = "GPIO14", off = nan }`, []string{":5:31: fan off = nan: use a temperature above 0 and below on (65 °C), where the fan stops"}},
		{"off_minus_inf", `fan = { pin = "GPIO14", off = -inf }`, []string{":5:31: fan off = -inf: use a temperature above 0 and below on (65 °C), where the fan stops"}},
		{"on_zero", `fan = { pin = "GPIO14", on = 0 }`, []string{":5:30: fan on = 0 °C: use 20..110 °C (the temperature at which the fan starts)"}},
		{"off_zero", `fan = { pin = "GPIO14", off = 0 }`, []string{":5:31: fan off = 0 °C: use a temperature above 0 and below on (65 °C), where the fan stops"}},
		{"both_wrong", `fan = { pin = "GPIO14", on = 5, off = -3 }`, []string{
			":5:30: fan on = 5 °C: use 20..110 °C (the temperature at which the fan starts)",
			":5:39: fan off = -3 °C: use a temperature above 0 and below on, where the fan stops"}},
		{"thermal_nan", `thermal = { limit = nan, hysteresis = nan }`, []string{
			":5:21: thermal limit = nan: use 1..150 °C (above it Arka sheds work)",
			":5:39: thermal hysteresis = nan: use more than 0 and less than the limit; work resumes at limit - hysteresis"}},
		{"thermal_zero", `thermal = { limit = 0, hysteresis = 0 }`, []string{
			":5:21: thermal limit = 0 °C: use 1..150 °C (above it Arka sheds work)",
			":5:37: thermal hysteresis = 0 °C: use more than 0 and less than the limit; work resumes at limit - hysteresis"}},
		{"thermal_hysteresis_inf", `thermal = { limit = 70, hysteresis = -inf }`, []string{
			":5:38: thermal hysteresis = -inf: use more than 0 and less than the limit (70 °C); work resumes at limit - hysteresis"}},
		{"thermal_hysteresis_too_big", `thermal = { hysteresis = 85 }`, []string{
			":5:26: thermal hysteresis = 85 °C: use more than 0 and less than the limit (80 °C); work resumes at limit - hysteresis"}},
		{"date", `fan = { pin = "GPIO14", off = 1979-05-27 }`, []string{":5:31: global.fan.off: expected a number, got a date or time"}},
		{"array", `fan = [1, 2]`, []string{":5:7: global.fan: expected a table, got an array"}},
		{"string_for_table", `thermal = "hot"`, []string{":5:11: global.thermal: expected a table, got a string"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(root, c.name+".toml")
			os.WriteFile(f, []byte(routes+c.global+"\n"), 0o644)
			_, err := Load(f)
			var want []string
			for _, w := range c.want {
				want = append(want, f+w)
			}
			if err == nil || err.Error() != strings.Join(want, "\n") {
				t.Errorf("error:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
			}
		})
	}
}

// TestFanAboveThermalLimit: a fan that starts above the thermal limit is a
// warning of arka -t (Arka sheds work before the fan helps), not an error.
func TestFanAboveThermalLimit(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "www"), 0o755)
	const routes = "[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"www\" }\n[global]\n"
	for _, c := range []struct{ name, global, want string }{
		{"default_limit", `fan = { pin = "GPIO14", on = 85 }`, ":5:25: warning: fan on = 85 °C is above the thermal limit (80 °C): Arka sheds work before the fan starts; set on below the limit"},
		{"own_limit", "thermal = { limit = 60 }\nfan = { pin = \"GPIO14\", on = 65 }", ":6:25: warning: fan on = 65 °C is above the thermal limit (60 °C): Arka sheds work before the fan starts; set on below the limit"},
		{"default_on", "thermal = { limit = 60 }\nfan = { pin = \"GPIO14\" }", ":6:1: warning: fan on = 65 °C is above the thermal limit (60 °C): Arka sheds work before the fan starts; set on below the limit"},
		{"below", `fan = { pin = "GPIO14", on = 70 }`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(root, c.name+".toml")
			os.WriteFile(f, []byte(routes+c.global+"\n"), 0o644)
			sites, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(Warnings(sites), "\n")
			if want := f + c.want; c.want == "" && got != "" || c.want != "" && got != want {
				t.Errorf("warnings:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
