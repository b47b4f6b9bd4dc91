// Package attack attacks an in-process Arka sized like a Raspberry Pi Zero
// 2 W (a 128 MiB Go memory limit, php-fpm with 4 children, pm = ondemand)
// with hostile clients over loopback, one attack of a few seconds per
// test, and asserts the outcome: streams reset and connections closed,
// memory bounded, PHP and the upstream still answering a normal client.
// The engines' limits are shortened (1 s instead of 60 s) so that each
// attack runs in seconds; the README gives the real numbers. Run with
//
//	go test -v ./tests/attack/
//
// to see the figures (t.Log) of each attack.
package attack

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/servertest"
	"github.com/arkaweb/arka/tests/fpmtest"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

const memLimit = 128 << 20 // the Pi Zero 2 W's budget

// target is Arka with a static, a PHP and a proxy route.
type target struct {
	e        *servertest.Env
	upConns  *atomic.Int32 // open connections at the upstream
	upActive *atomic.Int32 // requests the upstream is serving
}

// start starts the target; global, if any, is the body of its [global]
// table.
func start(t *testing.T, o server.Options, global ...string) *target {
	t.Helper()
	if testing.Short() {
		t.Skip("attack suite skipped in -short")
	}
	old := debug.SetMemoryLimit(memLimit)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	fpm := fpmtest.Start(t, fpmtest.Config{MaxChildren: 4, PM: "ondemand"})
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "www", "php"), 0o755)
	os.WriteFile(filepath.Join(dir, "www", "small.html"), []byte("<p>small</p>"), 0o644)
	os.WriteFile(filepath.Join(dir, "www", "large.bin"), bytes.Repeat([]byte("x"), 4<<20), 0o644)
	fpmtest.WriteFiles(t, filepath.Join(dir, "www"), map[string]string{
		"php/page.php":   `<?php echo str_repeat("php page ", 2000);`,
		"php/upload.php": `<?php echo strlen(file_get_contents('php://input'));`,
		"php/big.php":    `<?php echo str_repeat("0123456789abcde\n", 131072);`,
	})
	tg := &target{upConns: new(atomic.Int32), upActive: new(atomic.Int32)}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.upActive.Add(1)
		defer tg.upActive.Add(-1)
		io.Copy(io.Discard, r.Body)
		w.Write(bytes.Repeat([]byte("upstream "), 20000))
	}))
	up.Config.ConnState = func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			tg.upConns.Add(1)
		case http.StateClosed, http.StateHijacked:
			tg.upConns.Add(-1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	site := fmt.Sprintf(`default = true
listen = ["{{HTTP}}"]
[tls]
listen = ["{{HTTPS}}"]
[[routes]]
path = "/php/"
handler = { type = "fastcgi", address = "%s", root = "%s", max_conns = 4 }
[[routes]]
path = "/proxy/"
handler = { type = "proxy", upstreams = ["%s"], strip_prefix = true }
[[routes]]
path = "/"
handler = { type = "static", root = "%s" }
`, fpm.Address, filepath.Join(dir, "www"), up.Listener.Addr().String(), filepath.Join(dir, "www"))
	if len(global) > 0 {
		site += "[global]\n" + strings.Join(global, "\n") + "\n"
	}
	tg.e = servertest.StartWith(t, o, site)
	return tg
}

// normal checks that a normal client is served every route within d.
func (tg *target) normal(t *testing.T, d time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: d, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	defer c.CloseIdleConnections()
	for _, base := range []string{"http://" + tg.e.HTTP, "https://" + tg.e.HTTPS} {
		for _, p := range []string{"/small.html", "/php/page.php", "/proxy/x"} {
			start := time.Now()
			resp, err := c.Get(base + p)
			if err != nil {
				t.Errorf("normal client %s%s: %v", base, p, err)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("normal client %s%s: %d", base, p, resp.StatusCode)
			}
			t.Logf("normal client %s%s: %d in %v", base, p, resp.StatusCode, time.Since(start).Round(time.Millisecond))
		}
	}
}

// heap is the Go heap in use after a collection, and the goroutines.
func heap() (uint64, int) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, runtime.NumGoroutine()
}

// h2conn opens an HTTP/2 connection with a bare framer; window is the
// stream window announced (0: the server may send nothing).
func h2conn(t *testing.T, addr string, window uint32) (*tls.Conn, *http2.Framer, error) {
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { c.Close() })
	c.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
	return c, fr, nil
}

var hpackMu sync.Mutex

func headers(fr *http2.Framer, id uint32, method, path string, end bool) error {
	var b bytes.Buffer
	hpackMu.Lock()
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", method}, {":scheme", "https"}, {":authority", "localhost"}, {":path", path}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	hpackMu.Unlock()
	return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndHeaders: true, EndStream: end})
}

// drain reads frames until the connection ends; it counts RST_STREAMs and
// reports the GOAWAY code (-1 for none).
func drain(c *tls.Conn, fr *http2.Framer, d time.Duration) (resets int, goAway int) {
	goAway = -1
	c.SetReadDeadline(time.Now().Add(d))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			resets++
		case *http2.GoAwayFrame:
			goAway = int(f.ErrCode)
		}
	}
}

// TestZeroWindow: connections that open streams to every handler and never
// let the server send (before: held for ever, 62,000 goroutines and 425 MB
// with 480 connections of 128 streams, PHP slots and upstream connections
// held). Now every stream is reset after the write timeout, the
// connections are closed, memory and goroutines return, and PHP and the
// upstream answer a normal client.
func TestZeroWindow(t *testing.T) {
	tg := start(t, server.Options{WriteTimeout: time.Second, MaxConns: 2048})
	heap0, g0 := heap()
	const conns, streams = 32, 32
	paths := []string{"/small.html", "/large.bin", "/php/page.php", "/proxy/x"}
	type held struct {
		c  *tls.Conn
		fr *http2.Framer
	}
	var all []held
	for i := range conns {
		c, fr, err := h2conn(t, tg.e.HTTPS, 0)
		if err != nil {
			t.Fatal(err)
		}
		for s := range streams {
			headers(fr, uint32(2*s+1), "GET", paths[(i+s)%len(paths)], true)
		}
		all = append(all, held{c, fr})
	}
	time.Sleep(300 * time.Millisecond)
	heapPeak, gPeak := heap()
	start := time.Now()
	var wg sync.WaitGroup
	var resets, goAways atomic.Int32
	for _, h := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, g := drain(h.c, h.fr, 10*time.Second)
			resets.Add(int32(r))
			if g >= 0 {
				goAways.Add(1)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	time.Sleep(200 * time.Millisecond)
	heap1, g1 := heap()
	t.Logf("%d connections x %d streams with zero window: heap %d -> %d -> %d KiB, goroutines %d -> %d -> %d; %d resets, %d GOAWAYs, all closed after %v; upstream connections %d, active %d",
		conns, streams, heap0>>10, heapPeak>>10, heap1>>10, g0, gPeak, g1, resets.Load(), goAways.Load(), took.Round(time.Millisecond), tg.upConns.Load(), tg.upActive.Load())
	if goAways.Load() != conns || took > 5*time.Second {
		t.Errorf("%d of %d connections got GOAWAY, after %v", goAways.Load(), conns, took)
	}
	if heapPeak > memLimit/2 {
		t.Errorf("heap peaked at %d MiB", heapPeak>>20)
	}
	if g1 > g0+256+50 { // the HTTP/2 engine keeps up to 256 idle handler goroutines
		t.Errorf("goroutines %d after the attack, %d before", g1, g0)
	}
	if n := tg.upActive.Load(); n != 0 {
		t.Errorf("upstream still serving %d requests of the attack", n)
	}
	tg.normal(t, 3*time.Second)
}

// TestZeroWindowPHP: 8 HTTP/2 clients (twice php-fpm's 4 children) ask
// for a 2 MiB PHP page and never open their flow-control window (before:
// each held its php-fpm worker until the write timeout reset the stream,
// 60 s by default, so PHP answered nobody else meanwhile). Now the
// response is buffered (memory, then the spool file) and the worker is
// released when the script has finished: a normal client is served at
// once while the stalled streams are still open (the write timeout here is
// 30 s, so it is not what frees the workers), and a stalled client that
// opens its window gets the whole page.
func TestZeroWindowPHP(t *testing.T) {
	tg := start(t, server.Options{WriteTimeout: 30 * time.Second})
	type held struct {
		c  *tls.Conn
		fr *http2.Framer
	}
	var all []held
	for range 8 {
		c, fr, err := h2conn(t, tg.e.HTTPS, 0)
		if err != nil {
			t.Fatal(err)
		}
		headers(fr, 1, "GET", "/php/big.php", true)
		all = append(all, held{c, fr})
	}
	time.Sleep(time.Second) // every script has run (4 at a time, a few ms each)
	heapHeld, _ := heap()
	start := time.Now()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	defer c.CloseIdleConnections()
	for _, base := range []string{"http://" + tg.e.HTTP, "https://" + tg.e.HTTPS} {
		resp, err := c.Get(base + "/php/page.php")
		if err != nil {
			t.Fatalf("normal client while 8 streams sit at a zero window: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("normal client: %d", resp.StatusCode)
		}
	}
	took := time.Since(start)
	t.Logf("8 streams at a zero window on a 2 MiB PHP page (4 php-fpm children): a normal client served twice in %v; heap %d KiB", took.Round(time.Millisecond), heapHeld>>10)
	if took > 2*time.Second {
		t.Errorf("a normal PHP client took %v while stalled clients held the page", took)
	}
	// A stalled client opens its window and gets every byte.
	h := all[0]
	h.fr.WriteWindowUpdate(0, 1<<30)
	h.fr.WriteWindowUpdate(1, 1<<30)
	h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := 0
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatalf("after %d bytes: %v", got, err)
		}
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 1 {
			got += len(d.Data())
			if d.StreamEnded() {
				break
			}
		}
		if r, ok := f.(*http2.RSTStreamFrame); ok {
			t.Fatalf("stream reset (%v) after %d bytes", r.ErrCode, got)
		}
	}
	if got != 2<<20 {
		t.Errorf("the stalled client got %d bytes, want %d", got, 2<<20)
	}
}

// TestSlowloris: clients that re-open connections and drip header bytes to
// hold every slot (before: 84% of plain-HTTP requests refused at 4% CPU).
// Now they are closed first when the limit is reached, and one address gets
// at most its share; every normal request is served.
func TestSlowloris(t *testing.T) {
	const limit = 256
	tg := start(t, server.Options{MaxConns: limit})
	stop := make(chan struct{})
	var held atomic.Int32
	var wg sync.WaitGroup
	for i := range 4 { // four attacking addresses, each re-opening what it loses
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(10+i))}}
			var cs []net.Conn
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := d.Dial("tcp", tg.e.HTTP)
				if err != nil {
					time.Sleep(time.Millisecond)
					continue
				}
				c.Write([]byte("GET / HTTP/1.1\r\nX-a: "))
				time.Sleep(time.Millisecond) // some 4,000 connections a second in all
				cs = append(cs, c)
				if len(cs) > 2*limit {
					cs[0].Close()
					cs = cs[1:]
				}
				held.Store(int32(len(cs)))
			}
		}()
	}
	time.Sleep(time.Second) // the attackers fill the slots
	ok, refused := 0, 0
	c := &http.Client{Timeout: 2 * time.Second}
	for range 50 {
		resp, err := c.Get("http://" + tg.e.HTTP + "/small.html")
		if err != nil {
			if refused == 0 {
				t.Logf("first refused: %v", err)
			}
			refused++
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ok++
		c.CloseIdleConnections() // a new connection each time, as new visitors
	}
	close(stop)
	wg.Wait()
	t.Logf("slowloris from 4 addresses at a %d-connection limit: %d of 50 normal requests served, %d refused", limit, ok, refused)
	// A connection accepted in the instant every slot is held by ones the
	// engine has not started yet can still be refused: rarely (0 or 1 of
	// 50 here, under the race detector), where it was 42 of 50 before.
	if refused > 3 {
		t.Errorf("%d of 50 normal requests refused", refused)
	}
}

// TestSlowBodiesToPHP: four clients send headers and then a slow or absent
// body to PHP, which has 4 workers (before: PHP down for everyone for as
// long as they liked; 200 such streams held 200 upstream connections). Now
// bodies are buffered before a worker or upstream connection is taken, and
// are cut off by the body timeout and rate.
func TestSlowBodiesToPHP(t *testing.T) {
	tg := start(t, server.Options{}, `body_timeout = "1s"`, `body_min_rate = "1000B/s"`)
	var conns []net.Conn
	for i := range 8 {
		c, err := net.Dial("tcp", tg.e.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		path := "/php/upload.php"
		if i%2 == 1 {
			path = "/proxy/upload"
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc", path)
		conns = append(conns, c)
	}
	// 200 HTTP/2 streams with bodies that never come, to the proxy.
	hc, fr, err := h2conn(t, tg.e.HTTPS, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for s := range 100 {
		headers(fr, uint32(2*s+1), "POST", "/proxy/upload", false)
	}
	go drain(hc, fr, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	t.Logf("while 8 slow uploads and 100 silent HTTP/2 bodies are open: upstream connections %d, active %d", tg.upConns.Load(), tg.upActive.Load())
	if n := tg.upActive.Load(); n != 0 {
		t.Errorf("the upstream serves %d requests whose bodies have not arrived", n)
	}
	tg.normal(t, 2*time.Second)
	start := time.Now()
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		if !strings.HasPrefix(string(b), "HTTP/1.1 408") {
			t.Errorf("slow upload answered %.40q, want 408", b)
		}
	}
	t.Logf("slow uploads answered 408 within %v", time.Since(start).Round(time.Millisecond))
}

// TestContinuationFlood: empty CONTINUATION frames without end (before:
// 89 million accepted in 20 s, half a core, the connection kept).
func TestContinuationFlood(t *testing.T) {
	tg := start(t, server.Options{})
	c, fr, err := h2conn(t, tg.e.HTTPS, 65535)
	if err != nil {
		t.Fatal(err)
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}, EndStream: true})
	var sent atomic.Int64
	go func() {
		for fr.WriteContinuation(1, false, nil) == nil {
			sent.Add(1)
		}
	}()
	start := time.Now()
	_, g := drain(c, fr, 5*time.Second)
	t.Logf("CONTINUATION flood: GOAWAY %d after %v, %d frames sent", g, time.Since(start).Round(time.Millisecond), sent.Load())
	if g != int(http2.ErrCodeEnhanceYourCalm) {
		t.Errorf("GOAWAY code %d, want ENHANCE_YOUR_CALM", g)
	}
	tg.normal(t, 2*time.Second)
}

// TestRapidReset: a flood of HEADERS+RST_STREAM gets GOAWAY; a client
// cancelling a stream now and then, as a browser tab does, does not
// (before: GOAWAY after about 360 cancellations over any length of time).
func TestRapidReset(t *testing.T) {
	tg := start(t, server.Options{})
	c, fr, err := h2conn(t, tg.e.HTTPS, 65535)
	if err != nil {
		t.Fatal(err)
	}
	var id uint32 = 1
	for range 2000 {
		headers(fr, id, "GET", "/php/page.php", true)
		fr.WriteRSTStream(id, http2.ErrCodeCancel)
		id += 2
	}
	_, g := drain(c, fr, 5*time.Second)
	t.Logf("rapid reset flood of 2000 streams: GOAWAY %d", g)
	if g != int(http2.ErrCodeEnhanceYourCalm) {
		t.Errorf("flood: GOAWAY %d, want ENHANCE_YOUR_CALM", g)
	}

	c, fr, err = h2conn(t, tg.e.HTTPS, 65535)
	if err != nil {
		t.Fatal(err)
	}
	goAway := make(chan int, 1)
	go func() { _, g := drain(c, fr, 30*time.Second); goAway <- g }()
	id = 1
	for range 500 { // 500 cancellations at 100 a second, above the old lifetime count
		headers(fr, id, "GET", "/php/page.php", true)
		fr.WriteRSTStream(id, http2.ErrCodeCancel)
		id += 2
		time.Sleep(10 * time.Millisecond)
		select {
		case g := <-goAway:
			t.Fatalf("a client cancelling 100 streams a second got GOAWAY %d", g)
		default:
		}
	}
	c.Close()
}
