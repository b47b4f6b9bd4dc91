package settings

import (
	"fmt"
	"strings"
)

// Marshal writes s as a settings file, with comments that explain every
// setting, including the ones left at their defaults (commented out), so
// a person can edit it later on any computer. Parse(Marshal(s)) == s.
func Marshal(s Settings) []byte {
	var b strings.Builder
	q := func(v string) string { return quote(v) }
	line := func(set bool, format string, a ...any) {
		if !set {
			b.WriteString("# ")
		}
		fmt.Fprintf(&b, format+"\n", a...)
	}
	b.WriteString(`# Arka appliance settings, read at every boot (format: TOML).
# Edit this file on any computer; a mistake is shown on the console, in the
# log and on the status page (/status), and that setting keeps its default.
# See "Your site on a Raspberry Pi" in Arka's README.

`)
	b.WriteString("# The device's name, also its name on the LAN: http://NAME.local/\n")
	line(s.Hostname != "", "hostname = %s", q(or(s.Hostname, "arka")))
	b.WriteString("# Time zone for logs (IANA name); default: the image's (UTC)\n")
	line(s.Timezone != "", "timezone = %s", q(or(s.Timezone, "Europe/Berlin")))
	b.WriteString("# Name servers, with a static address below\n")
	var dns []string
	for _, a := range s.DNS {
		dns = append(dns, q(a.String()))
	}
	line(len(dns) > 0, "dns = [%s]", strings.Join(or2(dns, []string{q("192.168.1.1")}), ", "))

	b.WriteString("\n# Wi-Fi (Raspberry Pi Zero 2 W, 3, 3+, 4, 400, 5). Ethernet keeps working.\n")
	b.WriteString("# country: the two-letter code of the country the device is in.\n")
	line(s.WiFi.Country != "" || len(s.WiFi.Networks) > 0, "[wifi]")
	line(s.WiFi.Country != "", "country = %s", q(or(s.WiFi.Country, "DE")))
	if len(s.WiFi.Networks) == 0 {
		b.WriteString("# [[wifi.networks]]\n# ssid = \"My network\"\n# passphrase = \"8 to 63 characters\"   (or open = true for a network without a password)\n")
	}
	for _, n := range s.WiFi.Networks {
		b.WriteString("\n[[wifi.networks]]\n")
		fmt.Fprintf(&b, "ssid = %s\n", q(n.SSID))
		if n.Open {
			b.WriteString("open = true  # no encryption\n")
		} else {
			fmt.Fprintf(&b, "passphrase = %s\n", q(n.Passphrase))
		}
		if n.Hidden {
			b.WriteString("hidden = true\n")
		}
	}

	b.WriteString("\n# Addresses: DHCP (IPv4) and router advertisements (IPv6) unless set here.\n")
	for _, f := range []struct {
		name, ex, gw string
		s            Static
	}{{"ipv4", "192.168.1.20/24", "192.168.1.1", s.IPv4}, {"ipv6", "2001:db8::20/64", "2001:db8::1", s.IPv6}} {
		on := f.s.Enabled()
		line(on, "[%s]", f.name)
		addr, gw := f.ex, f.gw
		if on {
			addr = f.s.Address.String()
			gw = ""
			if f.s.Gateway.IsValid() {
				gw = f.s.Gateway.String()
			}
		}
		line(on, "address = %s", q(addr))
		if gw != "" {
			line(on, "gateway = %s", q(gw))
		}
	}
	return []byte(b.String())
}

// quote writes a TOML basic string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func or2(s, def []string) []string {
	if len(s) == 0 {
		return def
	}
	return s
}
