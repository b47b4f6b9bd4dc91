package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// Check is what verification saw for one server and test: the response a
// timed run will get.
type Check struct {
	Status int
	Proto  string // "HTTP/2.0", "HTTP/1.1"
	Coding string // Content-Encoding, "" for none
	Bytes  int64  // body bytes as sent (compressed when Coding is set)
	// Copy reports that a compressed body is byte for byte the file
	// compressed ahead of time (index.html.br...), not the server's own.
	Copy bool
}

// Clients makes the Go HTTP clients used for verification, trusting the
// benchmark's certificate.
type Clients struct {
	h2, h1tls, h1 *http.Client
}

// NewClients returns clients for HTTP/2 over TLS, HTTP/1.1 over TLS and
// plain HTTP/1.1 that trust certPEM.
func NewClients(certFile string) (*Clients, error) {
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", certFile)
	}
	mk := func(h2, isTLS bool) *http.Client {
		tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4, ForceAttemptHTTP2: h2}
		if isTLS {
			tr.TLSClientConfig = &tls.Config{RootCAs: pool}
			if !h2 {
				tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			}
		}
		return &http.Client{Transport: tr, Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Clients{h2: mk(true, true), h1tls: mk(false, true), h1: mk(false, false)}, nil
}

// Close closes idle connections.
func (c *Clients) Close() {
	for _, cl := range []*http.Client{c.h2, c.h1tls, c.h1} {
		cl.CloseIdleConnections()
	}
}

// Verify requests url as test t will, and checks the answer: status 200,
// the protocol the test uses, the content coding expected (none, or one of
// those offered for a compressed test), a Content-Length (when sent) equal
// to the body's length, and the body itself, decoded, equal to the
// expected content.
func (c *Clients) Verify(ctx context.Context, content *Content, t *Test, url string) (Check, error) {
	cl := c.h1
	wantMajor := 1
	switch t.Protocol() {
	case "h2":
		cl, wantMajor = c.h2, 2
	case "h1+tls":
		cl = c.h1tls
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Check{}, err
	}
	if t.AcceptEncoding != "" {
		req.Header.Set("Accept-Encoding", t.AcceptEncoding)
	}
	req.Close = t.NewConn
	resp, err := cl.Do(req)
	if err != nil {
		return Check{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Check{}, fmt.Errorf("reading the body: %v", err)
	}
	ck := Check{Status: resp.StatusCode, Proto: resp.Proto, Coding: resp.Header.Get("Content-Encoding"), Bytes: int64(len(body))}
	if ck.Coding == "identity" {
		ck.Coding = ""
	}
	if resp.StatusCode != http.StatusOK {
		return ck, fmt.Errorf("status %d, want 200", resp.StatusCode)
	}
	if resp.ProtoMajor != wantMajor {
		return ck, fmt.Errorf("protocol %s, want HTTP/%d", resp.Proto, wantMajor)
	}
	if cl := resp.Header.Get("Content-Length"); cl != "" {
		if n, err := strconv.Atoi(cl); err != nil || n != len(body) {
			return ck, fmt.Errorf("Content-Length %s, but the body has %d bytes", cl, len(body))
		}
	}
	if t.Compressed && ck.Coding == "" {
		return ck, fmt.Errorf("not compressed, want one of %q", t.AcceptEncoding)
	}
	if !t.Compressed && ck.Coding != "" {
		return ck, fmt.Errorf("Content-Encoding %q, want none", ck.Coding)
	}
	decoded, err := decode(ck.Coding, body)
	if err != nil {
		return ck, err
	}
	want := t.Body(content)
	if !bytes.Equal(decoded, want) {
		return ck, fmt.Errorf("body differs from the expected content: got %d bytes (%d decoded), want %d decoded bytes", len(body), len(decoded), len(want))
	}
	if ck.Coding != "" {
		ck.Copy = bytes.Equal(body, content.Sibling(t.Path, ck.Coding))
	}
	return ck, nil
}

func decode(coding string, b []byte) ([]byte, error) {
	var r io.Reader
	switch coding {
	case "":
		return b, nil
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "gzip", "x-gzip":
		gr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("gzip: %v", err)
		}
		r = gr
	case "deflate": // RFC 9110 8.4.1.2: the zlib format
		zr, err := zlib.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("deflate: %v", err)
		}
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("zstd: %v", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("unknown Content-Encoding %q", coding)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %v", coding, err)
	}
	return out, nil
}
