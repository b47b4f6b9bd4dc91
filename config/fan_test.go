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
		{"on_too_hot", "fan = { pin = \"GPIO14\", on = 200 }\n", ":5:25: fan on = 200 °C: use 20..110"},
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
