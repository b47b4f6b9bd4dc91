package h2_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/internal/h2"
	"github.com/arkaweb/arka/tests/testkit"
)

func selfSigned(t testing.TB) tls.Certificate {
	_, _, c := testkit.Cert(t, "localhost")
	return c
}

// start serves h with an h2.Server behind a TLS listener offering only h2.
func start(t testing.TB, h http.Handler) (addr string, srv *h2.Server) {
	t.Helper()
	return startServer(t, &h2.Server{Handler: h})
}

// startServer serves with srv (its limits set by the test).
func startServer(t testing.TB, srv *h2.Server) (string, *h2.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"h2"}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				tc := tls.Server(c, cfg)
				if err := tc.Handshake(); err != nil {
					tc.Close()
					return
				}
				st := tc.ConnectionState()
				srv.ServeConn(tc, &st)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		srv.Close()
	})
	return ln.Addr().String(), srv
}

func client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2:  true,
		DisableCompression: true,
	}, Timeout: 30 * time.Second}
}

var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/spec":
		// h2spec's path: read the whole body first, as most handlers do,
		// so that its checks of frames sent after the request (RFC 9113
		// section 8.1) meet an open stream rather than race the answer.
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "spec")
	case "/hash":
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		fmt.Fprintf(w, "%d %s %v", n, hex.EncodeToString(h.Sum(nil)), r.Trailer)
	case "/big":
		w.Header().Set("Content-Type", "application/octet-stream")
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		for i := 0; i < 160; i++ { // 10 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case "/trailers":
		w.Header().Set("Trailer", "X-Sum")
		io.WriteString(w, "body")
		w.Header().Set("X-Sum", "42")
	case "/stream":
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "event %d\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
		}
	default:
		fmt.Fprintf(w, "%s %s %s host=%s", r.Method, r.URL.Path, r.Proto, r.Host)
	}
})

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestBasics(t *testing.T) {
	addr, _ := start(t, echo)
	c := client()
	resp, body := get(t, c, "https://"+addr+"/x?y=1")
	if resp.Proto != "HTTP/2.0" || body != "GET /x HTTP/2.0 host="+addr {
		t.Errorf("%s %q", resp.Proto, body)
	}
	if resp.ContentLength != int64(len(body)) || resp.Header.Get("Date") == "" {
		t.Errorf("Content-Length %d, Date %q", resp.ContentLength, resp.Header.Get("Date"))
	}
	_, body = get(t, c, "https://"+addr+"/trailers")
	// Trailers are read once the body is done.
	resp, err := c.Get("https://" + addr + "/trailers")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Trailer.Get("X-Sum") != "42" || body != "body" {
		t.Errorf("trailers: %v %q", resp.Trailer, body)
	}
}

// Many concurrent streams on one connection, each answered correctly.
func TestConcurrentStreams(t *testing.T) {
	addr, _ := start(t, echo)
	c := client()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get(fmt.Sprintf("https://%s/n%d", addr, i))
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("GET /n%d HTTP/2.0", i); !strings.HasPrefix(string(b), want) {
				errs <- fmt.Errorf("stream %d: %q", i, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Uploads and downloads larger than every flow-control window.
func TestFlowControl(t *testing.T) {
	addr, _ := start(t, echo)
	c := client()
	up := bytes.Repeat([]byte("upload "), 3<<20/7)
	sum := sha256.Sum256(up)
	resp, err := c.Post("https://"+addr+"/hash", "application/octet-stream", bytes.NewReader(up))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("%d %s", len(up), hex.EncodeToString(sum[:])); !strings.HasPrefix(string(b), want) {
		t.Errorf("upload: %q", b)
	}
	resp, body := get(t, c, "https://"+addr+"/big")
	if len(body) != 10<<20 || resp.StatusCode != 200 {
		t.Errorf("download: %d bytes", len(body))
	}
}

// A client that cancels a request resets the stream: the handler's
// context ends.
func TestClientReset(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-time.After(10 * time.Second):
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+addr+"/slow", nil)
	go func() {
		<-started
		cancel()
	}()
	client().Do(req)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("handler context not cancelled after RST_STREAM")
	}
}

// Shutdown lets a stream in flight finish.
func TestShutdown(t *testing.T) {
	release := make(chan struct{})
	addr, srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "done")
	}))
	c := client()
	get(t, c, "https://"+addr+"/warm")
	result := make(chan string, 1)
	go func() {
		resp, err := c.Get("https://" + addr + "/slow")
		if err != nil {
			result <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		result <- string(b)
	}()
	time.Sleep(100 * time.Millisecond)
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	time.Sleep(100 * time.Millisecond)
	close(release)
	if got := <-result; got != "done" {
		t.Errorf("in-flight stream: %q", got)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// h2spec (github.com/summerwind/h2spec, a go.mod tool) checks RFC 9113 and
// RFC 7541 conformance: every test must pass.
func TestH2Spec(t *testing.T) {
	if testing.Short() {
		t.Skip("h2spec skipped in -short")
	}
	if err := exec.Command("go", "tool", "-n", "h2spec").Run(); err != nil {
		t.Skipf("go tool h2spec unavailable: %v", err)
	}
	addr, _ := start(t, echo)
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("go", "tool", "h2spec", "-h", host, "-p", port, "-t", "-k", "-o", "5", "-P", "/spec")
	out, err := cmd.CombinedOutput()
	summary := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "tests,") {
			summary = l
		}
	}
	if err != nil || !strings.Contains(summary, " 0 failed") {
		t.Fatalf("h2spec: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(summary))
}
