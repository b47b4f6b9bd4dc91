package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/arkaweb/arka/appliance/settings"
)

// The build flags write settings.txt; the passphrase comes from a file
// and mistakes in the flags are reported.
func TestSettingsFlags(t *testing.T) {
	pass := filepath.Join(t.TempDir(), "pass")
	os.WriteFile(pass, []byte("correct horse battery\n"), 0o600)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("short\n"), 0o600)
	f := settingsFlags{wifiCountry: "DE", wifiSSID: "Home", wifiPassFile: pass, ipv4: "192.168.1.20/24", ipv4gw: "192.168.1.1", dns: "192.168.1.1, 9.9.9.9"}
	b, given, keys, err := f.settings("garden", "Europe/Berlin", map[string]bool{"hostname": true, "timezone": true})
	if err != nil || !given {
		t.Fatalf("%v %v", given, err)
	}
	// Each flag names its setting: after an update the device changes
	// those and keeps the rest of its own (settings.Choose).
	if want := []string{settings.KeyHostname, settings.KeyTimezone, settings.KeyWiFiCountry, settings.KeyWiFiNetworks, settings.KeyDNS, settings.KeyIPv4}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	// --settings FILE is a whole file: no keys, it replaces the device's.
	file := filepath.Join(t.TempDir(), "settings.txt")
	os.WriteFile(file, []byte("timezone = \"UTC\"\n"), 0o600)
	if _, given, keys, err := (&settingsFlags{file: file, ipv6: "2001:db8::20/64"}).settings("garden", "UTC", map[string]bool{"hostname": true}); err != nil || !given || keys != nil {
		t.Errorf("--settings FILE --hostname --ipv6: given %v, keys %q, %v", given, keys, err)
	}
	s, errs := settings.Parse("settings.txt", b)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if s.Hostname != "garden" || s.Timezone != "Europe/Berlin" || len(s.WiFi.Networks) != 1 || s.WiFi.Networks[0].Passphrase != "correct horse battery" ||
		s.IPv4.Address.String() != "192.168.1.20/24" || s.IPv4.Gateway.String() != "192.168.1.1" || len(s.DNS) != 2 {
		t.Errorf("settings from flags: %+v\n%s", s, b)
	}
	// --ipv4 dhcp: back to DHCP, on a device that had a static address.
	if b, _, keys, err := (&settingsFlags{ipv4: "dhcp"}).settings("arka", "UTC", map[string]bool{}); err != nil || !reflect.DeepEqual(keys, []string{settings.KeyIPv4}) || strings.Contains("\n"+string(b), "\n[ipv4]") {
		t.Errorf("--ipv4 dhcp: keys %q, %v\n%s", keys, err, b)
	}
	// An open network only on purpose.
	b, _, _, err = (&settingsFlags{wifiCountry: "DE", wifiSSID: "Cafe", wifiOpen: true}).settings("arka", "UTC", map[string]bool{})
	if s, errs := settings.Parse("settings.txt", b); err != nil || len(errs) > 0 || len(s.WiFi.Networks) != 1 || !s.WiFi.Networks[0].Open {
		t.Errorf("--wifi-open: %+v %v %v", s, err, errs)
	}
	// Defaults: not "given", every setting commented out.
	b, given, keys, err = (&settingsFlags{}).settings("arka", "UTC", map[string]bool{})
	if err != nil || given || keys != nil {
		t.Fatalf("%v %v", given, err)
	}
	if s, errs := settings.Parse("settings.txt", b); len(errs) > 0 || s.Hostname != "" {
		t.Errorf("defaults: %+v %v", s, errs)
	}
	for _, c := range []struct {
		f    settingsFlags
		want string
	}{
		{settingsFlags{ipv4: "300.1.1.1/24"}, `ipv4 address "300.1.1.1/24"`},
		{settingsFlags{wifiSSID: "Home", wifiPassFile: pass}, "country is required"},
		{settingsFlags{wifiCountry: "DE", wifiSSID: "Home"}, "--wifi-passphrase-file"},
		{settingsFlags{wifiCountry: "DE", wifiSSID: "net", wifiPassFile: empty}, "--wifi-passphrase-file " + empty + ": the Wi-Fi passphrase is empty; WPA2 needs 8 to 63 characters (or 64 hex digits). For a network without a password, give --wifi-open instead"},
		{settingsFlags{wifiCountry: "DE", wifiSSID: "net", wifiPassFile: short}, "--wifi-passphrase-file " + short + ": the Wi-Fi passphrase has 5 characters"},
		{settingsFlags{wifiCountry: "DE", wifiSSID: "net", wifiPassFile: pass, wifiOpen: true}, "--wifi-open and --wifi-passphrase-file"},
		{settingsFlags{wifiCountry: "DE", wifiOpen: true}, "--wifi-open: give the network's name with --wifi-ssid"},
	} {
		_, _, _, err := c.f.settings("arka", "UTC", map[string]bool{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
}

// TestSettingsFlagsNamed: an explicit --timezone UTC is written; a flag's
// mistake names the flag, not a line of a generated file.
func TestSettingsFlagsNamed(t *testing.T) {
	b, given, _, err := (&settingsFlags{}).settings("arka", "UTC", map[string]bool{"timezone": true})
	if s, errs := settings.Parse("settings.txt", b); err != nil || !given || len(errs) > 0 || s.Timezone != "UTC" {
		t.Errorf("--timezone UTC: given %v, %+v %v %v", given, s, err, errs)
	}
	for _, c := range []struct {
		f    settingsFlags
		host string
		tz   string
		set  map[string]bool
		want string
	}{
		{settingsFlags{}, "Garden_Pi", "UTC", map[string]bool{"hostname": true}, `--hostname: hostname "Garden_Pi": use 1-63 lower-case`},
		{settingsFlags{}, "arka", "Mars/Olympus", map[string]bool{"timezone": true}, `--timezone: timezone "Mars/Olympus" is not a time zone name`},
		{settingsFlags{wifiCountry: "de"}, "arka", "UTC", nil, `--wifi-country: wifi country "de"`},
		{settingsFlags{wifiCountry: "DE", wifiSSID: strings.Repeat("x", 33), wifiOpen: true}, "arka", "UTC", nil, "--wifi-ssid: wifi network 1: ssid"},
		{settingsFlags{ipv4: "300.1.1.1/24"}, "arka", "UTC", nil, `--ipv4: ipv4 address "300.1.1.1/24"`},
		{settingsFlags{ipv4: "192.168.1.2/24", ipv4gw: "10.0.0.1"}, "arka", "UTC", nil, "--ipv4-gateway: ipv4 gateway 10.0.0.1 is not in"},
		{settingsFlags{dns: "9.9.9.9"}, "arka", "UTC", nil, "--dns: dns is used only with a static address"},
		{settingsFlags{ipv4: "192.168.1.2/24", dns: "one"}, "arka", "UTC", nil, `--dns: dns: "one" is not an IPv4 or IPv6 address`},
	} {
		_, _, _, err := c.f.settings(c.host, c.tz, c.set)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q…", c.f, err, c.want)
		}
	}
}

// TestSettingsCheck: "settings check FILE" reports a hand-edited file's
// mistakes as FILE:line:col and sums up a good one.
func TestSettingsCheck(t *testing.T) {
	f := filepath.Join(t.TempDir(), "settings.txt")
	os.WriteFile(f, []byte("hostname = \"garden\"\n[wifi]\ncountry = \"DE\"\n[[wifi.networks]]\nssid = \"Home\"\npassphrase = \"\"\n"), 0o644)
	var out strings.Builder
	err := cmdSettings([]string{"check", f}, &out)
	if err == nil || !strings.Contains(err.Error(), f+`:6:1: wifi network "Home": passphrase has 0 characters`) ||
		!strings.Contains(err.Error(), "the device would use this file, with those settings at their defaults") {
		t.Errorf("bad file: %v", err)
	}
	// A file that does not load at all is not used (QA M3): the device
	// keeps the last settings that loaded on it.
	os.WriteFile(f, []byte("hostname = garden\n"), 0o644)
	err = cmdSettings([]string{"check", f}, &out)
	if err == nil || !strings.Contains(err.Error(), f+":1:12: hostname: ") ||
		!strings.Contains(err.Error(), "the device would not use this file: it keeps the last settings that loaded on it") ||
		strings.Contains(err.Error(), "at their defaults)") {
		t.Errorf("file that does not load: %v", err)
	}
	os.WriteFile(f, []byte("hostname = \"garden\"\n[wifi]\ncountry = \"DE\"\n[[wifi.networks]]\nssid = \"Cafe\"\nopen = true\n"), 0o644)
	out.Reset()
	if err := cmdSettings([]string{"check", f}, &out); err != nil || !strings.Contains(out.String(), "no mistakes") || !strings.Contains(out.String(), `"Cafe" (open, no encryption)`) {
		t.Errorf("good file: %v\n%s", err, out.String())
	}
	if err := cmdSettings([]string{"check"}, &out); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("no file: %v", err)
	}
}
