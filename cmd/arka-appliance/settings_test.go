package main

import (
	"os"
	"path/filepath"
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
	b, given, err := f.settings("garden", "Europe/Berlin", map[string]bool{"hostname": true, "timezone": true})
	if err != nil || !given {
		t.Fatalf("%v %v", given, err)
	}
	s, errs := settings.Parse("settings.txt", b)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if s.Hostname != "garden" || s.Timezone != "Europe/Berlin" || len(s.WiFi.Networks) != 1 || s.WiFi.Networks[0].Passphrase != "correct horse battery" ||
		s.IPv4.Address.String() != "192.168.1.20/24" || s.IPv4.Gateway.String() != "192.168.1.1" || len(s.DNS) != 2 {
		t.Errorf("settings from flags: %+v\n%s", s, b)
	}
	// An open network only on purpose.
	b, _, err = (&settingsFlags{wifiCountry: "DE", wifiSSID: "Cafe", wifiOpen: true}).settings("arka", "UTC", map[string]bool{})
	if s, errs := settings.Parse("settings.txt", b); err != nil || len(errs) > 0 || len(s.WiFi.Networks) != 1 || !s.WiFi.Networks[0].Open {
		t.Errorf("--wifi-open: %+v %v %v", s, err, errs)
	}
	// Defaults: not "given", every setting commented out.
	b, given, err = (&settingsFlags{}).settings("arka", "UTC", map[string]bool{})
	if err != nil || given {
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
		_, _, err := c.f.settings("arka", "UTC", map[string]bool{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
}
