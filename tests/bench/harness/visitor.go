package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"
)

// VisitorPage is one request of the "one visitor" measurement: what a
// browser asks for, one request after another over one HTTPS connection.
type VisitorPage struct {
	Name string
	Path string
	// Seed is the seed's figure for Arka (and the others), as published.
	Seed string
	// PHP pages need the server's php-fpm pool.
	PHP bool
}

// VisitorPages are the seed's "What a visitor notices" requests, all with
// the browsers' Accept-Encoding.
var VisitorPages = []VisitorPage{
	{Name: "small page", Path: PagePath, Seed: "a few hundredths of a ms from any server"},
	{Name: "285 KB script (precompressed)", Path: ScriptPath, Seed: "0.14–0.21 ms (Arka, nginx, Caddy)"},
	{Name: "PHP page", Path: PHPPagePath, Seed: "1.5–2.2 ms for all four; Arka the quickest", PHP: true},
}

// Visit is the "one visitor" latency of one server and page: the median
// and the 90th percentile of Requests sequential requests, in ms.
type Visit struct {
	Server   Server
	Page     VisitorPage
	Requests int
	Proto    string
	Coding   string
	Bytes    int64
	P50, P90 float64
	Err      string
}

// visitorClient is an HTTP/2 client over TLS (what browsers use) with one
// connection, trusting certFile.
func visitorClient(certFile string) (*http.Client, error) {
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", certFile)
	}
	tr := &http.Transport{
		DisableCompression: true, ForceAttemptHTTP2: true,
		MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1,
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, nil
}

// visit times n requests for url one after another on one connection,
// after a few untimed ones (the connection and the server's caches warm).
func visit(ctx context.Context, cl *http.Client, url string, n int) (v Visit, err error) {
	get := func() (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Accept-Encoding", BrowserAcceptEncoding)
		start := time.Now()
		resp, err := cl.Do(req)
		if err != nil {
			return 0, err
		}
		nb, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		v.Proto, v.Coding, v.Bytes = resp.Proto, resp.Header.Get("Content-Encoding"), nb
		return d, nil
	}
	for range 5 {
		if _, err := get(); err != nil {
			return v, err
		}
	}
	ms := make([]float64, 0, n)
	for range n {
		d, err := get()
		if err != nil {
			return v, err
		}
		ms = append(ms, float64(d.Microseconds())/1000)
	}
	v.Requests = len(ms)
	v.P50 = median(ms)
	slices.Sort(ms)
	v.P90 = percentile(ms, 90)
	return v, nil
}

// visitors measures the one-visitor latency of every server on every page
// (the servers in turn, page by page), after the timed rounds.
func (r *Run) visitors(ctx context.Context) error {
	n := 200
	if r.o.Duration < 2*time.Second {
		n = 50 // a quick run
	}
	for _, p := range VisitorPages {
		if p.PHP && !r.needs((*Test).PHP) {
			continue
		}
		for _, s := range r.servers {
			v := Visit{Server: s, Page: p}
			if p.PHP && !r.serves(s, (*Test).PHP) || !r.serves(s, func(t *Test) bool { return t.Handler == "static" }) && !p.PHP {
				continue
			}
			cl, err := visitorClient(r.layout.Cert)
			if err != nil {
				return err
			}
			url := fmt.Sprintf("https://127.0.0.1:%d%s", r.layout.Ports[s].HTTPS, p.Path)
			got, err := visit(ctx, cl, url, n)
			cl.CloseIdleConnections()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				v.Err = oneLine(err.Error())
				r.note("one visitor, %s, %s: %s", s, p.Name, v.Err)
			} else {
				got.Server, got.Page = s, p
				v = got
				r.say("  %-30s %-8s p50 %6.3f ms  p90 %6.3f ms  %s %s %d B", p.Name, s, v.P50, v.P90, v.Proto, v.Coding, v.Bytes)
			}
			r.visits = append(r.visits, v)
		}
	}
	return nil
}

// serves reports whether server s runs at least one selected test that
// pred accepts (it is up, and configured for that kind of request).
func (r *Run) serves(s Server, pred func(*Test) bool) bool {
	for _, t := range r.tests {
		if _, skipped := r.skipped(s, t.Name); pred(t) && !skipped {
			return true
		}
	}
	return false
}
