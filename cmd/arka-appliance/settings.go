package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/arkaweb/arka/appliance/settings"
)

// settingsFlags are the settings-file flags of build, flash and update:
// they write settings.txt on the boot partition (appliance/settings).
type settingsFlags struct {
	file                       string
	wifiCountry, wifiSSID      string
	wifiPassFile               string
	wifiHidden, wifiOpen       bool
	ipv4, ipv4gw, ipv6, ipv6gw string
	dns                        string
}

func (s *settingsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.file, "settings", "", "settings file to put on the boot partition as "+settings.FileName+" (the flags below change it)")
	fs.StringVar(&s.wifiCountry, "wifi-country", "", "Wi-Fi regulatory country, two letters (e.g. DE, GB, US)")
	fs.StringVar(&s.wifiSSID, "wifi-ssid", "", "Wi-Fi network name")
	fs.StringVar(&s.wifiPassFile, "wifi-passphrase-file", "", "file holding the Wi-Fi passphrase (\"-\": standard input); without it the passphrase is asked for")
	fs.BoolVar(&s.wifiOpen, "wifi-open", false, "the Wi-Fi network has no password (no encryption: anyone nearby can read the traffic); no passphrase is asked for")
	fs.BoolVar(&s.wifiHidden, "wifi-hidden", false, "the Wi-Fi network does not broadcast its name")
	fs.StringVar(&s.ipv4, "ipv4", "", `static IPv4 address with prefix length, e.g. 192.168.1.20/24 (default DHCP; "dhcp": back to it)`)
	fs.StringVar(&s.ipv4gw, "ipv4-gateway", "", "IPv4 default gateway (with --ipv4)")
	fs.StringVar(&s.ipv6, "ipv6", "", `static IPv6 address with prefix length (default: router advertisements)`)
	fs.StringVar(&s.ipv6gw, "ipv6-gateway", "", "IPv6 default gateway (with --ipv6)")
	fs.StringVar(&s.dns, "dns", "", "name servers for static addresses, comma-separated")
}

// settings returns settings.txt for the image, whether any setting was
// given, and which were given one by one by flag (settings.Build.Keys:
// after an update the device changes those and keeps the rest of its own
// settings), nil with --settings FILE, a whole file that replaces the
// device's. hostname and timezone come from the build flags of the same
// name (when set on the command line).
func (s *settingsFlags) settings(hostname, timezone string, set map[string]bool) (file []byte, given bool, keys []string, err error) {
	file, keys, err = s.build(hostname, timezone, set)
	if err != nil {
		return nil, false, nil, err
	}
	given = s.file != "" || len(keys) > 0
	if s.file != "" {
		keys = nil
	}
	return file, given, keys, nil
}

func (s *settingsFlags) build(hostname, timezone string, set map[string]bool) ([]byte, []string, error) {
	var st settings.Settings
	var keys []string
	if s.file != "" {
		b, err := os.ReadFile(s.file)
		if err != nil {
			return nil, nil, err
		}
		var errs error
		st, errs = parseSettings(s.file, b)
		if errs != nil {
			return nil, nil, errs
		}
	}
	// Each flag is checked by the file's own rules (settings.Parse) and a
	// mistake names the flag.
	if set["hostname"] {
		if err := checkFlag("--hostname", fmt.Sprintf("hostname = %s\n", tomlString(hostname))); err != nil {
			return nil, nil, err
		}
		st.Hostname = hostname
		keys = append(keys, settings.KeyHostname)
	}
	if set["timezone"] { // given on purpose: written even if it is the image's default (UTC)
		if err := checkFlag("--timezone", fmt.Sprintf("timezone = %s\n", tomlString(timezone))); err != nil {
			return nil, nil, err
		}
		st.Timezone = timezone
		keys = append(keys, settings.KeyTimezone)
	}
	if s.wifiCountry != "" {
		if err := checkFlag("--wifi-country", fmt.Sprintf("[wifi]\ncountry = %s\n", tomlString(s.wifiCountry))); err != nil {
			return nil, nil, err
		}
		st.WiFi.Country = s.wifiCountry
		keys = append(keys, settings.KeyWiFiCountry)
	}
	if s.wifiSSID != "" {
		if err := checkFlag("--wifi-ssid", fmt.Sprintf("[wifi]\ncountry = \"DE\"\n[[wifi.networks]]\nssid = %s\nopen = true\n", tomlString(s.wifiSSID))); err != nil {
			return nil, nil, err
		}
	}
	if s.wifiOpen && s.wifiSSID == "" {
		return nil, nil, errors.New("--wifi-open: give the network's name with --wifi-ssid")
	}
	if s.wifiSSID != "" {
		n := settings.Network{SSID: s.wifiSSID, Open: s.wifiOpen, Hidden: s.wifiHidden}
		if s.wifiOpen {
			if s.wifiPassFile != "" {
				return nil, nil, errors.New("--wifi-open and --wifi-passphrase-file: an open network has no passphrase; give one of them")
			}
		} else {
			pass, err := s.passphrase()
			if err != nil {
				return nil, nil, err
			}
			if pass == "" {
				return nil, nil, fmt.Errorf("%s: the Wi-Fi passphrase is empty; WPA2 needs 8 to 63 characters (or 64 hex digits). For a network without a password, give --wifi-open instead", s.passphraseSource())
			}
			if msg := settings.CheckPassphrase(pass); msg != "" {
				return nil, nil, fmt.Errorf("%s: the Wi-Fi passphrase %s", s.passphraseSource(), msg)
			}
			n.Passphrase = pass
		}
		st.WiFi.Networks = append([]settings.Network{n}, st.WiFi.Networks...)
		keys = append(keys, settings.KeyWiFiNetworks)
	}
	// The address flags go through the same checks as the file: they are
	// written as a small settings file, parsed, and merged.
	var extra strings.Builder
	if s.dns != "" {
		var q []string
		for _, d := range strings.Split(s.dns, ",") {
			q = append(q, fmt.Sprintf("%q", strings.TrimSpace(d)))
		}
		extra.WriteString("dns = [" + strings.Join(q, ", ") + "]\n")
	}
	for _, f := range []struct{ table, addr, gw string }{{"ipv4", s.ipv4, s.ipv4gw}, {"ipv6", s.ipv6, s.ipv6gw}} {
		if f.addr != "" || f.gw != "" {
			fmt.Fprintf(&extra, "[%s]\naddress = %q\ngateway = %q\n", f.table, f.addr, f.gw)
		}
	}
	if extra.Len() > 0 {
		fl, errs := settings.Parse("flags", []byte(strings.ReplaceAll(extra.String(), "gateway = \"\"\n", "")))
		if len(errs) > 0 {
			var msgs []string
			for _, e := range errs {
				flag := "--" + strings.TrimSuffix(strings.Fields(e.Msg)[0], ":") // ipv4, ipv6, dns: the key the message starts with
				if strings.HasPrefix(e.Msg, "ipv4 gateway") || strings.HasPrefix(e.Msg, "ipv6 gateway") {
					flag += "-gateway"
				}
				msgs = append(msgs, flag+": "+e.Msg)
			}
			return nil, nil, errors.New(strings.Join(msgs, "\n"))
		}
		if s.dns != "" {
			st.DNS = fl.DNS
			keys = append(keys, settings.KeyDNS)
		}
		if s.ipv4 != "" {
			st.IPv4 = fl.IPv4
			keys = append(keys, settings.KeyIPv4)
		}
		if s.ipv6 != "" {
			st.IPv6 = fl.IPv6
			keys = append(keys, settings.KeyIPv6)
		}
	}
	b := settings.Marshal(st)
	if _, errs := settings.Parse("flags", b); len(errs) > 0 {
		// What only the combination gets wrong (a network without a
		// country, name servers without a static address).
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Msg)
		}
		from := "the settings flags"
		if s.file != "" {
			from = "the settings flags with " + s.file
		}
		return nil, nil, fmt.Errorf("%s: %s", from, strings.Join(msgs, "\n"))
	}
	return b, keys, nil
}

// checkFlag parses snippet, one flag's setting written as a settings
// file, and returns its mistakes as "FLAG: message".
func checkFlag(flag, snippet string) error {
	_, errs := settings.Parse(flag, []byte(snippet))
	if len(errs) == 0 {
		return nil
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Msg)
	}
	return fmt.Errorf("%s: %s", flag, strings.Join(msgs, "; "))
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a TOML basic string for what json.Marshal escapes
	return string(b)
}

func parseSettings(name string, b []byte) (settings.Settings, error) {
	st, errs := settings.Parse(name, b)
	if len(errs) > 0 {
		return st, errs
	}
	return st, nil
}

// passphraseSource names where the passphrase came from, for messages.
func (s *settingsFlags) passphraseSource() string {
	if s.wifiPassFile == "" {
		return "--wifi-ssid " + s.wifiSSID
	}
	return "--wifi-passphrase-file " + s.wifiPassFile
}

// passphrase reads the Wi-Fi passphrase from --wifi-passphrase-file or
// asks for it on the terminal (never from the command line, where other
// users and the shell history would see it).
func (s *settingsFlags) passphrase() (string, error) {
	switch s.wifiPassFile {
	case "":
		if !term.IsTerminal(int(os.Stdin.Fd())) {
			return "", errors.New("--wifi-ssid: give the passphrase with --wifi-passphrase-file FILE (or \"-\" for standard input); standard input is not a terminal to ask on")
		}
		fmt.Fprintf(os.Stderr, "Wi-Fi passphrase for %q (8 to 63 characters; --wifi-open for a network without one): ", s.wifiSSID)
		b, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		return string(b), err
	case "-":
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && line == "" {
			return "", fmt.Errorf("--wifi-passphrase-file -: %v", err)
		}
		return strings.TrimRight(line, "\r\n"), nil
	default:
		b, err := os.ReadFile(s.wifiPassFile)
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
}

// cmdSettings runs "settings check FILE": the boot partition's settings
// file checked as the device checks it at boot, without building.
func cmdSettings(args []string, out io.Writer) error {
	if len(args) != 2 || args[0] != "check" {
		return errors.New("usage: arka-appliance settings check FILE   (e.g. the card's " + settings.FileName + ")")
	}
	b, err := os.ReadFile(args[1])
	if err != nil {
		return fmt.Errorf("settings check: %v", err)
	}
	st, errs, from := settings.ParseOrKept(args[1], b, nil)
	switch {
	case from != settings.FromFile:
		return fmt.Errorf("%v\n(the device would not use this file: it keeps the last settings that loaded on it, or the image's defaults if none did)", errs)
	case len(errs) > 0:
		return fmt.Errorf("%v\n(the device would use this file, with those settings at their defaults)", errs)
	}
	fmt.Fprintf(out, "%s: no mistakes\n", args[1])
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	fmt.Fprintf(out, "  hostname  %s\n  timezone  %s\n", or(st.Hostname, "the image's"), or(st.Timezone, "the image's"))
	for _, n := range st.WiFi.Networks {
		kind := "WPA2/WPA3 passphrase"
		if n.Open {
			kind = "open, no encryption"
		}
		fmt.Fprintf(out, "  wifi      %q (%s), country %s\n", n.SSID, kind, st.WiFi.Country)
	}
	for _, a := range []struct {
		name string
		s    settings.Static
		def  string
	}{{"ipv4", st.IPv4, "DHCP"}, {"ipv6", st.IPv6, "router advertisements"}} {
		if a.s.Enabled() && !a.s.Gateway.IsValid() {
			fmt.Fprintf(out, "  %s      %s, no gateway\n", a.name, a.s.Address)
		} else if a.s.Enabled() {
			fmt.Fprintf(out, "  %s      %s gateway %v\n", a.name, a.s.Address, a.s.Gateway)
		} else {
			fmt.Fprintf(out, "  %s      %s\n", a.name, a.def)
		}
	}
	return nil
}
