package harness

import (
	"net"
	"net/http"
	"strconv"
	"time"
)

// UpstreamHandler is the tiny upstream of the proxy tests: /small and /30k
// with fixed bodies, Content-Length and no compression, over keep-alive
// HTTP/1.1. It runs as its own process (arkabench -upstream ADDR) so that
// its CPU is neither the server's nor the harness's.
func UpstreamHandler(c *Content) http.Handler {
	bodies := map[string][]byte{SmallPath: c.Small, BigPath: c.Big}
	ctype := []string{"text/html; charset=utf-8"}
	lens := map[string][]string{}
	for p, b := range bodies {
		lens[p] = []string{strconv.Itoa(len(b))}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h["Content-Type"] = ctype
		h["Content-Length"] = lens[r.URL.Path]
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			w.Write(b)
		}
	})
}

// ServeUpstream serves UpstreamHandler on addr until the process ends.
func ServeUpstream(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: UpstreamHandler(NewContent()), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	return srv.Serve(ln)
}
