package config

import (
	"fmt"
	"strings"
)

// ClientIPHeader is the one request field from which the client's address
// is read when a request comes from a trusted proxy (trusted_proxies): the
// site key client_ip_header, as nginx's real_ip_header and Caddy's
// client_ip_headers. Only one field is read, because which field a front
// proxy sets and which it passes through from the client differs from
// proxy to proxy, and a field the client wrote names whatever it likes.
// The zero value is ClientIPXForwardedFor, the default.
type ClientIPHeader uint8

const (
	// ClientIPXForwardedFor: the right-most X-Forwarded-For entry that is
	// not itself a trusted proxy, the address the last trusted proxy
	// appended (Caddy, HAProxy's option forwardfor, Traefik, nginx with
	// proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for).
	ClientIPXForwardedFor ClientIPHeader = iota
	// ClientIPXRealIP: X-Real-IP, which the front proxy sets to the
	// address it was connected from (nginx's proxy_set_header X-Real-IP
	// $remote_addr).
	ClientIPXRealIP
)

var clientIPHeaderNames = [...]string{ClientIPXForwardedFor: "X-Forwarded-For", ClientIPXRealIP: "X-Real-IP"}

// String returns the field name: "X-Forwarded-For" or "X-Real-IP".
func (h ClientIPHeader) String() string {
	if int(h) < len(clientIPHeaderNames) {
		return clientIPHeaderNames[h]
	}
	return fmt.Sprintf("ClientIPHeader(%d)", uint8(h))
}

// UnmarshalText implements encoding.TextUnmarshaler for the field name,
// in any case (field names are case-insensitive, RFC 9110 section 5.1).
func (h *ClientIPHeader) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	for i, name := range clientIPHeaderNames {
		if strings.EqualFold(s, name) {
			*h = ClientIPHeader(i)
			return nil
		}
	}
	return fmt.Errorf("%q: expected %q or %q", s, clientIPHeaderNames[ClientIPXForwardedFor], clientIPHeaderNames[ClientIPXRealIP])
}

// MarshalText implements encoding.TextMarshaler: the field name.
func (h ClientIPHeader) MarshalText() ([]byte, error) { return []byte(h.String()), nil }
