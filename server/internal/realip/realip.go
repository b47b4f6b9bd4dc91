// Package realip names the client of a request: the direct peer, or, when
// the peer is a trusted proxy, the client it forwarded for in the one
// field the site reads it from (client_ip_header). The proxy handler's
// X-Real-IP, route allow/deny, basic_auth's per-client limit, the status
// page and the access log all use it, so they agree on who the client is.
package realip

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/arkaweb/arka/config"
)

// Peer returns the address part of a RemoteAddr ("192.0.2.1:5000",
// "[2001:db8::1]:5000") without allocating.
func Peer(remote string) string {
	if i := strings.LastIndexByte(remote, ':'); i >= 0 && (remote[0] != '[' || remote[i-1] == ']') {
		if strings.IndexByte(remote, ':') == i || remote[0] == '[' {
			remote = remote[:i]
		}
	}
	return strings.TrimSuffix(strings.TrimPrefix(remote, "["), "]")
}

// Trusted reports whether the address ip falls in one of nets.
func Trusted(nets []netip.Prefix, ip string) bool {
	if len(nets) == 0 {
		return false
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, n := range nets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// Client returns the address of the client of a request that came from
// remote (a RemoteAddr) with header h:
//
//   - from a peer that is not in trusted: the peer;
//   - from a trusted peer, field (the site's client_ip_header) says who:
//     with config.ClientIPXForwardedFor the right-most X-Forwarded-For
//     entry that is not itself a trusted proxy (the address the last
//     trusted proxy appended; entries further left were written by
//     whoever sent the request to the first proxy, and could be forged),
//     with config.ClientIPXRealIP its X-Real-IP (the address the front
//     proxy was connected from); when that field names no address, the
//     peer.
//
// Only the one field is read: a proxy that appends to X-Forwarded-For
// passes a client's own X-Real-IP through, and one that sets X-Real-IP
// may pass a client's own X-Forwarded-For through, so the other field
// names whoever the client likes.
//
// It does not allocate.
func Client(remote string, h http.Header, trusted []netip.Prefix, field config.ClientIPHeader) string {
	peer := Peer(remote)
	if len(trusted) == 0 || !Trusted(trusted, peer) {
		return peer
	}
	if field == config.ClientIPXRealIP {
		// One field, one address: a second X-Real-IP, or a list, leaves
		// open which one the proxy wrote.
		if v := h["X-Real-Ip"]; len(v) == 1 {
			if ip := strings.TrimSpace(v[0]); validAddr(ip) {
				return ip
			}
		}
		return peer
	}
	xff := h["X-Forwarded-For"]
	for i := len(xff) - 1; i >= 0; i-- {
		list := xff[i]
		for list != "" {
			var e string
			if j := strings.LastIndexByte(list, ','); j >= 0 {
				e, list = list[j+1:], list[:j]
			} else {
				e, list = list, ""
			}
			e = strings.TrimSpace(e)
			if !validAddr(e) {
				return peer
			}
			if !Trusted(trusted, e) {
				return e
			}
		}
	}
	return peer
}

func validAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// ForwardedHTTPS reports whether a trusted proxy (one of trusted, the
// site's trusted_proxies) says the client reached it over HTTPS:
// X-Forwarded-Proto: https, or proto=https in the first Forwarded element
// (RFC 7239 section 5.4). Without trusted proxies it is false.
func ForwardedHTTPS(r *http.Request, trusted []netip.Prefix) bool {
	if !Trusted(trusted, Peer(r.RemoteAddr)) {
		return false
	}
	if v := r.Header.Get("X-Forwarded-Proto"); v != "" {
		first, _, _ := strings.Cut(v, ",")
		return strings.EqualFold(strings.TrimSpace(first), "https")
	}
	if v := r.Header.Get("Forwarded"); v != "" {
		first, _, _ := strings.Cut(v, ",")
		for _, pair := range strings.Split(first, ";") {
			k, val, _ := strings.Cut(strings.TrimSpace(pair), "=")
			if strings.EqualFold(k, "proto") {
				return strings.EqualFold(strings.Trim(val, `"`), "https")
			}
		}
	}
	return false
}
