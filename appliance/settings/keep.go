package settings

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
)

// Build names the settings.txt an image build put into its boot partition
// (the image builder writes it as JSON to /etc/arka/settings-build.json).
type Build struct {
	SHA256 string `json:"sha256"` // of the built settings.txt
	Given  bool   `json:"given"`  // given at build time (flags or --settings), not the commented-out defaults
	// Keys are the settings given one by one (flags, no --settings file):
	// after an update they replace those of the device's own file and the
	// device keeps the rest (see Choose). Empty with Given: a whole file
	// (--settings), which replaces the device's. The names are the Key
	// constants.
	Keys []string `json:"keys,omitempty"`
}

// The settings a build may give one by one (Build.Keys), named as in the
// file.
const (
	KeyHostname     = "hostname"      // --hostname
	KeyTimezone     = "timezone"      // --timezone
	KeyDNS          = "dns"           // --dns
	KeyWiFiCountry  = "wifi.country"  // --wifi-country
	KeyWiFiNetworks = "wifi.networks" // --wifi-ssid: networks added before the device's
	KeyIPv4         = "ipv4"          // --ipv4 (with --ipv4-gateway): the whole [ipv4] table
	KeyIPv6         = "ipv6"          // --ipv6 (with --ipv6-gateway): the whole [ipv6] table
)

// NewBuild describes a built settings file: given says it was given at
// build time; keys are the settings given one by one (nil for a whole
// file, or with given false).
func NewBuild(file []byte, given bool, keys []string) Build {
	if !given {
		keys = nil
	}
	return Build{SHA256: fmt.Sprintf("%x", sha256.Sum256(file)), Given: given, Keys: keys}
}

// Choose decides which settings file the device uses at boot. boot is the
// boot partition's settings.txt (nil if missing), build names the file
// the running build put there, kept is the file the device used at its
// last boot (nil if none, kept on /perm).
//
// An over-the-air update rewrites the whole boot partition, so after one
// the boot partition holds the new build's file. Then, if the device had
// its own file:
//   - the build gave no settings (its defaults): the device's own file is
//     used, as it was;
//   - the build gave settings one by one (Build.Keys, from flags such as
//     `update --hostname`): the device's own settings with those replaced
//     by the build's (Merge), written as a new file by Marshal: the kept
//     file's comments, and settings it had mistakes in (they had their
//     defaults), are not carried over;
//   - the build gave a whole file (--settings): the boot partition's.
//
// write says use is not the boot partition's file and should be written
// back to it (so the next boot, and a person looking at the card, find
// it). In every other case the boot partition's file is used as it is: a
// person edited the card (its hash is not the build's), or there is
// nothing to keep. A kept file that does not decode is not merged.
func Choose(boot []byte, build Build, kept []byte) (use []byte, write bool) {
	edited := boot != nil && fmt.Sprintf("%x", sha256.Sum256(boot)) != build.SHA256
	if kept == nil || edited || bytes.Equal(boot, kept) || build.Given && len(build.Keys) == 0 {
		return boot, false
	}
	if !build.Given || boot == nil {
		return kept, true
	}
	own, _, ok := parse(FileName, kept)
	if !ok {
		return boot, false
	}
	given, _, ok := parse(FileName, boot)
	if !ok {
		return boot, false
	}
	m := Marshal(Merge(own, given, build.Keys))
	if bytes.Equal(m, boot) {
		return boot, false
	}
	return m, true
}

// Merge returns own with the settings named by keys (Key constants;
// others are ignored) taken from given. Wi-Fi networks are added: the
// given ones first (highest priority), then own's, less those with a
// given SSID. Name servers are dropped when the result has no static
// address (they are used only with one).
func Merge(own, given Settings, keys []string) Settings {
	m := own
	m.DNS = slices.Clone(own.DNS)
	m.WiFi.Networks = slices.Clone(own.WiFi.Networks)
	for _, k := range keys {
		switch k {
		case KeyHostname:
			m.Hostname = given.Hostname
		case KeyTimezone:
			m.Timezone = given.Timezone
		case KeyDNS:
			m.DNS = slices.Clone(given.DNS)
		case KeyWiFiCountry:
			m.WiFi.Country = given.WiFi.Country
		case KeyWiFiNetworks:
			nets := slices.Clone(given.WiFi.Networks)
			for _, n := range own.WiFi.Networks {
				if !slices.ContainsFunc(given.WiFi.Networks, func(g Network) bool { return g.SSID == n.SSID }) {
					nets = append(nets, n)
				}
			}
			m.WiFi.Networks = nets
		case KeyIPv4:
			m.IPv4 = given.IPv4
		case KeyIPv6:
			m.IPv6 = given.IPv6
		}
	}
	if !m.IPv4.Enabled() && !m.IPv6.Enabled() {
		m.DNS = nil
	}
	return m
}
