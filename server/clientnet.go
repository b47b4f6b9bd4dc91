package server

import "net/netip"

// clientNet is the network one client is taken to hold, for the limits
// that count per client (the connection limit's per-address share, failed
// basic-auth attempts): its IPv4 address (a /32), or its IPv6 /64, since
// one host or home network is typically given a whole /64 (RFC 7421) and
// could otherwise take a new address for every few connections or
// attempts. An IPv4-mapped IPv6 address counts as the IPv4 one. The zero
// Addr gives the zero Prefix.
func clientNet(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}
