package fastcgi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/internal/fcgi"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// TestSaturation: 64 clients against max_conns = 4 and 4 php-fpm workers,
// on a script that sleeps 20 ms. Every request succeeds; requests get
// their connection in exactly the order they arrived; php-fpm starts them
// in that order up to the overlap that 4 parallel connections allow; no
// connection is ever idle while a request waits; never more than 4
// connections.
func TestSaturation(t *testing.T) {
	const (
		maxConns = 4
		clients  = 64
		perC     = 5
	)
	e := newEnv(t, fpmtest.Config{MaxChildren: maxConns})
	orderLog := filepath.Join(t.TempDir(), "order.log")
	dialer := &recordingDialer{}
	h := e.handler(t, func(c *config.FastCGI, o *Options) {
		c.MaxConns = config.AutoInt{Set: true, Value: maxConns}
		c.Queue = config.Queue{Size: config.AutoInt{Set: true, Value: 1000}}
		c.Env = map[string]string{"ORDER_LOG": orderLog}
		o.Dial = dialer.dial
	})
	var (
		mu      sync.Mutex
		arrived []string
		granted []string
	)
	h.pool.testHook = func(event string, r *http.Request) {
		seq := r.Header.Get("X-Seq")
		switch event {
		case "arrive":
			arrived = append(arrived, seq)
		case "grant":
			granted = append(granted, seq)
		}
	}
	p := protos(t, h)[2] // HTTP/2: all clients share one connection, the server sees them at once
	if testing.Short() {
		p = protos(t, h)[0]
	}

	// Watch the gauges while the load runs.
	stop := make(chan struct{})
	var maxOpen, idleWhileQueued, samples atomic.Int64
	var watch sync.WaitGroup
	watch.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := h.Stats()
			if int64(s.Open) > maxOpen.Load() {
				maxOpen.Store(int64(s.Open))
			}
			if s.Idle > 0 && s.Queued > 0 {
				idleWhileQueued.Add(1)
			}
			samples.Add(1)
			time.Sleep(200 * time.Microsecond)
		}
	})

	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for i := range perC {
				req, _ := http.NewRequest("GET", p.url+"/app/sleep.php?ms=20", nil)
				req.Header.Set("X-Seq", fmt.Sprintf("c%d-%d", c, i))
				res, err := p.client.Do(req)
				if err != nil {
					failed.Add(1)
					t.Errorf("request: %v", err)
					return
				}
				var b bytes.Buffer
				b.ReadFrom(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || b.String() != "slept\n" {
					failed.Add(1)
					t.Errorf("got %d %q", res.StatusCode, b.String())
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	watch.Wait()

	total := clients * perC
	s := h.Stats()
	t.Logf("%d requests in %v (%.0f/s; ideal %.0f/s), %d gauge samples, stats %+v",
		total, elapsed, float64(total)/elapsed.Seconds(), float64(maxConns)/0.020, samples.Load(), s)
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed", failed.Load())
	}
	if s.Requests != uint64(total) || s.Errors != 0 || s.Rejected != 0 || s.TimedOut != 0 {
		t.Errorf("stats %+v", s)
	}
	if m := maxOpen.Load(); m > maxConns {
		t.Errorf("%d connections open at once, max_conns %d", m, maxConns)
	}
	if n := dialer.count(); n > maxConns {
		t.Errorf("%d connections dialed, want at most %d (kept and reused)", n, maxConns)
	}
	if n := idleWhileQueued.Load(); n > 0 {
		t.Errorf("a connection was idle while requests waited in %d samples", n)
	}
	if n := h.pool.idleWhileWaiting.Load(); n > 0 {
		t.Errorf("pool invariant: idle connection while requests waited, %d times", n)
	}

	// Strict FIFO: the grant order is the arrival order.
	mu.Lock()
	defer mu.Unlock()
	if len(arrived) != total || len(granted) != total {
		t.Fatalf("arrived %d granted %d, want %d", len(arrived), len(granted), total)
	}
	for i := range arrived {
		if arrived[i] != granted[i] {
			t.Fatalf("request #%d to arrive was %s, #%d to get a connection was %s", i, arrived[i], i, granted[i])
		}
	}

	// PHP's own log: the order scripts started. The grant order above is
	// the queue's; between its grant and php-fpm's reading the request a
	// goroutine may be delayed, and meanwhile the other connections carry
	// later requests. Without scheduling delays a request is overtaken by
	// at most maxConns-1 later ones; allow some noise (the race detector
	// on 2 loaded cores), far less than a LIFO or random order gives
	// (hundreds of places here).
	data, err := os.ReadFile(orderLog)
	if err != nil {
		t.Fatal(err)
	}
	started := strings.Fields(string(data))
	if len(started) != total {
		t.Fatalf("PHP logged %d starts, want %d", len(started), total)
	}
	pos := make(map[string]int, total)
	for i, s := range started {
		pos[s] = i
	}
	worst := 0
	for i, seq := range arrived {
		// How many requests that arrived later started in PHP earlier?
		overtaken := 0
		for _, later := range arrived[i+1:] {
			if pos[later] < pos[seq] {
				overtaken++
			}
		}
		worst = max(worst, overtaken)
	}
	t.Logf("worst overtaking in PHP's start order: %d places (%d without delays)", worst, maxConns-1)
	if worst > 8*maxConns {
		t.Errorf("a request was overtaken by %d later ones in PHP's log: not FIFO", worst)
	}
}

// TestQueueFull: with the one connection busy and the queue full, the next
// request gets 503 with Retry-After at once (while the busy request still
// holds the connection: it never waited for one); the queued ones are
// served. The busy script holds its connection until the test releases
// it, not for a time a loaded machine may outlast, and the others are
// sent once it holds it.
func TestQueueFull(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 1})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		c.MaxConns = config.AutoInt{Set: true, Value: 1}
		c.Queue = config.Queue{Size: config.AutoInt{Set: true, Value: 2}}
	})
	p := protos(t, h)[0]
	gate := filepath.Join(t.TempDir(), "release")
	released := false
	release := func() {
		if !released {
			released = true
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer release() // also when the test fails half way
	var wg sync.WaitGroup
	codes := make([]int, 3)
	bodies := make([]string, 3)
	for i := range 3 {
		wg.Go(func() {
			res, body := get(t, p.client, p.url+"/app/gate.php?f="+url.QueryEscape(gate))
			codes[i], bodies[i] = res.StatusCode, body
		})
		// The first request holds the connection before the others come:
		// while its connection is still being opened and probed it waits
		// in the queue too, and a third arrival would find the queue full.
		waitFor(t, "request to arrive", 10*time.Second, func() bool { s := h.Stats(); return s.Busy == 1 && s.Queued == i })
	}
	if s := h.Stats(); s.Queued != 2 || s.Busy != 1 {
		t.Fatalf("stats %+v", s)
	}
	// At once: the first request holds the connection until released, so
	// an overflow that waited for one would time out here.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/app/hello.php", nil)
	res, body := do(t, p.client, req)
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
		t.Errorf("overflow: %d %q Retry-After %q", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	release()
	wg.Wait()
	for i, c := range codes {
		if c != 200 || bodies[i] != "released\n" {
			t.Errorf("queued request %d: %d %q", i, c, bodies[i])
		}
	}
	if s := h.Stats(); s.Rejected != 1 || s.Errors != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestQueueTimeout: a request that waits longer than queue.timeout gets
// 503 with Retry-After.
func TestQueueTimeout(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 1})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		c.MaxConns = config.AutoInt{Set: true, Value: 1}
		d := config.Duration(100 * time.Millisecond)
		c.Queue = config.Queue{Size: config.AutoInt{Set: true, Value: 10}, Timeout: d}
	})
	p := protos(t, h)[0]
	done := make(chan int)
	go func() {
		res, _ := get(t, p.client, p.url+"/app/sleep.php?ms=700")
		done <- res.StatusCode
	}()
	waitFor(t, "slow request to start", 5*time.Second, func() bool { return h.Stats().Busy == 1 })
	start := time.Now()
	res, _ := get(t, p.client, p.url+"/app/hello.php")
	d := time.Since(start)
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || d < 90*time.Millisecond || d > 600*time.Millisecond {
		t.Errorf("got %d Retry-After %q after %v", res.StatusCode, res.Header.Get("Retry-After"), d)
	}
	if c := <-done; c != 200 {
		t.Errorf("slow request: %d", c)
	}
	if s := h.Stats(); s.TimedOut != 1 || s.Queued != 0 {
		t.Errorf("stats %+v", s)
	}
	// The pool is fine afterwards.
	if res, _ := get(t, p.client, p.url+"/app/hello.php"); res.StatusCode != 200 {
		t.Errorf("after: %d", res.StatusCode)
	}
}

// TestClientGoneInQueue: a client that leaves while queued leaves the
// queue; the order of the others is kept.
func TestClientGoneInQueue(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 1})
	for i, name := range []string{"h1", "h1+tls", "h2"} { // HTTP/2: the client leaves with RST_STREAM
		t.Run(name, func(t *testing.T) {
			h := e.handler(t, func(c *config.FastCGI, _ *Options) {
				c.MaxConns = config.AutoInt{Set: true, Value: 1}
			})
			p := protos(t, h)[i]
			done := make(chan int, 2)
			go func() { res, _ := get(t, p.client, p.url+"/app/sleep.php?ms=300"); done <- res.StatusCode }()
			waitFor(t, "first request", 5*time.Second, func() bool { return h.Stats().Busy == 1 })
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/app/hello.php", nil)
			go func() { p.client.Do(req) }()
			waitFor(t, "second request queued", 5*time.Second, func() bool { return h.Stats().Queued == 1 })
			cancel()
			waitFor(t, "second request to leave", 5*time.Second, func() bool { return h.Stats().Queued == 0 })
			if c := <-done; c != 200 {
				t.Errorf("first: %d", c)
			}
			if res, _ := get(t, p.client, p.url+"/app/hello.php"); res.StatusCode != 200 {
				t.Errorf("after: %d", res.StatusCode)
			}
			waitFor(t, "counters", 5*time.Second, func() bool { return h.Stats().Aborted == 1 })
		})
	}
}

// TestKilledMidRequest: php-fpm dies under a request: that request gets
// 502; once php-fpm is back the next requests succeed, the stale kept
// connections being replaced without failing anyone.
func TestKilledMidRequest(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 2})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		c.MaxConns = config.AutoInt{Set: true, Value: 2}
	})
	p := protos(t, h)[0]
	// Warm up: two kept connections.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { get(t, p.client, p.url+"/app/sleep.php?ms=50") })
	}
	wg.Wait()
	if s := h.Stats(); s.Idle != 2 {
		t.Fatalf("want 2 idle kept connections, stats %+v", s)
	}

	done := make(chan *http.Response, 1)
	go func() {
		res, _ := get(t, p.client, p.url+"/app/sleep.php?ms=3000")
		done <- res
	}()
	waitFor(t, "slow request in PHP", 5*time.Second, func() bool { return h.Stats().Busy == 1 })
	time.Sleep(100 * time.Millisecond)
	e.fpm.Kill()
	select {
	case res := <-done:
		if res.StatusCode != 502 {
			t.Errorf("in-flight request: %d, want 502", res.StatusCode)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("in-flight request not answered after php-fpm died")
	}

	e.fpm.Restart()
	for i := range 6 {
		res, body := get(t, p.client, p.url+"/app/hello.php")
		if res.StatusCode != 200 {
			t.Errorf("request %d after restart: %d %q", i, res.StatusCode, body)
		}
	}
	// POST takes the other path (a peek before sending).
	for i := range 3 {
		req, _ := http.NewRequest("POST", p.url+"/app/form.php", strings.NewReader("a=b"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if res, body := do(t, p.client, req); res.StatusCode != 200 {
			t.Errorf("POST %d after restart: %d %q", i, res.StatusCode, body)
		}
	}
	s := h.Stats()
	t.Logf("stats %+v", s)
	if s.Redialed == 0 || s.Errors != 1 || s.Open > 2 {
		t.Errorf("stats %+v", s)
	}
	if !strings.Contains(e.log.String(), "route=/app/") {
		t.Errorf("no error logged: %s", e.log.String())
	}
}

// TestMaxRequestsRecycling: php-fpm workers exit after 3 requests each
// (pm.max_requests), closing their kept connections; nobody notices. Over
// a unix socket and over TCP, with GET and POST.
func TestMaxRequestsRecycling(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "unix", true: "tcp"}[tcp], func(t *testing.T) {
			e := newEnv(t, fpmtest.Config{MaxChildren: 2, MaxRequests: 3, TCP: tcp})
			h := e.handler(t, func(c *config.FastCGI, _ *Options) {
				c.MaxConns = config.AutoInt{Set: true, Value: 2}
			})
			p := protos(t, h)[0]
			var wg sync.WaitGroup
			var bad atomic.Int64
			for c := range 4 {
				wg.Go(func() {
					for i := range 15 {
						var req *http.Request
						if (c+i)%2 == 0 {
							req, _ = http.NewRequest("GET", p.url+"/app/hello.php", nil)
						} else {
							req, _ = http.NewRequest("POST", p.url+"/app/form.php", strings.NewReader("x=1"))
							req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
						}
						res, err := p.client.Do(req)
						if err != nil {
							t.Error(err)
							bad.Add(1)
							continue
						}
						res.Body.Close()
						if res.StatusCode != 200 {
							bad.Add(1)
						}
					}
				})
			}
			wg.Wait()
			s := h.Stats()
			t.Logf("stats %+v", s)
			if bad.Load() > 0 || s.Errors > 0 {
				t.Errorf("%d failed requests; log:\n%s", bad.Load(), e.log.String())
			}
			if s.Redialed == 0 {
				t.Errorf("no stale connection seen: recycling did not happen?")
			}
		})
	}
}

// TestMaxRequestsOne: with pm.max_requests = 1 every worker exits after
// one request, and the probe of a new connection is that request: the
// worker gives the connection up right after answering the probe. The
// request that follows on it must go to a new connection, not fail.
func TestMaxRequestsOne(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "unix", true: "tcp"}[tcp], func(t *testing.T) {
			e := newEnv(t, fpmtest.Config{MaxChildren: 2, MaxRequests: 1, TCP: tcp})
			h := e.handler(t, func(c *config.FastCGI, _ *Options) {
				c.MaxConns = config.AutoInt{Set: true, Value: 2}
			})
			p := protos(t, h)[0]
			for i := range 10 {
				var req *http.Request
				if i%2 == 0 {
					req, _ = http.NewRequest("GET", p.url+"/app/hello.php", nil)
				} else {
					req, _ = http.NewRequest("POST", p.url+"/app/form.php", strings.NewReader("x=1"))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				res, body := do(t, p.client, req)
				if res.StatusCode != 200 {
					t.Errorf("request %d: %d %q", i, res.StatusCode, body)
				}
			}
			if s := h.Stats(); s.Errors > 0 {
				t.Errorf("stats %+v; log:\n%s", s, e.log.String())
			}
		})
	}
}

// TestClientDisconnect: the client leaves during a slow script: Arka sends
// ABORT_REQUEST, waits for the script to end, closes that connection, and
// the slot serves the next request.
func TestClientDisconnect(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 1})
	dialer := &recordingDialer{}
	h := e.handler(t, func(c *config.FastCGI, o *Options) {
		c.MaxConns = config.AutoInt{Set: true, Value: 1}
		o.Dial = dialer.dial
	})
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			// A first request opens the client's connection, so the
			// cancellation below cannot fall into a TLS handshake.
			get(t, p.client, p.url+"/app/hello.php")
			before := countAborts(dialer)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for deadline := time.Now().Add(5 * time.Second); h.Stats().Busy == 0 && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(50 * time.Millisecond)
				cancel()
			}()
			req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/app/sleep.php?ms=600", nil)
			if res, err := p.client.Do(req); err == nil {
				res.Body.Close()
				t.Fatalf("request finished: %d", res.StatusCode)
			}
			waitFor(t, "abort to be sent", 5*time.Second, func() bool { return countAborts(dialer) == before+1 })
			// The next request is served once the script has ended.
			res, body := get(t, p.client, p.url+"/app/hello.php")
			if res.StatusCode != 200 || body != "hello from php\n" {
				t.Errorf("next request: %d %q", res.StatusCode, body)
			}
			if s := h.Stats(); s.Open > 1 || s.Errors != 0 {
				t.Errorf("stats %+v", s)
			}
		})
	}
	if s := h.Stats(); s.Aborted != 3 {
		t.Errorf("Aborted = %d, want 3", s.Aborted)
	}
}

// countAborts counts the ABORT_REQUEST records sent on all connections.
func countAborts(d *recordingDialer) int {
	n := 0
	for _, c := range d.all() {
		n += countRecords(c.written(), fcgi.TypeAbortRequest)
	}
	return n
}

// countRecords counts the records of type typ in a byte stream.
func countRecords(stream []byte, typ uint8) int {
	rd := fcgi.NewReader(bufio.NewReader(bytes.NewReader(stream)))
	n := 0
	for {
		h, err := rd.Next()
		if err != nil {
			return n
		}
		if h.Type == typ {
			n++
		}
	}
}

// TestShutdownDrains: Close waits for requests in flight and queued, then
// closes every connection; later requests get 503.
func TestShutdownDrains(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 1})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		c.MaxConns = config.AutoInt{Set: true, Value: 1}
	})
	p := protos(t, h)[0]
	codes := make(chan int, 2)
	for range 2 {
		go func() { res, _ := get(t, p.client, p.url+"/app/sleep.php?ms=200"); codes <- res.StatusCode }()
	}
	waitFor(t, "one busy, one queued", 5*time.Second, func() bool { s := h.Stats(); return s.Busy == 1 && s.Queued == 1 })
	closed := make(chan error)
	go func() { closed <- h.Close() }()
	waitFor(t, "closing", 5*time.Second, func() bool {
		res, _ := get(t, p.client, p.url+"/app/hello.php")
		return res.StatusCode == 503
	})
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if c := <-codes; c != 200 {
			t.Errorf("drained request: %d", c)
		}
	}
	if s := h.Stats(); s.Open != 0 || s.Idle != 0 {
		t.Errorf("after Close: %+v", s)
	}
}

// TestClientDisconnectStreaming: the client of a script that streams for
// 10 s leaves; php-fpm ignores ABORT_REQUEST, so after a grace period the
// connection is closed under the script, whose next write fails and ends
// it. The slot serves the next request within seconds, not 10.
func TestClientDisconnectStreaming(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the abort grace period")
	}
	e := newEnv(t, fpmtest.Config{MaxChildren: 1})
	for i, name := range []string{"h1", "h1+tls", "h2"} { // HTTP/2: the client leaves with RST_STREAM
		t.Run(name, func(t *testing.T) {
			h := e.handler(t, func(c *config.FastCGI, _ *Options) { c.MaxConns = config.AutoInt{Set: true, Value: 1} })
			p := protos(t, h)[i]
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/app/stream.php", nil)
			res, err := p.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(res.Body).ReadString('\n')
			if err != nil || line != "tick 0\n" {
				t.Fatalf("first line %q %v", line, err)
			}
			cancel()
			res.Body.Close()
			start := time.Now()
			res2, body := get(t, p.client, p.url+"/app/hello.php")
			d := time.Since(start)
			t.Logf("next request served after %v", d)
			if res2.StatusCode != 200 || body != "hello from php\n" || d > abortGrace+2*time.Second {
				t.Errorf("next request: %d %q after %v", res2.StatusCode, body, d)
			}
			if s := h.Stats(); s.Aborted != 1 || s.Errors != 0 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

// workerKill is the setup of the tests that kill the php-fpm worker
// running a script: slowpost.php and silentsleep.php record each run in
// runLog and their worker's pid in pidFile (RUN_LOG, PID_FILE).
type workerKill struct {
	h               *Handler
	p               proto // HTTP/1.1
	runLog, pidFile string
}

// newWorkerKill builds the handler (as mod configures it) and makes one
// request, so that the pool keeps a connection.
func (e *env) newWorkerKill(t *testing.T, mod func(*config.FastCGI)) *workerKill {
	t.Helper()
	dir := t.TempDir()
	w := &workerKill{runLog: filepath.Join(dir, "runs"), pidFile: filepath.Join(dir, "pid")}
	w.h = e.handler(t, func(c *config.FastCGI, _ *Options) {
		mod(c)
		c.Env = map[string]string{"RUN_LOG": w.runLog, "PID_FILE": w.pidFile}
	})
	w.p = protos(t, w.h)[0]
	get(t, w.p.client, w.p.url+"/app/hello.php") // a kept connection
	return w
}

// kill waits for the script to start, kills its worker with SIGKILL and
// checks that the request (done gives its status) was answered 502
// within wait, and that the script ran once: it was not sent again.
func (w *workerKill) kill(t *testing.T, what string, done <-chan int, wait time.Duration) {
	t.Helper()
	var pid int
	waitFor(t, "script to start", 5*time.Second, func() bool {
		b, _ := os.ReadFile(w.pidFile)
		pid, _ = strconv.Atoi(string(b))
		return pid > 0
	})
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case code := <-done:
		if code != http.StatusBadGateway {
			t.Errorf("%s whose worker was killed: %d, want 502", what, code)
		}
	case <-time.After(wait):
		t.Fatal("no answer after the worker was killed")
	}
	if b, _ := os.ReadFile(w.runLog); string(b) != "run\n" {
		t.Errorf("script ran %d times, want once", strings.Count(string(b), "run"))
	}
}

// served waits for php-fpm's new worker: the route answers 200 again.
func (w *workerKill) served(t *testing.T) {
	t.Helper()
	waitFor(t, "a new worker", 5*time.Second, func() bool {
		res, _ := get(t, w.p.client, w.p.url+"/app/hello.php")
		return res.StatusCode == 200
	})
}

// TestWorkerKilledUnderPOST: the php-fpm worker running a POST dies
// (php-fpm itself stays up). The POST gets 502 and is not run a second
// time, though a new connection would work: only requests php-fpm did not
// run are sent again.
func TestWorkerKilledUnderPOST(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "unix", true: "tcp"}[tcp], func(t *testing.T) {
			e := newEnv(t, fpmtest.Config{MaxChildren: 1, TCP: tcp})
			w := e.newWorkerKill(t, func(c *config.FastCGI) {
				c.MaxConns = config.AutoInt{Set: true, Value: 1}
			})
			done := make(chan int)
			go func() {
				req, _ := http.NewRequest("POST", w.p.url+"/app/slowpost.php", strings.NewReader("a=1"))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				res, _ := do(t, w.p.client, req)
				done <- res.StatusCode
			}()
			w.kill(t, "POST", done, 5*time.Second)
			w.served(t)
		})
	}
}

// TestWorkerKilledUnderUpload: the php-fpm worker reading a streamed
// request body (request_buffering = false) dies. That is php-fpm's
// failure, not the client's: 502 and an error-log line, not 400.
func TestWorkerKilledUnderUpload(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 1})
	streaming := false
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		c.MaxConns = config.AutoInt{Set: true, Value: 1}
		c.RequestBuffering = &streaming
	})
	p := protos(t, h)[0]
	_, body := get(t, p.client, p.url+"/app/pid.php") // the one worker, kept
	pid, err := strconv.Atoi(body)
	if err != nil || pid <= 0 {
		t.Fatalf("pid.php: %q", body)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest("POST", p.url+"/app/form.php", pr)
	req.ContentLength = 1 << 20 // streamed: larger than smallBody
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	go func() {
		chunk := []byte(strings.Repeat("a", 32<<10))
		for {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	done := make(chan int, 1)
	go func() {
		res, err := p.client.Do(req)
		if err != nil {
			done <- 0
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	waitFor(t, "the upload to start", 5*time.Second, func() bool { return h.Stats().Busy == 1 })
	time.Sleep(100 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != http.StatusBadGateway {
			t.Errorf("upload whose worker died: %d, want 502; fpm log:\n%s", code, e.fpm.Log())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer after the worker died")
	}
	if !strings.Contains(e.log.String(), "script=/app/form.php") {
		t.Errorf("not logged:\n%s", e.log.String())
	}
}

// TestWorkerKilledAfterRestart is the QA sequence: php-fpm is restarted
// gracefully (SIGQUIT to the master, then started again), one request
// is served (on a new connection, which the pool then keeps), and the
// worker running the next request, a GET of a script that sleeps 8 s
// without output, is killed with SIGKILL. That request gets 502 at once,
// and the script ran once: it is not sent again on a new connection
// (where it would run a second time and, being slower than read_timeout,
// end in a 504 after read_timeout). Over a unix socket and TCP, with
// static and ondemand process managers.
func TestWorkerKilledAfterRestart(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  fpmtest.Config
	}{
		{"unix-static", fpmtest.Config{MaxChildren: 2}},
		{"tcp-static", fpmtest.Config{MaxChildren: 2, TCP: true}},
		{"unix-ondemand", fpmtest.Config{MaxChildren: 2, PM: "ondemand"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.cfg)
			readTimeout := config.Duration(5 * time.Second)
			w := e.newWorkerKill(t, func(c *config.FastCGI) { c.ReadTimeout = readTimeout })

			e.fpm.Quit()
			e.fpm.Restart()
			if res, body := get(t, w.p.client, w.p.url+"/app/hello.php"); res.StatusCode != 200 {
				t.Fatalf("first request after the restart: %d %q", res.StatusCode, body)
			}

			done := make(chan int, 1)
			go func() {
				res, _ := get(t, w.p.client, w.p.url+"/app/silentsleep.php?n=8")
				done <- res.StatusCode
			}()
			w.kill(t, "GET", done, time.Duration(readTimeout)+3*time.Second)
			if s := w.h.Stats(); s.Errors != 1 {
				t.Errorf("stats %+v", s)
			}
			// php-fpm replaces the worker; the route keeps working.
			w.served(t)
		})
	}
}

// loadRound sends n concurrent GETs of path through c and returns the
// status codes seen and the slowest answer.
func loadRound(t *testing.T, c *http.Client, url string, n int) (map[int]int, time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	var slowest time.Duration
	for range n {
		wg.Go(func() {
			start := time.Now()
			res, err := c.Get(url)
			code := 0
			if err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				code = res.StatusCode
			}
			d := time.Since(start)
			mu.Lock()
			codes[code]++
			slowest = max(slowest, d)
			mu.Unlock()
		})
	}
	wg.Wait()
	return codes, slowest
}

// TestCapacityLearnt: max_conns 6 against a php-fpm with 2 workers. The
// third connection gets no worker; the pool notices within the probe
// timeout, logs why, and serves everything with 2 connections instead of
// leaving requests stuck in php-fpm's backlog.
func TestCapacityLearnt(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 2})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) { c.MaxConns = config.AutoInt{Set: true, Value: 6} })
	h.pool.probeTimeout = 200 * time.Millisecond
	p := protos(t, h)[0]
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	for round := range 3 {
		codes, slowest := loadRound(t, client, p.url+"/app/sleep.php?ms=30", 12)
		s := h.Stats()
		t.Logf("round %d: %v, slowest %v, stats %+v", round, codes, slowest, s)
		if codes[200] != 12 {
			t.Fatalf("round %d: %v", round, codes)
		}
		if slowest > 3*time.Second {
			t.Errorf("round %d: a request took %v", round, slowest)
		}
	}
	s := h.Stats()
	if s.Capped == 0 || s.Limit != 2 || s.Open > 2 || s.MaxConns != 6 {
		t.Errorf("stats %+v", s)
	}
	if !strings.Contains(e.log.String(), "pm.max_children") {
		t.Errorf("no warning logged:\n%s", e.log.String())
	}
}

// TestSharedPool: two routes to one php-fpm with 2 workers, each allowed 2
// connections. Separate pools would keep 4 connections, two of them in
// php-fpm's backlog behind the other route's idle ones; with shared Pools
// both routes use the same 2 connections and nothing stalls.
func TestSharedPool(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 2})
	var pools Pools
	dialer := &recordingDialer{}
	mk := func(route string) *Handler {
		cfg := &config.FastCGI{Address: e.fpm.Address, Root: e.root, MaxConns: config.AutoInt{Set: true, Value: 2}}
		h, err := New(route, complete(t, cfg), Options{Pools: &pools, Dial: dialer.dial, Logger: newTestLogger(e.log)})
		if err != nil {
			t.Fatal(err)
		}
		h.pool.probeTimeout = 5 * time.Second // a stall would show as a slow answer, not a cap
		return h
	}
	a, b := mk("/app/"), mk("/")
	if a.pool != b.pool {
		t.Fatal("handlers of one address got different pools")
	}
	mux := http.NewServeMux()
	mux.Handle("/app/", a)
	mux.Handle("/", b)
	p := protos(t, mux)[0]
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	for range 3 {
		for _, path := range []string{"/app/sleep.php?ms=20", "/app/hello.php"} {
			codes, slowest := loadRound(t, client, p.url+path, 8)
			if codes[200] != 8 || slowest > 2*time.Second {
				t.Fatalf("%s: %v, slowest %v", path, codes, slowest)
			}
		}
		// The other route, through the fallback-less root: index.php.
		codes, slowest := loadRound(t, client, p.url+"/index.php", 8)
		if codes[200] != 8 || slowest > 2*time.Second {
			t.Fatalf("/index.php: %v, slowest %v", codes, slowest)
		}
	}
	// Connections that carried a record: under load a probe slower than
	// kickEvery makes the pool open and close others (writing nothing) to
	// wake php-fpm, which are no connections kept.
	used := 0
	for _, c := range dialer.all() {
		if len(c.written()) > 0 {
			used++
		}
	}
	if used > 2 {
		t.Errorf("%d connections used for 2 workers (%d dialed)", used, dialer.count())
	}
	// Closing one handler leaves the pool to the other.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if res, _ := get(t, client, p.url+"/index.php"); res.StatusCode != 200 {
		t.Errorf("after closing the other handler: %d", res.StatusCode)
	}
	if res, _ := get(t, client, p.url+"/app/hello.php"); res.StatusCode != 503 {
		t.Errorf("closed handler: %d, want 503", res.StatusCode)
	}
	if s := b.Stats(); s.Open == 0 {
		t.Errorf("pool closed with a handler still using it: %+v", s)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.Open != 0 {
		t.Errorf("pool not closed with its last handler: %+v", s)
	}
}

// TestReloadKeepsConnections: a new handler for the same address (a
// reload) takes over the old one's kept connections.
func TestReloadKeepsConnections(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 2})
	var pools Pools
	dialer := &recordingDialer{}
	mk := func() *Handler {
		h, err := New("/app/", complete(t, &config.FastCGI{Address: e.fpm.Address, Root: e.root}), Options{Pools: &pools, Dial: dialer.dial})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	old := mk()
	var cur atomic.Pointer[Handler] // the table a reload swaps
	cur.Store(old)
	p := protos(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cur.Load().ServeHTTP(w, r) }))[0]
	get(t, p.client, p.url+"/app/hello.php")
	next := mk()
	old.Close()
	cur.Store(next)
	get(t, p.client, p.url+"/app/hello.php")
	if n := dialer.count(); n != 1 {
		t.Errorf("%d dials across the reload, want 1", n)
	}
	next.Close()
}

// TestIdleConnectionsClosed: connections idle for the idle timeout are
// closed, giving php-fpm its workers back; the next request dials again.
func TestIdleConnectionsClosed(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 4})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) { c.MaxConns = config.AutoInt{Set: true, Value: 4} })
	h.pool.idleTimeout = 150 * time.Millisecond
	p := protos(t, h)[0]
	codes, _ := loadRound(t, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}, p.url+"/app/sleep.php?ms=50", 4)
	if codes[200] != 4 {
		t.Fatalf("%v", codes)
	}
	if s := h.Stats(); s.Idle == 0 {
		t.Fatalf("no idle connections: %+v", s)
	}
	waitFor(t, "idle connections to close", 5*time.Second, func() bool { return h.Stats().Open == 0 })
	if res, body := get(t, p.client, p.url+"/app/hello.php"); res.StatusCode != 200 || body != "hello from php\n" {
		t.Errorf("after: %d %q", res.StatusCode, body)
	}
}

// TestQueueTimeoutsMixed: routes sharing a pool may have different
// queue.timeout values. One timer serves the whole queue (see
// pool.expire): a waiter with a short timeout that queues behind one with
// a long timeout still leaves on time, the long one keeps its place, and
// a release afterwards goes to it.
func TestQueueTimeoutsMixed(t *testing.T) {
	p := newPool("test")
	long, short := new(int), new(int)
	nodial := func(context.Context) (*conn, error) { return nil, errors.New("no dialing here") }
	p.configure(long, 1, 10, 1, nodial, func(string, ...any) {})
	p.configure(short, 1, 10, 1, nodial, func(string, ...any) {})
	a, z := net.Pipe()
	defer z.Close()
	c := &conn{nc: a}
	p.all[c] = struct{}{}
	p.open, p.busy = 1, 1 // c is in use

	type result struct {
		c   *conn
		err error
		d   time.Duration
	}
	wait := func(user any, timeout time.Duration) chan result {
		ch := make(chan result, 1)
		go func() {
			start := time.Now()
			c, err := p.acquire(context.Background(), nil, timeout, user, 10)
			ch <- result{c, err, time.Since(start)}
		}()
		return ch
	}
	queued := func(n int) {
		waitFor(t, fmt.Sprintf("%d waiting", n), 5*time.Second, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.waiting == n
		})
	}
	first := wait(long, 10*time.Second)
	queued(1)
	second := wait(short, 100*time.Millisecond)
	queued(2)
	select {
	case r := <-second:
		if r.err != errQueueTimeout || r.d < 90*time.Millisecond || r.d > 2*time.Second {
			t.Errorf("short timeout: %v after %v, want errQueueTimeout after 100ms", r.err, r.d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the short queue.timeout did not end its wait (the timer armed for the long one only)")
	}
	queued(1)
	p.release(c, true)
	select {
	case r := <-first:
		if r.err != nil || r.c != c {
			t.Errorf("long timeout: got %v, %v; want the released connection", r.c, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter with the long timeout was not granted the release")
	}
	if n := p.timedOut.Load(); n != 1 {
		t.Errorf("timedOut %d, want 1", n)
	}
	p.release(c, true)
}
