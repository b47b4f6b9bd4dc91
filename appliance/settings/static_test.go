package settings

import (
	"strings"
	"testing"
)

// TestStaticUnreachable (QA A7): static addresses that leave the device
// unreachable (loopback, multicast, unspecified, the device as its own
// gateway) are mistakes at file:line:col.
func TestStaticUnreachable(t *testing.T) {
	for src, want := range map[string]string{
		"[ipv4]\naddress = \"127.0.0.5/8\"\n":                                 "settings.txt:2:1: ipv4 address \"127.0.0.5/8\" is a loopback address",
		"[ipv4]\naddress = \"224.0.0.5/8\"\n":                                 "settings.txt:2:1: ipv4 address \"224.0.0.5/8\" is a multicast address",
		"[ipv6]\naddress = \"::1/128\"\n":                                     "settings.txt:2:1: ipv6 address \"::1/128\" is a loopback address",
		"[ipv6]\naddress = \"ff02::5/64\"\n":                                  "is a multicast address",
		"[ipv4]\naddress = \"192.168.1.10/24\"\ngateway = \"192.168.1.10\"\n": "settings.txt:3:1: ipv4 gateway 192.168.1.10 is the device's own address",
	} {
		_, errs := Parse("settings.txt", []byte(src))
		if len(errs) == 0 || !strings.Contains(errs.Error(), want) {
			t.Errorf("%q: errs = %v, want %q", src, errs, want)
		}
	}
	if _, errs := Parse("settings.txt", []byte("[ipv4]\naddress = \"192.168.1.10/24\"\ngateway = \"192.168.1.1\"\n")); len(errs) != 0 {
		t.Errorf("a good static address: %v", errs)
	}
}

// TestHostnameReserved: "localhost" is reserved for the loopback address
// (RFC 6761 section 6.3); names with dots ("localhost.", "x.local") are no
// single label. Each is a mistake at file:line:col.
func TestHostnameReserved(t *testing.T) {
	for src, want := range map[string]string{
		"hostname = \"localhost\"\n":        `settings.txt:1:1: hostname "localhost" is reserved for the loopback address`,
		"\nhostname = \"localhost.\"\n":     `settings.txt:2:1: hostname "localhost.": use 1-63 lower-case letters`,
		"hostname = \"arka.local.local\"\n": `settings.txt:1:1: hostname "arka.local.local": use 1-63 lower-case letters`,
		"hostname = \"arka.local\"\n":       `settings.txt:1:1: hostname "arka.local": use 1-63 lower-case letters`,
	} {
		s, errs := Parse("settings.txt", []byte(src))
		if len(errs) != 1 || !strings.Contains(errs.Error(), want) || s.Hostname != "" {
			t.Errorf("%q: hostname %q, errs = %v, want %q", src, s.Hostname, errs, want)
		}
	}
	if s, errs := Parse("settings.txt", []byte("hostname = \"localhost2\"\n")); len(errs) != 0 || s.Hostname != "localhost2" {
		t.Errorf("localhost2: %q %v", s.Hostname, errs)
	}
}

// TestStaticDNSUnusable: a name server at a loopback, unspecified or
// multicast address answers nothing on the device (nothing listens on its
// port 53), so every lookup (ACME, NTP, proxy upstreams) would fail. Each
// is a mistake at file:line:col and leaves it out; the others stay.
func TestStaticDNSUnusable(t *testing.T) {
	for dns, want := range map[string]string{
		"127.0.0.1":   "settings.txt:1:8: dns 127.0.0.1 is a loopback address",
		"127.0.0.53":  "settings.txt:1:8: dns 127.0.0.53 is a loopback address",
		"::1":         "settings.txt:1:8: dns ::1 is a loopback address",
		"0.0.0.0":     "settings.txt:1:8: dns 0.0.0.0 is the unspecified address",
		"::":          "settings.txt:1:8: dns :: is the unspecified address",
		"224.0.0.251": "settings.txt:1:8: dns 224.0.0.251 is a multicast address",
		"ff02::fb":    "settings.txt:1:8: dns ff02::fb is a multicast address",
	} {
		src := "dns = [\"" + dns + "\", \"192.168.1.1\"]\n[ipv4]\naddress = \"192.168.1.20/24\"\n"
		s, errs := Parse("settings.txt", []byte(src))
		if len(errs) != 1 || !strings.Contains(errs.Error(), want) || len(s.DNS) != 1 || s.DNS[0].String() != "192.168.1.1" {
			t.Errorf("dns %s: DNS %v, errs = %v, want %q", dns, s.DNS, errs, want)
		}
	}
}
