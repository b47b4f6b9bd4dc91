package status

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// DefaultAllow is the allow list used when the route configures none: loopback and
// the private ranges (RFC 1918, RFC 4193 unique local).
var defaultAllow = []string{"127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"}

// DefaultAllow returns a fresh copy of the default allow list.
func DefaultAllow() []netip.Prefix {
	p, _ := ParseAllow(defaultAllow)
	return p
}

// ParseAllow parses CIDR prefixes ("192.168.0.0/16", "::1/128") or bare addresses
// (taken as /32 or /128). IPv4-mapped IPv6 prefixes are unmapped. Errors name the
// offending entry and its index, for the config layer's file:line:col message.
func ParseAllow(entries []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(entries))
	for i, e := range entries {
		s := strings.TrimSpace(e)
		var p netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			p, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(s); err == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("allow[%d]: %q is not an IP address or CIDR prefix", i, e)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// clientAddr is the address of a RemoteAddr ("ip:port") or of a bare
// address (the client a trusted proxy named; see Options.Trusted),
// unmapped from ::ffff:a.b.c.d.
func clientAddr(remoteAddr string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

func allowed(allow []netip.Prefix, remoteAddr string) bool {
	a, ok := clientAddr(remoteAddr)
	if !ok {
		return false
	}
	for _, p := range allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
