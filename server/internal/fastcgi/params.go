package fastcgi

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/arkaweb/arka/internal/fcgi"
)

// The request meta-variables (RFC 3875 section 4.1) sent as FastCGI
// PARAMS, plus what PHP expects beyond the RFC (nginx's fastcgi_params
// are the de-facto list): DOCUMENT_ROOT, DOCUMENT_URI, REQUEST_URI,
// SCRIPT_FILENAME, REDIRECT_STATUS, HTTPS, REMOTE_PORT, SERVER_ADDR.

var errParamTooLarge = errors.New("request header field too large for one FastCGI record")

// encodeStatic pre-encodes the parameters that are the same for every
// request of a handler: GATEWAY_INTERFACE, SERVER_SOFTWARE, DOCUMENT_ROOT
// and REDIRECT_STATUS. User env goes last (see appendParams).
func encodeStatic(root, software string) []byte {
	var b []byte
	for _, kv := range [][2]string{
		{"GATEWAY_INTERFACE", "CGI/1.1"},
		{"SERVER_SOFTWARE", software},
		{"DOCUMENT_ROOT", root},
		// php-cgi's force_redirect needs it; harmless for php-fpm.
		{"REDIRECT_STATUS", "200"},
	} {
		b = appendPair(b, kv[0], kv[1])
	}
	return b
}

func appendPair(b []byte, name, value string) []byte {
	b = fcgi.AppendLength(b, len(name))
	b = fcgi.AppendLength(b, len(value))
	b = append(b, name...)
	return append(b, value...)
}

// target is a resolved script.
type target struct {
	scriptName string // URL path of the script: SCRIPT_NAME
	pathInfo   string // rest of the URL path after the script: PATH_INFO
	// The script's file is the root joined with scriptName: SCRIPT_FILENAME.
}

// appendParams encodes the PARAMS stream of one request into pw.
// contentLength < 0 means no body.
func (h *Handler) appendParams(pw *fcgi.ParamsWriter, r *http.Request, t *target, contentLength int64) error {
	var err error
	add := func(name, value string) {
		if err == nil {
			err = pw.Add(name, value)
		}
	}
	pw.AddEncoded(h.staticParams)

	addJoined := func(name, a, b string) {
		if err == nil {
			err = pw.Reserve(len(name), len(a)+len(b))
		}
		if err == nil {
			pw.Buf = fcgi.AppendLength(pw.Buf, len(name))
			pw.Buf = fcgi.AppendLength(pw.Buf, len(a)+len(b))
			pw.Buf = append(append(append(pw.Buf, name...), a...), b...)
		}
	}
	addJoined("SCRIPT_FILENAME", h.root, t.scriptName)
	add("SCRIPT_NAME", t.scriptName)
	if t.pathInfo != "" {
		// RFC 3875 4.1.5 and 4.1.6: both are absent when there is no
		// path info.
		add("PATH_INFO", t.pathInfo)
		addJoined("PATH_TRANSLATED", h.root, t.pathInfo)
	}
	addJoined("DOCUMENT_URI", t.scriptName, t.pathInfo)
	add("REQUEST_URI", requestURI(r))
	add("QUERY_STRING", r.URL.RawQuery)
	add("REQUEST_METHOD", r.Method)
	if ct := r.Header["Content-Type"]; len(ct) > 0 {
		add("CONTENT_TYPE", ct[0])
	}
	if contentLength >= 0 && err == nil {
		var num [20]byte
		err = pw.AddBytes("CONTENT_LENGTH", strconv.AppendInt(num[:0], contentLength, 10))
	}
	if err == nil {
		err = h.appendAddrs(pw, r)
	}
	rip, rport := splitHostPort(r.RemoteAddr)
	add("REMOTE_ADDR", rip)
	add("REMOTE_PORT", rport)
	if err != nil {
		return err
	}

	// Request header fields as HTTP_* (RFC 3875 4.1.18).
	if r.Host != "" {
		if err := pw.Add("HTTP_HOST", r.Host); err != nil {
			return err
		}
	}
	for name, values := range r.Header {
		if !passHeader(name) || len(values) == 0 {
			continue
		}
		if err := appendHeaderParam(pw, name, values); err != nil {
			return err
		}
	}
	pw.AddEncoded(h.envParams)
	return nil
}

// addrBlock is the encoded SERVER_PROTOCOL, HTTPS, REQUEST_SCHEME,
// SERVER_NAME, SERVER_ADDR and SERVER_PORT of a request, with what they
// are made of: requests on one site and listener (the usual case) share
// them, so they are encoded once and copied after.
type addrBlock struct {
	proto, host string
	tls         bool
	// ip, port and zone are the local address the block was made for, as
	// the connection gives it (compared as they are: making a netip.AddrPort
	// of each request's address was 0.3% of Arka's CPU on a tiny script).
	ip   net.IP
	port int
	zone string
	enc  []byte // pairs, without record headers
}

// maxBlockHost bounds the Host values whose block is kept (a longer one
// is encoded for its request only).
const maxBlockHost = 255

// appendAddrs adds the parameters of addrBlock.
func (h *Handler) appendAddrs(pw *fcgi.ParamsWriter, r *http.Request) error {
	a, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if a == nil || len(r.Host) > maxBlockHost {
		return h.addAddrs(pw, r)
	}
	tls := r.TLS != nil
	if b := h.lastAddrs.Load(); b != nil && b.port == a.Port && b.ip.Equal(a.IP) && b.zone == a.Zone &&
		b.tls == tls && b.proto == r.Proto && b.host == r.Host {
		pw.AddEncoded(b.enc)
		return nil
	}
	var tmp fcgi.ParamsWriter
	tmp.Begin(make([]byte, 0, 512), 0)
	if err := h.addAddrs(&tmp, r); err != nil {
		return err
	}
	b := &addrBlock{proto: strings.Clone(r.Proto), host: strings.Clone(r.Host), tls: tls,
		ip: bytes.Clone(a.IP), port: a.Port, zone: strings.Clone(a.Zone), enc: tmp.Buf[fcgi.HeaderLen:]}
	h.lastAddrs.Store(b)
	pw.AddEncoded(b.enc)
	return nil
}

// addAddrs encodes the parameters of addrBlock for r.
func (h *Handler) addAddrs(pw *fcgi.ParamsWriter, r *http.Request) error {
	var err error
	add := func(name, value string) {
		if err == nil {
			err = pw.Add(name, value)
		}
	}
	add("SERVER_PROTOCOL", r.Proto)
	if r.TLS != nil {
		add("HTTPS", "on")
		add("REQUEST_SCHEME", "https")
	} else {
		add("REQUEST_SCHEME", "http")
	}

	// Addresses. SERVER_NAME is the host the client asked for (RFC 3875
	// 4.1.14), SERVER_ADDR and SERVER_PORT the local end of the connection.
	localIP, localPort := h.localAddr(r)
	host := r.Host
	if host == "" {
		host = localIP
		if strings.IndexByte(host, ':') >= 0 {
			host = "[" + host + "]"
		}
	}
	add("SERVER_NAME", hostOnly(host))
	add("SERVER_ADDR", localIP)
	if localPort == "" {
		localPort = portOf(r.Host)
		if localPort == "" {
			localPort = "80"
			if r.TLS != nil {
				localPort = "443"
			}
		}
	}
	add("SERVER_PORT", localPort)
	return err
}

// passHeader decides which request header fields become HTTP_* variables.
func passHeader(name string) bool {
	switch name {
	case "Proxy": // httpoxy (CVE-2016-5385): HTTP_PROXY would set the script's proxy
		return false
	case "Content-Type", "Content-Length": // CONTENT_TYPE, CONTENT_LENGTH
		return false
	case "Host": // HTTP_HOST comes from r.Host
		return false
	}
	// Names with "_" would collide with "-" after mapping (X-Real_IP and
	// X-Real-IP are both HTTP_X_REAL_IP) and let a client forge variables
	// a front proxy sets; nginx drops them too (underscores_in_headers).
	return strings.IndexByte(name, '_') < 0
}

// appendHeaderParam writes HTTP_<NAME> with the field's values joined by
// ", " (RFC 9110 section 5.3), or by "; " for Cookie (RFC 9113 section
// 8.2.3 lets HTTP/2 clients split it), without allocating.
func appendHeaderParam(pw *fcgi.ParamsWriter, name string, values []string) error {
	sep := ", "
	if name == "Cookie" {
		sep = "; "
	}
	vlen := len(sep) * (len(values) - 1)
	for _, v := range values {
		vlen += len(v)
	}
	nlen := len("HTTP_") + len(name)
	if err := pw.Reserve(nlen, vlen); err != nil {
		return errParamTooLarge
	}
	b := fcgi.AppendLength(pw.Buf, nlen)
	b = fcgi.AppendLength(b, vlen)
	b = append(b, "HTTP_"...)
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case c == '-':
			c = '_'
		}
		b = append(b, c)
	}
	for i, v := range values {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, v...)
	}
	pw.Buf = b
	return nil
}

// requestURI is the request target as the client sent it (encoded, with
// the query), for REQUEST_URI.
func requestURI(r *http.Request) string {
	if r.RequestURI != "" && r.RequestURI[0] == '/' {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// localAddr returns the IP and port of the connection's local end, from
// the context value net/http sets. The strings of the last address seen
// are kept: a server has few local addresses, so formatting them again
// for every request would be waste.
func (h *Handler) localAddr(r *http.Request) (ip, port string) {
	a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if a == nil {
		return "", ""
	}
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return splitHostPort(a.String())
	}
	ap := ta.AddrPort()
	if c := h.lastLocal.Load(); c != nil && c.ap == ap {
		return c.ip, c.port
	}
	c := &localStrings{ap: ap, ip: ap.Addr().Unmap().String(), port: strconv.Itoa(int(ap.Port()))}
	h.lastLocal.Store(c)
	return c.ip, c.port
}

type localStrings struct {
	ap       netip.AddrPort
	ip, port string
}

// splitHostPort splits "ip:port" or "[v6]:port"; an address without a
// port is all host.
func splitHostPort(hp string) (host, port string) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 || strings.IndexByte(hp[i:], ']') >= 0 {
		return strings.Trim(hp, "[]"), ""
	}
	host, port = hp[:i], hp[i+1:]
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	return host, port
}

// hostOnly strips the port from a Host value, keeping IPv6 brackets
// (RFC 3875 4.1.14 writes an IPv6 SERVER_NAME in brackets).
func hostOnly(host string) string {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host[i:], ']') < 0 {
		if strings.Count(host, ":") == 1 || strings.HasPrefix(host, "[") {
			return host[:i]
		}
	}
	return host
}

func portOf(host string) string {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host[i:], ']') < 0 {
		if strings.Count(host, ":") == 1 || strings.HasPrefix(host, "[") {
			return host[i+1:]
		}
	}
	return ""
}
