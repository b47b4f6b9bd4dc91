// Command arkamem reports Arka's memory at rest and under connections:
// live Go heap (as the last collection found it), heap in use, and the
// process's RSS and peak RSS (VmHWM), at idle, with 64 busy connections
// and with N idle keep-alive connections (1000 by default), over plain
// HTTP/1.1, HTTP/1.1 over TLS and HTTP/2. It starts the given arka binary
// on 127.0.0.1 with a site of one small page and a status route, runs the
// clients in this process, and stops arka at the end. Bounded: at most
// 5000 connections, a few seconds per phase.
//
//	go run ./tests/bench/cmd/arkamem -arka bin/arka [-idle 1000] [-busy 64] [-busy-for 3s]
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/tests/bench/harness"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "arkamem:", err)
		os.Exit(1)
	}
}

type proto string

const (
	h1    proto = "HTTP/1.1"
	h1tls proto = "HTTP/1.1+TLS"
	h2    proto = "HTTP/2"
)

func run() error {
	arka := flag.String("arka", "bin/arka", "arka binary")
	idle := flag.Int("idle", 1000, "idle keep-alive connections per protocol (at most 5000)")
	busy := flag.Int("busy", 64, "busy connections per protocol")
	busyFor := flag.Duration("busy-for", 3*time.Second, "how long the busy connections send requests")
	env := flag.String("env", "", "extra environment for arka, e.g. GOGC=100 (comma-separated)")
	flag.Parse()
	if *idle < 0 || *idle > 5000 || *busy < 1 || *busy > 1000 || *busyFor > time.Minute {
		return errors.New("-idle 0..5000, -busy 1..1000, -busy-for at most 1m")
	}
	dir, err := os.MkdirTemp("", "arkamem-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	m, err := start(*arka, dir, *env)
	if err != nil {
		return err
	}
	defer m.stop()

	fmt.Printf("arka %s, page %d B; live heap = /gc/heap/live:bytes at the last GC; heap = HeapAlloc; RSS and peak (VmHWM) from /proc\n\n", *arka, len(page))
	fmt.Printf("| state | protocol | connections | requests | live heap MB | heap MB | RSS MB | peak RSS MB | goroutines |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	time.Sleep(2 * time.Second)
	m.report("idle", "–", 0, 0)
	for _, p := range []proto{h1, h1tls, h2} {
		m.resetPeak()
		n, err := m.busy(p, *busy, *busyFor)
		if err != nil {
			return fmt.Errorf("%s busy: %v", p, err)
		}
		m.report(fmt.Sprintf("%d busy", *busy), p, *busy, n)
		if *idle > 0 {
			conns, err := m.open(p, *idle)
			if err != nil {
				closeAll(conns)
				return fmt.Errorf("%s idle: %v", p, err)
			}
			time.Sleep(2 * time.Second)
			m.report(fmt.Sprintf("%d idle keep-alive", *idle), p, len(conns), int64(len(conns)))
			closeAll(conns)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(2 * time.Second)
	m.report("idle again", "–", 0, 0)
	return nil
}

// page is the small page served (the benchmark's 1.3 KB page size).
var page = []byte(strings.Repeat("<p>Arka memory check.</p>\n", 52))

type mem struct {
	cmd       *exec.Cmd
	http, tls string
	status    string
	client    *http.Client
	cert      string
	tlsConfig *tls.Config
}

func start(bin, dir, env string) (*mem, error) {
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(www, "index.html"), page, 0o644); err != nil {
		return nil, err
	}
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := harness.WriteCert(cert, key); err != nil {
		return nil, err
	}
	hp, err := freePort()
	if err != nil {
		return nil, err
	}
	tp, err := freePort()
	if err != nil {
		return nil, err
	}
	m := &mem{http: "127.0.0.1:" + hp, tls: "127.0.0.1:" + tp, cert: cert}
	cfg := fmt.Sprintf(`default = true
listen = [%q]
request_id = false

[tls]
listen = [%q]
cert = %q
key = %q

[log]
enabled = false

[[routes]]
path = "/status"
handler = { type = "status" }

[[routes]]
path = "/"
handler = { type = "static", root = %q }
`, m.http, m.tls, cert, key, www)
	conf := filepath.Join(dir, "arka.toml")
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	m.cmd = exec.Command(bin, "-c", conf, "-state", filepath.Join(dir, "state"))
	m.cmd.Env = os.Environ()
	if env != "" {
		m.cmd.Env = append(m.cmd.Env, strings.Split(env, ",")...)
	}
	m.cmd.Stdout, m.cmd.Stderr = io.Discard, io.Discard
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	m.status = "http://" + m.http + "/status?format=json"
	m.client = &http.Client{Timeout: 5 * time.Second}
	m.tlsConfig = &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}, ClientSessionCache: tls.NewLRUClientSessionCache(64)}
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := m.client.Get("http://" + m.http + "/index.html")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) || m.cmd.ProcessState != nil {
			m.stop()
			return nil, fmt.Errorf("arka did not answer on %s: %v", m.http, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	m.client.CloseIdleConnections()
	return m, nil
}

func (m *mem) stop() {
	if m.cmd != nil && m.cmd.Process != nil {
		m.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { m.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			m.cmd.Process.Kill()
			<-done
		}
		m.cmd = nil
	}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p, nil
}

// conn is one client connection that can send GET /index.html.
type conn interface {
	get() error
	Close() error
}

type h1conn struct {
	nc net.Conn
	br *bufio.Reader
}

var request = []byte("GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n")

func (c *h1conn) get() error {
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(request); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}

func (c *h1conn) Close() error { return c.nc.Close() }

type h2conn struct {
	cc *http.ClientConn
}

func (c *h2conn) get() error {
	req, _ := http.NewRequest(http.MethodGet, "https://localhost/index.html", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.cc.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return err
	}
	if resp.ProtoMajor != 2 {
		resp.Body.Close()
		return errors.New("not HTTP/2: " + resp.Proto)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}

func (c *h2conn) Close() error { return c.cc.Close() }

// h2t makes HTTP/2 connections over TLS, one per NewClientConn.
var h2t = func() *http.Transport {
	t := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableCompression: true}
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP2(true)
	return t
}()

func (m *mem) dial(p proto) (conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	switch p {
	case h1:
		nc, err := d.Dial("tcp", m.http)
		if err != nil {
			return nil, err
		}
		return &h1conn{nc: nc, br: bufio.NewReaderSize(nc, 4096)}, nil
	case h1tls:
		nc, err := tls.DialWithDialer(&d, "tcp", m.tls, m.tlsConfig)
		if err != nil {
			return nil, err
		}
		return &h1conn{nc: nc, br: bufio.NewReaderSize(nc, 4096)}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cc, err := h2t.NewClientConn(ctx, "https", m.tls)
	if err != nil {
		return nil, err
	}
	return &h2conn{cc: cc}, nil
}

// busy runs n connections sending requests one after another for d and
// returns the number of responses.
func (m *mem) busy(p proto, n int, d time.Duration) (int64, error) {
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	end := time.Now().Add(d)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := m.dial(p)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for time.Now().Before(end) {
				if err := c.get(); err != nil {
					errs <- err
					return
				}
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return total.Load(), <-errs
}

// open makes n connections, each after one request, and leaves them idle.
func (m *mem) open(p proto, n int) ([]conn, error) {
	var conns []conn
	for range n {
		c, err := m.dial(p)
		if err != nil {
			return conns, err
		}
		conns = append(conns, c)
		if err := c.get(); err != nil {
			return conns, err
		}
	}
	return conns, nil
}

func closeAll(cs []conn) {
	for _, c := range cs {
		c.Close()
	}
}

func (m *mem) resetPeak() {
	os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", m.cmd.Process.Pid), []byte("5"), 0o200)
}

func (m *mem) report(state string, p proto, conns int, requests int64) {
	var st struct {
		Memory struct {
			HeapAllocBytes uint64 `json:"heap_alloc_bytes"`
			HeapLiveBytes  uint64 `json:"heap_live_bytes"`
			Goroutines     int    `json:"goroutines"`
		} `json:"memory"`
	}
	if resp, err := m.client.Get(m.status); err == nil {
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
	}
	m.client.CloseIdleConnections()
	rss, hwm := procStatus(m.cmd.Process.Pid)
	mb := func(v uint64) string { return fmt.Sprintf("%.1f", float64(v)/(1<<20)) }
	fmt.Printf("| %s | %s | %d | %d | %s | %s | %s | %s | %d |\n", state, p, conns, requests,
		mb(st.Memory.HeapLiveBytes), mb(st.Memory.HeapAllocBytes), mb(rss), mb(hwm), st.Memory.Goroutines)
}

// procStatus returns VmRSS and VmHWM of pid, in bytes.
func procStatus(pid int) (rss, hwm uint64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm
}
