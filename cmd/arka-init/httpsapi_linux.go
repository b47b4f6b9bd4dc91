package main

import (
	"io"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// apiLimits bounds what a client of the HTTPS API (serveHTTPS, in PID 1)
// can hold.
type apiLimits struct {
	// Idle closes a keep-alive connection that sends no request
	// (http.Server.IdleTimeout).
	Idle time.Duration
	// BodyIdle closes a connection whose request body stops moving for
	// that long. A deploy or an update streams hundreds of MB, over Wi-Fi
	// perhaps for many minutes, so there is no limit on a whole body
	// (http.Server.ReadTimeout), only on a stall; it matches the client's
	// own (deploy.DefaultIdleTimeout).
	BodyIdle time.Duration
	// HeaderTimeout bounds the TLS handshake and the request header.
	HeaderTimeout time.Duration
	// MaxConns is how many connections are held at once; the next wait
	// in the listen backlog until one ends.
	MaxConns int
}

// httpsAPILimits are serveHTTPS's limits. There is no write timeout:
// gokrazy's log streams (server-sent events) stay open, and a deploy's
// answer comes after the site was checked and Arka reloaded; a client that
// stops reading is dropped by BodyIdle's twin on writes (progressHandler).
var httpsAPILimits = apiLimits{
	Idle:          2 * time.Minute,
	BodyIdle:      2 * time.Minute,
	HeaderTimeout: 30 * time.Second,
	MaxConns:      64,
}

// newAPIServer is the HTTPS API's server for h with lim (listener
// limited by limitConns).
func newAPIServer(h http.Handler, lim apiLimits) *http.Server {
	return &http.Server{
		Handler:           progressHandler(h, lim.BodyIdle),
		ReadHeaderTimeout: lim.HeaderTimeout,
		IdleTimeout:       lim.Idle,
	}
}

// limitConns holds at most n connections of ln at once (0: no limit).
func limitConns(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		return ln
	}
	return netutil.LimitListener(ln, n)
}

// progressHandler gives every read of a request body, and every write of
// its answer, d to make progress (a connection deadline moved forward at
// each call), so that a stalled upload or a client that stops reading is
// dropped while a slow one that keeps moving is not.
func progressHandler(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Body != nil && r.Body != http.NoBody {
			// Also bounds the server's discarding of a body the handler
			// left unread.
			rc.SetReadDeadline(time.Now().Add(d))
			r.Body = &progressBody{ReadCloser: r.Body, rc: rc, d: d}
		}
		pw := &progressWriter{ResponseWriter: w, rc: rc, d: d}
		h.ServeHTTP(pw, r)
		// The answer's last bytes, within d too; then no deadline is left
		// for the connection's next request.
		pw.Flush()
		rc.SetWriteDeadline(time.Time{})
	})
}

type progressBody struct {
	io.ReadCloser
	rc *http.ResponseController
	d  time.Duration
}

func (b *progressBody) Read(p []byte) (int, error) {
	// Only the wait for the client counts: the deadline is set as the
	// read starts (the proxy may take a while to pass on what it read).
	b.rc.SetReadDeadline(time.Now().Add(b.d))
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		// The body is read: the server's own read that watches for the
		// client going away must not time out while the answer is
		// prepared (a deploy's check takes up to 2 minutes).
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

type progressWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(w.d))
	return w.ResponseWriter.Write(p)
}

func (w *progressWriter) Flush() {
	w.rc.SetWriteDeadline(time.Now().Add(w.d))
	w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// localOnly keeps the connections of ln made to a local address keep
// accepts and closes the others at once. serveHTTPS keeps those to the
// addresses gokrazy serves its own web UI on (gokrazy.IsInPrivateNet:
// loopback, RFC 1918, link-local, ULA, Tailscale): the update/deploy API
// is not reachable through a public address the device may have (a global
// IPv6 address). One wildcard listener with this filter stands for
// gokrazy's listener per address, which follows address changes.
func localOnly(ln net.Listener, keep func(net.IP) bool) net.Listener {
	return &filterListener{Listener: ln, keep: keep}
}

type filterListener struct {
	net.Listener
	keep func(net.IP) bool
}

func (l *filterListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if a, ok := c.LocalAddr().(*net.TCPAddr); ok && l.keep(a.IP) {
			return c, nil
		}
		c.Close()
	}
}
