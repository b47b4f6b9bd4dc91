package proxy

import (
	"bufio"
	"net/http"
	"net/netip"
	"slices"
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

// Field classes of a request header, decided by canonical name.
const (
	fieldCopy   = iota
	fieldDrop   // hop-by-hop or rewritten by the proxy
	fieldFwd    // forwarding fields: set by the proxy, or dropped
	fieldTE     // TE: only "trailers" may go on
	fieldUpgrad // Upgrade: kept for upgrade requests only
	fieldID     // X-Request-Id: Arka's own with request_id, else the client's
	fieldMaxFwd // Max-Forwards: decremented on an OPTIONS
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
	case 5:
		if k == "Proxy" {
			// httpoxy (CVE-2016-5385): CGI-style applications take a
			// Proxy field for their HTTP_PROXY setting. No client has a
			// reason to send one.
			return fieldDrop
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
		if k == "Forwarded" || k == "X-Real-Ip" {
			return fieldFwd
		}
	case 10:
		if k == "Connection" || k == "Keep-Alive" {
			return fieldDrop
		}
	case 12:
		if k == "X-Request-Id" {
			return fieldID
		}
		if k == "Max-Forwards" {
			return fieldMaxFwd
		}
	case 14:
		if k == "Content-Length" {
			return fieldDrop // framing is ours: written from r.ContentLength
		}
		if k == "Http2-Settings" {
			return fieldDrop // RFC 9113 removed h2c upgrades; never passed on
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

// relayedTrailers returns the names of the client's trailer fields (those
// its Trailer field declared, r.Trailer's keys) that go to the upstream
// after a chunked body, sorted. Not relayed:
//
//   - those an upstream's trailers may not carry either (trailerAllowed:
//     RFC 9110 section 6.5.1's framing, routing, authentication and
//     control fields, and hop-by-hop ones);
//   - any field the proxy sets, rewrites or drops in the header section
//     (requestField: Host, the forwarding fields, the request id, Proxy,
//     Expect, TE, Upgrade, framing) and Via, so that
//     an upstream that merges trailers into the header section (Apache's
//     MergeTrailers) never takes a client's value for Arka's;
//   - names the Connection field lists, and names with an underscore or
//     a colon, as in the header section (writeHead).
func relayedTrailers(r *http.Request) []string {
	var tokens connTokens
	tokens.parse(r.Header["Connection"])
	var names []string
	for k := range r.Trailer {
		if k == "" || k[0] == ':' || strings.IndexByte(k, '_') >= 0 || k == "Via" ||
			requestField(k) != fieldCopy || !trailerAllowed(k) || tokens.n > 0 && tokens.has(k) {
			continue
		}
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// maxForwards reads the Max-Forwards field of a request (RFC 9110 section
// 7.6.2: 1*DIGIT, the number of intermediaries left that may forward it):
// sent reports whether there is one, valid whether it is a single such
// value, zero whether that value is 0 (the request ends here).
func maxForwards(h http.Header) (sent, valid, zero bool) {
	vv, sent := h["Max-Forwards"]
	if !sent {
		return false, false, false
	}
	if len(vv) != 1 || vv[0] == "" {
		return true, false, false
	}
	zero = true
	for i := 0; i < len(vv[0]); i++ {
		c := vv[0][i]
		if c < '0' || c > '9' {
			return true, false, false
		}
		zero = zero && c == '0'
	}
	return true, true, zero
}

// writeDecremented writes the Max-Forwards field with v, a valid non-zero
// value (maxForwards), less one: exact whatever its length.
func writeDecremented(bw *bufio.Writer, v string) {
	var arr [20]byte
	b := append(arr[:0], strings.TrimLeft(v, "0")...)
	i := len(b) - 1
	for b[i] == '0' {
		b[i] = '9'
		i--
	}
	b[i]--
	if len(b) > 1 && b[0] == '0' {
		b = b[1:]
	}
	bw.WriteString("Max-Forwards: ")
	bw.Write(b)
	bw.WriteString("\r\n")
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
	client  string // the original client (realip.Client): X-Real-IP
	trusted bool   // the client is a trusted proxy: keep and extend its chain
	proto   string // "http" or "https"
}

// writeForwarded writes the forwarding fields: X-Forwarded-For,
// X-Real-IP, X-Forwarded-Proto, X-Forwarded-Host and Forwarded (RFC 7239).
//
// From a client that is not a trusted proxy, whatever it sent in these
// fields was dropped (see requestField) and they describe this hop alone:
// the client's address, the Host it asked for and the scheme it used with
// Arka. So a client cannot pose as someone else.
//
// From a trusted proxy the chain it sent is kept and this hop appended,
// and the fields agree on the original request:
//
//   - X-Forwarded-For: its list, then its address.
//   - X-Real-IP: the original client (realip.Client), as the one field
//     the site's client_ip_header names: the right-most X-Forwarded-For
//     entry that is not a trusted proxy, or its X-Real-IP; else its
//     address.
//   - Forwarded: its elements if it sent the field; if it sent only
//     X-Forwarded-*, those turned into elements (one "for=" per
//     X-Forwarded-For entry, the first carrying X-Forwarded-Host as host
//     and X-Forwarded-Proto as proto); then this hop's element, whose
//     proto and host are those of the request Arka received (RFC 7239
//     section 4: each proxy describes its own incoming request).
//   - X-Forwarded-Proto and X-Forwarded-Host: the original request's
//     scheme and host: its X-Forwarded-Proto/-Host, else the proto/host of
//     its first Forwarded element, else this hop's.
//
// So X-Forwarded-Proto always equals the proto of the first Forwarded
// element (unless a trusted proxy itself sent two that differ, which are
// passed on as sent): an application reading either sees "https" for a
// client that used TLS with the front proxy.
func writeForwarded(bw *bufio.Writer, h http.Header, host string, f *forwarded) {
	var xff, xfp, xfh, fwd []string
	if f.trusted {
		xff, xfp, xfh = h["X-Forwarded-For"], h["X-Forwarded-Proto"], h["X-Forwarded-Host"]
		fwd = h["Forwarded"]
	}

	bw.WriteString("X-Forwarded-For: ")
	for _, v := range xff {
		bw.WriteString(v)
		bw.WriteString(", ")
	}
	bw.WriteString(f.ip)
	bw.WriteString("\r\n")

	bw.WriteString("X-Real-IP: ")
	bw.WriteString(f.client)
	bw.WriteString("\r\n")

	// The original request's scheme and host, as the chain tells them.
	origProto, origHost := f.proto, host
	var fwdProto, fwdHost string
	if len(fwd) > 0 {
		fwdProto, fwdHost = firstForwarded(fwd)
	}
	switch {
	case len(xfp) > 0:
		origProto = xfp[0]
	case fwdProto != "":
		origProto = fwdProto
	}
	switch {
	case len(xfh) > 0:
		origHost = xfh[0]
	case fwdHost != "":
		origHost = fwdHost
	}
	writeField(bw, "X-Forwarded-Proto", origProto)
	if origHost != "" {
		writeField(bw, "X-Forwarded-Host", origHost)
	}

	bw.WriteString("Forwarded: ")
	switch {
	case len(fwd) > 0:
		for _, v := range fwd {
			bw.WriteString(v)
			bw.WriteString(", ")
		}
	case len(xff) > 0 || len(xfp) > 0 || len(xfh) > 0:
		n := 0
		for _, v := range xff {
			for _, e := range strings.Split(v, ",") {
				if e = strings.TrimSpace(e); e == "" {
					continue
				}
				writeNode(bw, e)
				if n == 0 {
					writeOrigin(bw, xfh, xfp)
				}
				bw.WriteString(", ")
				n++
			}
		}
		if n == 0 {
			bw.WriteString("for=unknown")
			writeOrigin(bw, xfh, xfp)
			bw.WriteString(", ")
		}
	}
	writeNode(bw, f.ip)
	if host != "" {
		bw.WriteString(";host=")
		writeTokenOrQuoted(bw, host)
	}
	bw.WriteString(";proto=")
	bw.WriteString(f.proto)
	bw.WriteString("\r\n")
}

// writeNode writes "for=" and a node (RFC 7239 section 6): an IPv6
// address in brackets and quoted, an IPv4 address or "unknown" as is,
// anything else (with a port, obfuscated) as a token or quoted-string.
func writeNode(bw *bufio.Writer, node string) {
	bw.WriteString("for=")
	if a, err := netip.ParseAddr(node); err == nil && a.Is6() {
		bw.WriteString(`"[`)
		bw.WriteString(node)
		bw.WriteString(`]"`)
		return
	}
	writeTokenOrQuoted(bw, node)
}

// writeOrigin writes the host and proto pairs of the original request
// from X-Forwarded-Host and X-Forwarded-Proto, when sent.
func writeOrigin(bw *bufio.Writer, xfh, xfp []string) {
	if len(xfh) > 0 && xfh[0] != "" {
		bw.WriteString(";host=")
		writeTokenOrQuoted(bw, xfh[0])
	}
	if len(xfp) > 0 && xfp[0] != "" {
		bw.WriteString(";proto=")
		writeTokenOrQuoted(bw, xfp[0])
	}
}

// firstForwarded returns the proto and host parameters of the first
// element of a Forwarded field (RFC 7239 section 4), unquoted; empty
// when absent or malformed.
func firstForwarded(vv []string) (proto, host string) {
	v := vv[0]
	for v != "" {
		// One forwarded-pair: token "=" ( token / quoted-string ).
		v = strings.TrimLeft(v, " \t")
		eq := strings.IndexByte(v, '=')
		if eq <= 0 {
			return proto, host
		}
		name := strings.TrimSpace(v[:eq])
		v = strings.TrimLeft(v[eq+1:], " \t")
		var val string
		if strings.HasPrefix(v, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' && i+1 < len(v) {
					i++
				}
				b.WriteByte(v[i])
			}
			if i >= len(v) {
				return "", "" // unterminated
			}
			val, v = b.String(), v[i+1:]
		} else {
			end := strings.IndexAny(v, ";, \t")
			if end < 0 {
				end = len(v)
			}
			val, v = v[:end], v[end:]
		}
		switch {
		case strings.EqualFold(name, "proto"):
			proto = val
		case strings.EqualFold(name, "host"):
			host = val
		}
		v = strings.TrimLeft(v, " \t")
		if v == "" || v[0] == ',' {
			return proto, host // end of the first element
		}
		if v[0] != ';' {
			return "", ""
		}
		v = v[1:]
	}
	return proto, host
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
