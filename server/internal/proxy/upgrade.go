package proxy

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/wire"
)

// switchProtocols completes an HTTP/1.1 upgrade (WebSocket, RFC 6455): the
// client's connection is taken over from the engine, the upstream's 101 is
// sent on it, and bytes are copied both ways until either side closes.
func (h *Handler) switchProtocols(w http.ResponseWriter, r *http.Request, c *conn, resp *response) {
	cc, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		h.log.Warn("proxy: cannot take over the client connection for an upgrade", h.logAttrs(c.up, "cause", err.Error())...)
		errpage.Write(w, r, http.StatusInternalServerError)
		return
	}
	defer cc.Close()
	// The engine may have left its read deadline on the connection.
	cc.SetDeadline(time.Time{})
	bw := brw.Writer
	bw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	var tokens connTokens
	rh := resp.Header()
	tokens.parse(rh["Connection"])
	for k, vv := range rh {
		if responseHopByHop(k) || tokens.n > 0 && tokens.has(k) {
			continue
		}
		for _, v := range vv {
			writeField(bw, k, v)
		}
	}
	bw.WriteString("Connection: Upgrade\r\n")
	if up := rh["Upgrade"]; len(up) > 0 {
		writeField(bw, "Upgrade", up[0])
	}
	bw.WriteString("\r\n")
	if err := bw.Flush(); err != nil {
		return
	}
	c.shrink() // a tunnel lasts: 4 KiB will do
	tunnel(cc, brw.Reader, c)
}

// tunnel copies bytes both ways between the client connection and the
// upstream connection until one side ends, then closes both.
func tunnel(cc net.Conn, cr *bufio.Reader, c *conn) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			cc.Close()
			c.nc.Close()
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(c.nc, cr) // client -> upstream, including bytes the engine buffered
		closeBoth()
	}()
	io.Copy(cc, c.br) // upstream -> client, including bytes read with the 101
	closeBoth()
	<-done
}

// websocketGUID is the fixed string of RFC 6455 section 1.3.
const websocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// serveExtendedConnect carries a WebSocket over an HTTP/2 stream (RFC 8441):
// the CONNECT with :protocol = websocket becomes an HTTP/1.1 upgrade to the
// upstream, a 101 becomes 200, and the stream's DATA frames carry the
// WebSocket bytes both ways.
//
// An upstream that does not switch opens no tunnel. Its refusal (3xx, 4xx,
// 5xx) is relayed as an ordinary response that ends the stream, as nginx
// relays a refused HTTP/1.1 upgrade; a body it cuts short before any of
// it was passed on is a 502. A 2xx is a 502, logged: to a CONNECT it would
// tell the client the tunnel is open (RFC 9110 section 9.3.6, RFC 8441
// section 5) while the upstream, which did not switch, speaks HTTP on; a
// 101 whose Sec-WebSocket-Accept does not match is a 502 as well.
//
// Go's HTTP/2 server accepts extended CONNECT only when the process runs
// with GODEBUG=http2xconnect=1 (Go 1.26; off by default,
// golang.org/issue/71128); without it, browsers use WebSockets over
// HTTP/1.1 and never reach this.
func (h *Handler) serveExtendedConnect(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get(":protocol"), "websocket") {
		errpage.Write(w, r, http.StatusNotImplemented)
		return
	}
	var key [16]byte
	rand.Read(key[:])
	wsKey := base64.StdEncoding.EncodeToString(key[:])

	u := h.pick(nil)
	u.active.Add(1)
	defer u.active.Add(-1)
	u.requests.Add(1)
	c, err := u.dial(r.Context())
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		u.failures.Add(1)
		u.markDown()
		h.log.Warn("proxy: upstream failed", h.logAttrs(u, "method", r.Method, "status", statusFor(err), "cause", "connect: "+describe(err, h.dialer.Timeout))...)
		errpage.Write(w, r, statusFor(err))
		return
	}
	defer c.nc.Close()
	stop := wire.AfterFunc(r.Context(), c.abort)
	defer stop()

	h.writeHead(c.bw, r, "websocket", bodyNone, 0, nil, wsKey)
	if err := c.bw.Flush(); err != nil {
		h.fail(w, r, u, h.sendFailure(c, err))
		return
	}
	c.nc.SetReadDeadline(time.Now().Add(h.headerTimeout))
	resp, err := h.readHead(w, r, c)
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		h.fail(w, r, u, h.headFailure(c, err))
		return
	}
	c.nc.SetReadDeadline(time.Time{})
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols:
	case resp.StatusCode < 300:
		// A 2xx to the client's CONNECT would say the tunnel is open
		// (RFC 9110 section 9.3.6, RFC 8441 section 5) while the upstream
		// did not switch and speaks HTTP on: a bad gateway.
		h.fail(w, r, u, &failure{status: http.StatusBadGateway,
			cause: "bad WebSocket handshake: the upstream answered " + strconv.Itoa(resp.StatusCode) + " instead of 101 Switching Protocols"})
		return
	default:
		// Refused (403, 404, 426...): relay the answer as it is, an
		// ordinary response that ends the stream. A body cut short before
		// any of it was passed on is a 502: the handler must not return
		// with nothing written, which the engine would answer 200.
		var rest relayed
		if _, f := h.relay(w, r, c, resp, &rest); f != nil {
			h.fail(w, r, u, f)
			return
		}
		rest.finish(w)
		return
	}
	sum := sha1.Sum([]byte(wsKey + websocketGUID))
	rh := resp.Header()
	if rh.Get("Sec-Websocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		h.fail(w, r, u, &failure{status: http.StatusBadGateway, cause: "bad WebSocket handshake: Sec-WebSocket-Accept does not match"})
		return
	}
	hdr := w.Header()
	var tokens connTokens
	tokens.parse(rh["Connection"])
	for k, vv := range rh {
		if responseHopByHop(k) || k == "Sec-Websocket-Accept" || k == "Server" || tokens.n > 0 && tokens.has(k) {
			continue
		}
		hdr[k] = vv
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(c.nc, r.Body) // client DATA frames -> upstream
		if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
	}()
	c.shrink() // a tunnel lasts: 4 KiB will do
	bp := h.bufs.Get().(*[]byte)
	defer h.bufs.Put(bp)
	for {
		n, err := c.br.Read(*bp)
		if n > 0 {
			if _, werr := w.Write((*bp)[:n]); werr != nil {
				break
			}
			if c.br.Buffered() == 0 {
				rc.Flush()
			}
		}
		if err != nil {
			break
		}
	}
	// The upstream ended: stop reading the client's stream too.
	c.nc.Close()
	rc.SetReadDeadline(aLongTimeAgo)
	<-done
}

// fail logs a failure and answers with its status.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, u *upstream, f *failure) {
	u.failures.Add(1)
	h.log.Warn("proxy: upstream failed", h.logAttrs(u, "method", r.Method, "status", f.status, "cause", f.cause)...)
	errpage.Write(w, r, f.status)
}
