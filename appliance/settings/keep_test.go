package settings

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"testing"
)

// keptFile is a Pi Zero 2 W's own settings.txt (Wi-Fi only, static IPv4,
// a person's comment), kept on /perm before an over-the-air update.
const keptFile = `# the garden Pi, set up by hand
hostname = "garden"
timezone = "Europe/Berlin"
dns = ["192.168.1.1"]

[wifi]
country = "DE"

[[wifi.networks]]
ssid = "Home"
passphrase = "correct horse battery"

[ipv4]
address = "192.168.1.20/24"
gateway = "192.168.1.1"
`

// buildRecord is settings-build.json as arka-init reads it, for file built
// with the given keys set by flag (nil: a whole file, --settings).
func buildRecord(t *testing.T, file []byte, keys []string) Build {
	t.Helper()
	j := fmt.Sprintf(`{"sha256":"%x","given":true`, sha256.Sum256(file))
	if keys != nil {
		k, _ := json.Marshal(keys)
		j += `,"keys":` + string(k)
	}
	var b Build
	if err := json.Unmarshal([]byte(j+"}"), &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// choose runs Choose and parses what it chose.
func choose(t *testing.T, boot []byte, b Build, kept []byte) (Settings, []byte, bool) {
	t.Helper()
	use, write := Choose(boot, b, kept)
	s, errs := Parse(FileName, use)
	if len(errs) > 0 {
		t.Fatalf("the chosen file has mistakes: %v\n%s", errs, use)
	}
	return s, use, write
}

// TestChooseMergesGivenSettings (QA: `update --hostname orchard` to a Pi
// Zero 2 W lost its Wi-Fi): an update built with settings given by flag
// changes those settings and keeps every other one the device had; a
// build from --settings FILE replaces the file; a card edited by hand
// wins; a build without settings restores the device's own.
func TestChooseMergesGivenSettings(t *testing.T) {
	kept := []byte(keptFile)
	own, errs := Parse(FileName, kept)
	if len(errs) > 0 {
		t.Fatal(errs)
	}

	// update --hostname orchard: only the hostname changes.
	boot := Marshal(Settings{Hostname: "orchard"})
	b := buildRecord(t, boot, []string{"hostname"})
	if nb := NewBuild(boot, true, []string{KeyHostname}); !reflect.DeepEqual(nb, b) {
		t.Fatalf("NewBuild = %+v, settings-build.json decodes to %+v", nb, b)
	}
	s, merged, write := choose(t, boot, b, kept)
	want := own
	want.Hostname = "orchard"
	if !reflect.DeepEqual(s, want) || !write {
		t.Fatalf("update --hostname: write %v, got\n%+v\nwant\n%+v\n%s", write, s, want, merged)
	}
	// The next boot finds the merged file written back: it is used as it
	// is. Had the write failed, the same merge is made again.
	if use, write := Choose(merged, b, merged); string(use) != string(merged) || write {
		t.Errorf("the boot after the merge: write %v, file\n%s", write, use)
	}
	if use, _ := Choose(boot, b, merged); string(use) != string(merged) {
		t.Errorf("merging again does not give the same file:\n%s", use)
	}

	// update --timezone UTC --wifi-country GB --wifi-ssid Cafe --wifi-open
	// --ipv4 dhcp: the new network comes first, the device's stays; no
	// static address, so the name servers (used only with one) go.
	given := Settings{Timezone: "UTC", WiFi: WiFi{Country: "GB", Networks: []Network{{SSID: "Cafe", Open: true}}}}
	boot = Marshal(given)
	s, merged, _ = choose(t, boot, buildRecord(t, boot, []string{"timezone", "wifi.country", "wifi.networks", "ipv4"}), kept)
	want = Settings{Hostname: "garden", Timezone: "UTC", WiFi: WiFi{Country: "GB", Networks: []Network{{SSID: "Cafe", Open: true}, own.WiFi.Networks[0]}}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("update with Wi-Fi and --ipv4 dhcp: got\n%+v\nwant\n%+v\n%s", s, want, merged)
	}
	// The device's network given again (a new passphrase) replaces it.
	given.WiFi.Networks = []Network{{SSID: "Home", Passphrase: "a new passphrase"}}
	boot = Marshal(given)
	s, _, _ = choose(t, boot, buildRecord(t, boot, []string{"wifi.country", "wifi.networks"}), kept)
	if n := s.WiFi.Networks; len(n) != 1 || n[0].Passphrase != "a new passphrase" || s.Timezone != "Europe/Berlin" || !s.IPv4.Enabled() {
		t.Errorf("the device's network given again: %+v", s)
	}

	// update --settings FILE: the build's file replaces the device's.
	boot = Marshal(Settings{Hostname: "orchard"})
	if use, write := Choose(boot, buildRecord(t, boot, nil), kept); string(use) != string(boot) || write {
		t.Errorf("--settings FILE: write %v, file\n%s", write, use)
	}
	// A card edited by hand after the update (its hash is not the
	// build's) wins.
	edited := []byte("hostname = \"orchard\"\n")
	if use, write := Choose(edited, buildRecord(t, boot, []string{"hostname"}), kept); string(use) != string(edited) || write {
		t.Errorf("edited by hand: write %v, file\n%s", write, use)
	}
	// A build without settings: the device's own file comes back as it
	// was, comments and all.
	def := Marshal(Settings{})
	if use, write := Choose(def, NewBuild(def, false, nil), kept); string(use) != keptFile || !write {
		t.Errorf("no settings given: write %v, file\n%s", write, use)
	}
	// Nothing kept (a new card): the build's file.
	boot = Marshal(Settings{Hostname: "orchard"})
	if use, write := Choose(boot, buildRecord(t, boot, []string{"hostname"}), nil); string(use) != string(boot) || write {
		t.Errorf("nothing kept: write %v, file\n%s", write, use)
	}
}

// The static address and name servers of a wired device stay when only
// the Wi-Fi is given, and a given IPv6 address leaves IPv4 alone.
func TestChooseMergeKeepsAddresses(t *testing.T) {
	kept := []byte(keptFile)
	given := Settings{IPv6: Static{Address: netip.MustParsePrefix("2001:db8::20/64")}}
	boot := Marshal(given)
	s, _, _ := choose(t, boot, buildRecord(t, boot, []string{"ipv6"}), kept)
	if s.IPv6 != given.IPv6 || !s.IPv4.Enabled() || len(s.DNS) != 1 || len(s.WiFi.Networks) != 1 || s.Hostname != "garden" {
		t.Errorf("update --ipv6: %+v", s)
	}
}
