// Package settings is the appliance's settings file: a small TOML file
// named settings.txt on the boot partition (FAT, so any computer can edit
// it; .txt so that it opens in a text editor on Windows and macOS). It
// holds what a person sets before the first boot: the hostname, Wi-Fi
// networks, static IPv4/IPv6 addresses instead of DHCP, the time zone.
// `arka-appliance build` and `flash` write it from their flags;
// arka-init reads it at every boot.
//
// Parse is pure: a mistake is reported as config.Error ("file:line:col:
// message") and the setting it concerns keeps its default, while the valid
// settings still apply (a misspelt time zone must not take the Wi-Fi
// away). A syntax error leaves every setting at its default.
package settings

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time zone names are checked the same way on every machine

	"golang.org/x/text/language"

	"github.com/arkaweb/arka/config"
)

// FileName is the settings file's name in the root of the boot partition.
const FileName = "settings.txt"

// Settings is the decoded file. Zero values mean "the image's default":
// the hostname and time zone baked into the image, DHCP on IPv4, router
// advertisements (SLAAC) on IPv6, no Wi-Fi.
type Settings struct {
	Hostname string       `toml:"hostname"` // RFC 1123 label, also the mDNS name <hostname>.local
	Timezone string       `toml:"timezone"` // IANA name, e.g. "Europe/Berlin"
	DNS      []netip.Addr `toml:"-"`        // name servers for static addresses
	WiFi     WiFi         `toml:"-"`
	IPv4     Static       `toml:"-"`
	IPv6     Static       `toml:"-"`
}

// WiFi is the [wifi] table.
type WiFi struct {
	Country  string    // ISO 3166-1 alpha-2 regulatory domain, e.g. "DE"
	Networks []Network // tried in this order (first has the highest priority)
}

// Network is one [[wifi.networks]] entry: either a Passphrase or Open
// (a network without encryption, only when the file says open = true: a
// missing or empty passphrase is a mistake, never an open network).
type Network struct {
	SSID       string
	Passphrase string // WPA2-PSK / WPA3-SAE passphrase: 8-63 printable ASCII characters, or the 64-hex-digit PSK
	Open       bool   // no encryption (open = true)
	Hidden     bool   // the access point does not broadcast its SSID
}

// Static is an [ipv4] or [ipv6] table. A zero Address means DHCP (IPv4)
// or router advertisements (IPv6).
type Static struct {
	Address netip.Prefix // the device's address with its prefix length
	Gateway netip.Addr   // default route; may be zero
}

// Enabled reports whether a static address is configured.
func (s Static) Enabled() bool { return s.Address.IsValid() }

// raw is what the file decodes into before validation.
type raw struct {
	Hostname string   `toml:"hostname"`
	Timezone string   `toml:"timezone"`
	DNS      []string `toml:"dns"`
	WiFi     struct {
		Country  string `toml:"country"`
		Networks []struct {
			SSID       string  `toml:"ssid"`
			Passphrase *string `toml:"passphrase"`
			Open       bool    `toml:"open"`
			Hidden     bool    `toml:"hidden"`
		} `toml:"networks"`
	} `toml:"wifi"`
	IPv4 rawStatic `toml:"ipv4"`
	IPv6 rawStatic `toml:"ipv6"`
}

type rawStatic struct {
	Address string `toml:"address"`
	Gateway string `toml:"gateway"`
}

var (
	hostnameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	countryRE  = regexp.MustCompile(`^[A-Z]{2}$`)
)

// Parse decodes and checks a settings file. name is used in messages. It
// returns the valid settings and every mistake; a setting with a mistake
// is left at its default. A file that does not decode at all (a TOML
// syntax or type mistake) gives no settings: see ParseOrKept.
func Parse(name string, data []byte) (Settings, config.Errors) {
	s, errs, _ := parse(name, data)
	return s, errs
}

// Source says where ParseOrKept's settings come from.
type Source int

const (
	FromFile     Source = iota // the file: its valid settings (its mistakes keep their defaults)
	FromKept                   // the file does not decode; the kept copy's settings
	FromDefaults               // neither decodes: the defaults
)

// ParseOrKept is Parse with a fallback: when data does not decode at all
// (one syntax slip would otherwise lose every setting, Wi-Fi too: a Pi
// Zero 2 W that never joins its network, so nobody sees why), the
// settings of kept (the last file that decoded, kept on /perm; nil if
// none) are used instead, and errs still says what is wrong with data.
// Only a file the device used (FromFile) is one to keep.
func ParseOrKept(name string, data, kept []byte) (s Settings, errs config.Errors, from Source) {
	s, errs, ok := parse(name, data)
	if ok {
		return s, errs, FromFile
	}
	if kept != nil {
		if ks, _, ok := parse(name, kept); ok {
			return ks, errs, FromKept
		}
	}
	return s, errs, FromDefaults
}

// parse is Parse, and whether data decoded.
func parse(name string, data []byte) (Settings, config.Errors, bool) {
	var s Settings
	data = trimBOM(data) // Windows' Notepad may write one
	var r raw
	md, err := config.DecodeTOML(name, data, &r) // bounded: QA A9
	if err != nil {
		return s, config.Errors{config.TOMLDecodeError(name, data, err, &r)}, false
	}
	f := config.NewTOMLFile(name, data)
	errs := f.Unknown(md, &r)
	bad := func(path, format string, a ...any) {
		errs = append(errs, f.Errorf(path, fmt.Sprintf(format, a...)))
	}

	if h := r.Hostname; h != "" {
		switch {
		case !hostnameRE.MatchString(h):
			bad("hostname", "hostname %q: use 1-63 lower-case letters, digits and hyphens, not starting or ending with a hyphen (it is also the name on the LAN, %s.local)", h, h)
		case h == "localhost": // RFC 6761 section 6.3
			bad("hostname", "hostname %q is reserved for the loopback address (RFC 6761 section 6.3): on every computer it names that computer itself, so the device could not be reached by it; choose another name, for example \"arka\"", h)
		default:
			s.Hostname = h
		}
	}
	if tz := r.Timezone; tz != "" {
		if _, err := time.LoadLocation(tz); err != nil || strings.HasPrefix(tz, "/") || tz == "Local" {
			bad("timezone", "timezone %q is not a time zone name (for example \"Europe/Berlin\", \"America/New_York\", \"UTC\")", tz)
		} else {
			s.Timezone = tz
		}
	}
	for i, d := range r.DNS {
		a, err := netip.ParseAddr(d)
		if err != nil || a.Zone() != "" {
			bad(fmt.Sprintf("dns[%d]", i), "dns: %q is not an IPv4 or IPv6 address", d)
			continue
		}
		if what := unusable(a); what != "" {
			bad(fmt.Sprintf("dns[%d]", i), "dns %s is %s: no name server answers there for the device, so every name lookup (ACME, NTP, proxy upstreams) would fail; give the network's name server, for example the router's address", a, what)
			continue
		}
		s.DNS = append(s.DNS, a)
	}

	// Wi-Fi: a network with a mistake is left out, the others stay.
	wifiOK := true
	if c := r.WiFi.Country; c != "" {
		switch hint := countryHint(c); {
		case countryRE.MatchString(c) && isCountry(c):
			s.WiFi.Country = c
		case countryRE.MatchString(c):
			bad("wifi.country", "wifi country %q is no ISO 3166-1 country code%s: use the two-letter code of the country the device is in, for example \"DE\", \"GB\", \"US\"", c, hint)
			wifiOK = false
		default:
			bad("wifi.country", "wifi country %q%s: use the two-letter ISO 3166-1 code in capitals, for example \"DE\", \"GB\", \"US\"", c, hint)
			wifiOK = false
		}
	} else if len(r.WiFi.Networks) > 0 {
		bad("wifi.networks[0]", "wifi: country is required with networks (the radio's legal channels and power depend on it), for example country = \"DE\"")
		wifiOK = false
	}
	seen := map[string]bool{}
	for i, n := range r.WiFi.Networks {
		at := fmt.Sprintf("wifi.networks[%d]", i)
		switch {
		case n.SSID == "":
			bad(at, "wifi network %d: ssid is missing", i+1)
			continue
		case len(n.SSID) > 32:
			bad(at+".ssid", "wifi network %d: ssid %q is %d bytes long; an SSID has at most 32", i+1, n.SSID, len(n.SSID))
			continue
		case seen[n.SSID]:
			bad(at+".ssid", "wifi network %d: ssid %q is listed twice", i+1, n.SSID)
			continue
		}
		seen[n.SSID] = true
		switch {
		case n.Open && n.Passphrase != nil:
			bad(at+".open", "wifi network %q: open = true and a passphrase: remove one of them", n.SSID)
			continue
		case n.Open:
		case n.Passphrase == nil:
			bad(at, "wifi network %q: passphrase is missing (WPA2 needs 8 to 63 characters, or 64 hex digits); for a network without a password write open = true", n.SSID)
			continue
		default:
			if msg := CheckPassphrase(*n.Passphrase); msg != "" {
				bad(at+".passphrase", "wifi network %q: passphrase %s", n.SSID, msg)
				continue
			}
		}
		if wifiOK {
			nw := Network{SSID: n.SSID, Open: n.Open, Hidden: n.Hidden}
			if n.Passphrase != nil {
				nw.Passphrase = *n.Passphrase
			}
			s.WiFi.Networks = append(s.WiFi.Networks, nw)
		}
	}

	var ok bool
	if s.IPv4, ok = static(bad, "ipv4", r.IPv4, netip.Addr.Is4); !ok {
		s.IPv4 = Static{}
	}
	if s.IPv6, ok = static(bad, "ipv6", r.IPv6, func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }); !ok {
		s.IPv6 = Static{}
	}
	if len(s.DNS) > 0 && !s.IPv4.Enabled() && !s.IPv6.Enabled() {
		bad("dns", "dns is used only with a static address ([ipv4] or [ipv6] address); with DHCP the network's name servers are used")
		s.DNS = nil
	}
	// In file order, as a site file's (unknown keys are found first).
	slices.SortStableFunc(errs, func(a, b *config.Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return s, errs, true
}

// isCountry reports whether c, two capitals, is an ISO 3166-1 alpha-2
// code of a country or territory, the codes the Linux regulatory
// database (wireless-regdb) has rules for. The list is CLDR's, from
// golang.org/x/text/language, which also knows codes no regulatory
// database has: user-assigned ones ("XX", "ZZ", "XK"), groupings ("EU",
// "UN"), codes reserved for other uses (Ascension "AC") and names CLDR
// replaces ("UK" for "GB"); those are refused. A handful of codes ISO
// has withdrawn ("SU", "YU", "CS", "AN") are still accepted: CLDR keeps
// them as countries.
func isCountry(c string) bool {
	r, err := language.ParseRegion(c)
	return err == nil && r.String() == c && r.IsCountry() && !r.IsPrivateUse() && r.M49() != 0 && r.Canonicalize() == r
}

// countryHint offers the code c likely means (" (did you mean \"GB\"?)"
// for "UK" or "gb"), or "".
func countryHint(c string) string {
	r, err := language.ParseRegion(strings.ToUpper(c))
	if err != nil {
		return ""
	}
	if k := r.Canonicalize().String(); k != c && isCountry(k) {
		return fmt.Sprintf(" (did you mean %q?)", k)
	}
	return ""
}

// CheckPassphrase returns what is wrong with a WPA passphrase, or "".
// IEEE 802.11 (Annex M.4): 8-63 ASCII characters 32-126, or the PSK itself
// as 64 hex digits.
func CheckPassphrase(p string) string {
	if IsHexPSK(p) {
		return ""
	}
	if len(p) < 8 || len(p) > 63 {
		return fmt.Sprintf("has %d characters; WPA2 needs 8 to 63 (or 64 hex digits)", len(p))
	}
	for _, c := range p {
		if c < 32 || c > 126 {
			return fmt.Sprintf("contains %q; WPA allows only printable ASCII characters", c)
		}
	}
	return ""
}

// IsHexPSK reports whether p is a pre-shared key written as 64 hex digits
// rather than a passphrase.
func IsHexPSK(p string) bool {
	if len(p) != 64 {
		return false
	}
	for _, c := range p {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func static(bad func(string, string, ...any), table string, r rawStatic, family func(netip.Addr) bool) (Static, bool) {
	var s Static
	fam := map[string]string{"ipv4": "IPv4", "ipv6": "IPv6"}[table]
	switch r.Address {
	case "", "dhcp", "auto":
		if r.Gateway != "" {
			bad(table+".gateway", "%s gateway without a static address: set address too, or remove gateway to use %s", table, map[string]string{"ipv4": "DHCP", "ipv6": "router advertisements"}[table])
			return s, false
		}
		return s, true
	}
	p, err := netip.ParsePrefix(r.Address)
	if err != nil || !family(p.Addr()) || p.Addr().Zone() != "" {
		ex := map[string]string{"ipv4": "192.168.1.20/24", "ipv6": "2001:db8::20/64"}[table]
		bad(table+".address", "%s address %q: want an %s address with its prefix length, for example %q", table, r.Address, fam, ex)
		return s, false
	}
	if what := unusable(p.Addr()); what != "" {
		bad(table+".address", "%s address %q is %s: the device would be unreachable on the network; give it an address of its network", table, r.Address, what)
		return s, false
	}
	if p.Addr() == p.Masked().Addr() && p.Bits() < p.Addr().BitLen()-1 {
		bad(table+".address", "%s address %q is the network's own address, not one for the device", table, r.Address)
		return s, false
	}
	s.Address = p
	if r.Gateway != "" {
		g, err := netip.ParseAddr(r.Gateway)
		if err != nil || !family(g) {
			bad(table+".gateway", "%s gateway %q is not an %s address", table, r.Gateway, fam)
			return s, false
		}
		if g == p.Addr() {
			bad(table+".gateway", "%s gateway %s is the device's own address: give the router's address, or remove gateway", table, g)
			return s, false
		}
		if !g.IsLinkLocalUnicast() && !p.Masked().Contains(g) {
			bad(table+".gateway", "%s gateway %s is not in the device's network %s", table, g, p.Masked())
			return s, false
		}
		s.Gateway = g
	}
	return s, true
}

// unusable says why a is no address on the network, for the device or
// for its name servers ("a loopback address", "a multicast address", "the
// unspecified address"), or "".
func unusable(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsUnspecified():
		return "the unspecified address"
	}
	return ""
}

func trimBOM(b []byte) []byte {
	return []byte(strings.TrimPrefix(string(b), "\ufeff"))
}
