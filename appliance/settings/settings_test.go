package settings

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	src := "\ufeff" + `hostname = "garden-pi"
timezone = "Europe/Berlin"
dns = ["192.168.1.1", "2001:db8::53"]

[wifi]
country = "DE"

[[wifi.networks]]
ssid = "Home \"5G\""
passphrase = "correct horse battery"

[[wifi.networks]]
ssid = "Café"
open = true
hidden = true

[ipv4]
address = "192.168.1.20/24"
gateway = "192.168.1.1"

[ipv6]
address = "auto"
`
	s, errs := Parse("settings.txt", []byte(strings.ReplaceAll(src, "\n", "\r\n")))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := Settings{
		Hostname: "garden-pi", Timezone: "Europe/Berlin",
		DNS: []netip.Addr{netip.MustParseAddr("192.168.1.1"), netip.MustParseAddr("2001:db8::53")},
		WiFi: WiFi{Country: "DE", Networks: []Network{
			{SSID: `Home "5G"`, Passphrase: "correct horse battery"},
			{SSID: "Café", Open: true, Hidden: true},
		}},
		IPv4: Static{Address: netip.MustParsePrefix("192.168.1.20/24"), Gateway: netip.MustParseAddr("192.168.1.1")},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
}

func TestParseEmptyIsDefaults(t *testing.T) {
	s, errs := Parse("settings.txt", []byte("# nothing set\n"))
	if len(errs) > 0 || !reflect.DeepEqual(s, Settings{}) {
		t.Errorf("%+v %v", s, errs)
	}
}

// Each mistake is reported at its key, and only that setting falls back
// to its default: the rest still applies.
func TestParseMistakes(t *testing.T) {
	src := `hostname = "Garden_Pi"
timezone = "Europe/Berlinn"
colour = "blue"

[wifi]
country = "DE"

[[wifi.networks]]
ssid = "Home"
passphrase = "short"

[[wifi.networks]]
ssid = "Office"
passphrase = "long enough passphrase"

[ipv4]
address = "192.168.1.300/24"

[ipv6]
address = "2001:db8::20/64"
gateway = "2001:db9::1"
`
	s, errs := Parse("/boot/settings.txt", []byte(src))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{ // in line order (QA L5)
		`/boot/settings.txt:1:1: hostname "Garden_Pi": use 1-63 lower-case letters, digits and hyphens, not starting or ending with a hyphen (it is also the name on the LAN, Garden_Pi.local)`,
		`/boot/settings.txt:2:1: timezone "Europe/Berlinn" is not a time zone name (for example "Europe/Berlin", "America/New_York", "UTC")`,
		`/boot/settings.txt:3:1: unknown key "colour"`,
		`/boot/settings.txt:10:1: wifi network "Home": passphrase has 5 characters; WPA2 needs 8 to 63 (or 64 hex digits)`,
		`/boot/settings.txt:17:1: ipv4 address "192.168.1.300/24": want an IPv4 address with its prefix length, for example "192.168.1.20/24"`,
		`/boot/settings.txt:21:1: ipv6 gateway 2001:db9::1 is not in the device's network 2001:db8::/64`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	want2 := Settings{WiFi: WiFi{Country: "DE", Networks: []Network{{SSID: "Office", Passphrase: "long enough passphrase"}}}}
	if !reflect.DeepEqual(s, want2) {
		t.Errorf("kept %+v, want %+v", s, want2)
	}
}

func TestParseSyntaxError(t *testing.T) {
	s, errs := Parse("settings.txt", []byte("hostname = \"a\"\ntimezone = UTC\n"))
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "settings.txt:2:") || !reflect.DeepEqual(s, Settings{}) {
		t.Errorf("%+v %v", s, errs)
	}
}

func TestParseOther(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"[[wifi.networks]]\nssid = \"x\"\nopen = true\n", "settings.txt:1:3: wifi: country is required with networks"},
		{"[wifi]\ncountry=\"DE\"\n[[wifi.networks]]\nssid = \"a\"\n", `settings.txt:3:3: wifi network "a": passphrase is missing (WPA2 needs 8 to 63 characters, or 64 hex digits); for a network without a password write open = true`},
		{"[wifi]\ncountry=\"DE\"\n[[wifi.networks]]\nssid = \"a\"\npassphrase = \"\"\n", `settings.txt:5:1: wifi network "a": passphrase has 0 characters; WPA2 needs 8 to 63 (or 64 hex digits)`},
		{"[wifi]\ncountry=\"DE\"\n[[wifi.networks]]\nssid = \"a\"\npassphrase = \"long enough\"\nopen = true\n", `wifi network "a": open = true and a passphrase: remove one of them`},
		{"[wifi]\ncountry = \"de\"\n", `settings.txt:2:1: wifi country "de"`},
		// Checked against the ISO 3166-1 codes (QA L5): two capitals that
		// name no country are a mistake; an old name gets the code.
		{"[wifi]\ncountry = \"XX\"\n", `settings.txt:2:1: wifi country "XX" is no ISO 3166-1 country code`},
		{"[wifi]\ncountry = \"ZZ\"\n", `settings.txt:2:1: wifi country "ZZ" is no ISO 3166-1 country code`},
		{"[wifi]\ncountry = \"EU\"\n", `settings.txt:2:1: wifi country "EU" is no ISO 3166-1 country code`},
		{"[wifi]\ncountry = \"UK\"\n", `settings.txt:2:1: wifi country "UK" is no ISO 3166-1 country code (did you mean "GB"?)`},
		{"[wifi]\ncountry = \"gb\"\n", `(did you mean "GB"?)`},
		{"hostnme = \"garden\"\n", `settings.txt:1:1: unknown key "hostnme" (did you mean "hostname"?)`},
		{"[wifi]\ncountri = \"DE\"\n", `settings.txt:2:1: unknown key "wifi.countri" (did you mean "country"?)`},
		{"[[wifi.networks]]\nssid = \"\"\n[wifi]\ncountry=\"DE\"", "wifi network 1: ssid is missing"},
		{"[wifi]\ncountry=\"DE\"\n[[wifi.networks]]\nssid = \"123456789012345678901234567890123\"\n", "an SSID has at most 32"},
		{"[wifi]\ncountry=\"DE\"\n[[wifi.networks]]\nssid = \"a\"\nopen = true\n[[wifi.networks]]\nssid = \"a\"\n", `settings.txt:7:1: wifi network 2: ssid "a" is listed twice`},
		{"[wifi]\ncountry=\"DE\"\n[[wifi.networks]]\nssid = \"a\"\npassphrase = \"ümlautümlaut\"\n", "WPA allows only printable ASCII"},
		{"dns = [\"1.1.1.1\"]\n", "dns is used only with a static address"},
		{"dns = [\"one\"]\n", `dns: "one" is not an IPv4 or IPv6 address`},
		{"[ipv4]\ngateway = \"192.168.1.1\"\n", "ipv4 gateway without a static address"},
		{"[ipv4]\naddress = \"192.168.1.0/24\"\n", "the network's own address"},
		{"[ipv4]\naddress = \"2001:db8::1/64\"\n", "want an IPv4 address"},
		{"[ipv6]\naddress = \"192.168.1.2/24\"\n", "want an IPv6 address"},
		{"timezone = \"/etc/passwd\"\n", "is not a time zone name"},
	} {
		_, errs := Parse("settings.txt", []byte(c.src))
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%q: %v, want one error with %q", c.src, errs, c.want)
		}
	}
}

// What build and flash write is parsed back unchanged, and the commented
// defaults parse to defaults.
func TestMarshalRoundTrip(t *testing.T) {
	for _, s := range []Settings{
		{},
		{Hostname: "kitchen", Timezone: "America/New_York"},
		{
			Hostname: "x1", DNS: []netip.Addr{netip.MustParseAddr("9.9.9.9")},
			WiFi: WiFi{Country: "GB", Networks: []Network{{SSID: `we"ird\ name`, Passphrase: `pa"ss\word!`}, {SSID: "open", Open: true, Hidden: true}, {SSID: "psk", Passphrase: strings.Repeat("ab", 32)}}},
			IPv4: Static{Address: netip.MustParsePrefix("10.0.0.5/8")},
			IPv6: Static{Address: netip.MustParsePrefix("2001:db8::5/64"), Gateway: netip.MustParseAddr("fe80::1")},
		},
	} {
		b := Marshal(s)
		got, errs := Parse("settings.txt", b)
		if len(errs) > 0 || !reflect.DeepEqual(got, s) {
			t.Errorf("round trip of %+v: %+v %v\n%s", s, got, errs, b)
		}
	}
}

func TestSupplicantConf(t *testing.T) {
	if SupplicantConf(WiFi{Country: "DE"}, "/run/wpa") != nil {
		t.Error("a configuration without networks")
	}
	got := string(SupplicantConf(WiFi{Country: "DE", Networks: []Network{
		{SSID: "Home", Passphrase: `pa"ss word`}, {SSID: "Guest", Open: true, Hidden: true},
	}}, "/run/wpa_supplicant"))
	for _, want := range []string{
		"ctrl_interface=/run/wpa_supplicant\n", "country=DE\n",
		"network={\n\tssid=486f6d65\n\tpriority=2\n\tkey_mgmt=WPA-PSK WPA-PSK-SHA256 SAE\n\tieee80211w=1\n\tpsk=\"pa\"ss word\"\n\tsae_password=\"pa\"ss word\"\n}\n",
		"network={\n\tssid=4775657374\n\tscan_ssid=1\n\tpriority=1\n\tkey_mgmt=NONE\n}\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

func TestChoose(t *testing.T) {
	def := Marshal(Settings{})
	mine := Marshal(Settings{Hostname: "kitchen"})
	edited := Marshal(Settings{Hostname: "garden"})
	for _, c := range []struct {
		name        string
		boot        []byte
		build       Build
		kept        []byte
		want        []byte
		wantRestore bool
	}{
		{"first boot of a fresh card", mine, NewBuild(mine, true, nil), nil, mine, false},
		{"normal boot", mine, NewBuild(mine, true, nil), mine, mine, false},
		{"card edited on a computer", edited, NewBuild(mine, true, nil), mine, edited, false},
		{"update with the build's defaults", def, NewBuild(def, false, nil), mine, mine, true},
		{"update that gives settings on purpose", edited, NewBuild(edited, true, nil), mine, edited, false},
		{"file deleted after an update without settings", nil, NewBuild(def, false, nil), mine, mine, true},
		{"defaults edited after an update", edited, NewBuild(def, false, nil), mine, edited, false},
		{"defaults, nothing kept", def, NewBuild(def, false, nil), nil, def, false},
	} {
		got, restore := Choose(c.boot, c.build, c.kept)
		if string(got) != string(c.want) || restore != c.wantRestore {
			t.Errorf("%s: restore=%v, got %q", c.name, restore, got)
		}
	}
}

// A settings file that does not decode at all (a syntax slip loses every
// setting, the Wi-Fi networks too) falls back to the kept copy of the last
// file that decoded, with the file's mistake still reported; a file that
// decodes is used even with mistakes (those settings keep their
// defaults), and is the one to keep.
func TestParseOrKept(t *testing.T) {
	kept := []byte("hostname = \"garden\"\n[wifi]\ncountry = \"DE\"\n[[wifi.networks]]\nssid = \"home\"\npassphrase = \"old enough passphrase\"\n")
	broken := []byte("hostname = \"garden2\"\n[wifi]\ncountry = \"DE\"\n[[wifi.networks]]\nssid = \"home\"\npassphrase = correcthorsebatterystaple\n")
	s, errs, from := ParseOrKept("settings.txt", broken, kept)
	if from != FromKept || s.Hostname != "garden" || len(s.WiFi.Networks) != 1 || s.WiFi.Networks[0].Passphrase != "old enough passphrase" {
		t.Errorf("broken file with a kept copy: %v %+v", from, s)
	}
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "settings.txt:6:") || strings.Contains(errs[0].Error(), "correcthorse") {
		t.Errorf("errors %v", errs)
	}
	if s, _, from := ParseOrKept("settings.txt", broken, nil); from != FromDefaults || !reflect.DeepEqual(s, Settings{}) {
		t.Errorf("broken file without a kept copy: %v %+v", from, s)
	}
	if _, _, from := ParseOrKept("settings.txt", broken, []byte("[[[")); from != FromDefaults {
		t.Errorf("broken file with a broken kept copy: %v", from)
	}
	mistake := []byte("hostname = \"Bad_Name\"\n[wifi]\ncountry = \"DE\"\n[[wifi.networks]]\nssid = \"new\"\npassphrase = \"new long passphrase\"\n")
	s, errs, from = ParseOrKept("settings.txt", mistake, kept)
	if from != FromFile || len(errs) != 1 || s.Hostname != "" || s.WiFi.Networks[0].SSID != "new" {
		t.Errorf("file with a mistake: %v %+v %v", from, s, errs)
	}
}

// Keys match exactly (QA M1): a key that differs from a known one only in
// case is another key to TOML, so it is an unknown key, with the known
// one as a hint, in every table; it does not replace the setting.
func TestKeysMatchExactly(t *testing.T) {
	src := `hostname = "garden"
Hostname = "orchard"
[WiFi]
country = "DE"
[wifi]
Country = "GB"
[[wifi.networks]]
SSID = "Home"
ssid = "Home"
open = true
[IPv4]
address = "192.168.1.20/24"
`
	_, errs := Parse("settings.txt", []byte(src))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`settings.txt:2:1: unknown key "Hostname" (did you mean "hostname"?)`,
		`settings.txt:3:2: unknown key "WiFi" (did you mean "wifi"?)`,
		`settings.txt:6:1: unknown key "wifi.Country" (did you mean "country"?)`,
		`settings.txt:8:1: unknown key "wifi.networks.SSID" (did you mean "ssid"?)`,
		`settings.txt:11:2: unknown key "IPv4" (did you mean "ipv4"?)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A syntax error is located where a person finds it (QA L1): a key given
// twice at that key (the library's column is past the line before), an
// array not closed at its '['.
func TestSyntaxErrorColumns(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"hostname = \"a\"\nhostname = \"b\"\n", "settings.txt:2:1: hostname: given twice (first at 1:1)"},
		{"hostname = \"a\"\ndns = [\"1.1.1.1\"\n[wifi]\n", "settings.txt:2:7: dns: array not closed: ']' is missing before 3:1"},
	} {
		_, errs := Parse("settings.txt", []byte(c.src))
		if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), c.want) {
			t.Errorf("%q: %v, want one error starting %q", c.src, errs, c.want)
		}
	}
}

// A bare word for a key whose value is true or false asks for true or
// false, not for quotes (QA L3).
func TestSyntaxErrorBoolean(t *testing.T) {
	_, errs := Parse("settings.txt", []byte("[wifi]\ncountry = \"DE\"\n[[wifi.networks]]\nssid = \"x\"\nopen = yes\n"))
	want := `settings.txt:5:8: wifi.networks.open: expected true or false, found "yes"`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("%v, want %s", errs, want)
	}
}
