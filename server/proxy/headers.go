package proxy

import (
	"bufio"
	"net/http"
	"net/netip"
	"strings"
)

// Header handling shared by both directions: hop-by-hop fields (RFC 9110
// section 7.6.1) and the forwarding fields (X-Forwarded-*, RFC 7239
// Forwarded).

// connTokens holds the field names listed in Connection header fields,
// which are hop-by-hop too (RFC 9110 section 7.6.1). The common case of no
// or one or two tokens needs no allocation.
type connTokens struct {
	n     int
	small [4]string
	more  []string
}

func (t *connTokens) parse(vv []string) {
	for _, v := range vv {
		for v != "" {
			var tok string
			if i := strings.IndexByte(v, ','); i >= 0 {
				tok, v = v[:i], v[i+1:]
			} else {
				tok, v = v, ""
			}
			tok = strings.TrimSpace(tok)
			if tok == "" {
				continue
			}
			if t.n < len(t.small) {
				t.small[t.n] = tok
			} else {
				t.more = append(t.more, tok)
			}
			t.n++
		}
	}
}

// has reports whether the canonical field name k was named.
func (t *connTokens) has(k string) bool {
	m := t.n
	if m > len(t.small) {
		m = len(t.small)
	}
	for i := 0; i < m; i++ {
		if strings.EqualFold(t.small[i], k) {
			return true
		}
	}
	for _, s := range t.more {
		if strings.EqualFold(s, k) {
			return true
		}
	}
	return false
}

// hasToken reports whether a comma-separated field contains tok,
// case-insensitively.
func hasToken(vv []string, tok string) bool {
	for _, v := range vv {
		for v != "" {
			var t string
			if i := strings.IndexByte(v, ','); i >= 0 {
				t, v = v[:i], v[i+1:]
			} else {
				t, v = v, ""
			}
			if strings.EqualFold(strings.TrimSpace(t), tok) {
				return true
			}
		}
	}
	return false
}

// Field classes of a request header, decided by canonical name.
const (
	fieldCopy   = iota
	fieldDrop   // hop-by-hop or rewritten by the proxy
	fieldFwd    // forwarding fields: set by the proxy, or dropped
	fieldTE     // TE: only "trailers" may go on
	fieldUpgrad // Upgrade: kept for upgrade requests only
)

// requestField classifies a request header field name (canonical form, as
// net/http stores it).
func requestField(k string) int {
	switch len(k) {
	case 2:
		if k == "Te" {
			return fieldTE
		}
	case 4:
		if k == "Host" {
			return fieldDrop // written from r.Host or host_header
		}
	case 6:
		if k == "Expect" {
			// 100-continue is answered by the engine when the body is
			// first read; the upstream sees the body straight away.
			return fieldDrop
		}
	case 7:
		if k == "Upgrade" {
			return fieldUpgrad
		}
		if k == "Trailer" {
			return fieldDrop // announced again from r.Trailer
		}
	case 9:
		if k == "Forwarded" {
			return fieldFwd
		}
	case 10:
		if k == "Connection" || k == "Keep-Alive" {
			return fieldDrop
		}
	case 14:
		if k == "Content-Length" {
			return fieldDrop // framing is ours: written from r.ContentLength
		}
	case 15:
		if k == "X-Forwarded-For" {
			return fieldFwd
		}
	case 16:
		if k == "X-Forwarded-Host" {
			return fieldFwd
		}
		if k == "Proxy-Connection" {
			return fieldDrop
		}
	case 17:
		if k == "Transfer-Encoding" {
			return fieldDrop
		}
		if k == "X-Forwarded-Proto" {
			return fieldFwd
		}
	}
	return fieldCopy
}

// responseHopByHop reports whether a response field is hop-by-hop (RFC 9110
// section 7.6.1), apart from the ones named in Connection.
func responseHopByHop(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Transfer-Encoding", "Upgrade", "Trailer":
		return true
	}
	return false
}

// forwarded is what the proxy knows about the client for the forwarding
// fields.
type forwarded struct {
	ip      string // client address without port or brackets
	trusted bool   // the client is a trusted proxy: keep and extend its chain
	proto   string // "http" or "https"
}

// clientIP returns the address part of a RemoteAddr ("192.0.2.1:5000",
// "[2001:db8::1]:5000") without allocating.
func clientIP(remote string) string {
	if i := strings.LastIndexByte(remote, ':'); i >= 0 {
		remote = remote[:i]
	}
	return strings.TrimSuffix(strings.TrimPrefix(remote, "["), "]")
}

// isTrusted reports whether ip falls in one of the trusted networks.
func isTrusted(nets []netip.Prefix, ip string) bool {
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

// writeForwarded writes X-Forwarded-For, X-Forwarded-Proto,
// X-Forwarded-Host and Forwarded (RFC 7239 section 4). From a trusted proxy
// the incoming chains are kept and this hop appended; from anyone else they
// are replaced, so a client cannot pose as someone else.
func writeForwarded(bw *bufio.Writer, h http.Header, host string, f *forwarded) {
	bw.WriteString("X-Forwarded-For: ")
	if xff := h["X-Forwarded-For"]; f.trusted && len(xff) > 0 {
		for _, v := range xff {
			bw.WriteString(v)
			bw.WriteString(", ")
		}
	}
	bw.WriteString(f.ip)
	bw.WriteString("\r\n")

	bw.WriteString("X-Forwarded-Proto: ")
	if v := h["X-Forwarded-Proto"]; f.trusted && len(v) > 0 {
		bw.WriteString(v[0])
	} else {
		bw.WriteString(f.proto)
	}
	bw.WriteString("\r\n")

	if v := h["X-Forwarded-Host"]; f.trusted && len(v) > 0 {
		writeField(bw, "X-Forwarded-Host", v[0])
	} else if host != "" {
		writeField(bw, "X-Forwarded-Host", host)
	}

	bw.WriteString("Forwarded: ")
	if fw := h["Forwarded"]; f.trusted && len(fw) > 0 {
		for _, v := range fw {
			bw.WriteString(v)
			bw.WriteString(", ")
		}
	}
	bw.WriteString("for=")
	if strings.IndexByte(f.ip, ':') >= 0 {
		// RFC 7239 section 6: IPv6 in brackets, quoted.
		bw.WriteString(`"[`)
		bw.WriteString(f.ip)
		bw.WriteString(`]"`)
	} else {
		bw.WriteString(f.ip)
	}
	if host != "" {
		bw.WriteString(";host=")
		writeTokenOrQuoted(bw, host)
	}
	bw.WriteString(";proto=")
	bw.WriteString(f.proto)
	bw.WriteString("\r\n")
}

// writeTokenOrQuoted writes v as an RFC 9110 token when it is one, else as
// a quoted-string (section 5.6.4).
func writeTokenOrQuoted(bw *bufio.Writer, v string) {
	token := v != ""
	for i := 0; i < len(v) && token; i++ {
		token = isTchar(v[i])
	}
	if token {
		bw.WriteString(v)
		return
	}
	bw.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '"' || c == '\\' {
			bw.WriteByte('\\')
		}
		bw.WriteByte(v[i])
	}
	bw.WriteByte('"')
}

func isTchar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func writeField(bw *bufio.Writer, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	bw.WriteString(v)
	bw.WriteString("\r\n")
}
