package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ListenAddr is an address a site listens on, written "host:port",
// ":port" or "[v6]:port" in a site file.
type ListenAddr struct {
	// Host is an IP address, a host name (lower case; resolved when it is
	// bound, not when the configuration loads: a board may start before
	// its network), or "" for every address of the machine.
	Host string
	Port uint16 // 1..65535
}

// ParseListen parses a listen address (see ListenAddr).
func ParseListen(a string) (ListenAddr, error) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(a))
	if err != nil {
		return ListenAddr{}, errors.New("expected host:port, :port or [v6]:port")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return ListenAddr{}, fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	host = strings.ToLower(host)
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			if _, err := normalizeName(host); err != nil {
				return ListenAddr{}, fmt.Errorf("host %q is not an IP address or host name", host)
			}
		}
	}
	return ListenAddr{Host: host, Port: uint16(p)}, nil
}

// String is the address in the form net.Listen takes, "host:port" (the
// canonical form: one address is one string).
func (a ListenAddr) String() string {
	return net.JoinHostPort(a.Host, strconv.Itoa(int(a.Port)))
}

// MarshalText writes the address as String does.
func (a ListenAddr) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// ListenStrings returns the addresses as strings (ListenAddr.String).
func ListenStrings(l []ListenAddr) []string {
	out := make([]string, len(l))
	for i, a := range l {
		out[i] = a.String()
	}
	return out
}

// listen parses the addresses written at key ("listen", "tls.listen"),
// reporting each bad one at its element; what names the key in messages.
func (v *validator) listen(key, what string, written []string) []ListenAddr {
	var out []ListenAddr
	for i, a := range written {
		l, err := ParseListen(a)
		if err != nil {
			// A zero address keeps the count for the other checks; the
			// site is not loaded.
			v.errAt(fmt.Sprintf("%s[%d]", key, i), "%s %q: %v", what, a, err)
		}
		out = append(out, l)
	}
	return out
}

// listenTwice reports an address written twice in one of a site's listen
// keys, at the repeat. (One in both listen and tls.listen is for
// crossCheck, which knows every site's addresses.)
func (v *validator) listenTwice(s *Site) {
	for _, side := range []struct {
		key   string
		addrs []ListenAddr
	}{{"listen", s.Listen}, {"tls.listen", s.TLS.Listen}} {
		first := map[string]int{} // address -> index of its first entry
		for i, a := range side.addrs {
			if a.Port == 0 {
				continue // not parsed: reported already
			}
			addr := a.String()
			j, ok := first[addr]
			if !ok {
				first[addr] = i
				continue
			}
			line, col := v.pos.at(fmt.Sprintf("%s[%d]", side.key, j))
			v.errAt(fmt.Sprintf("%s[%d]", side.key, i), "%s is listed twice in %s (also at %d:%d)", addr, side.key, line, col)
		}
	}
}
