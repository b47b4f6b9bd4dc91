package fastcgi

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/tests/fpmtest"
)

// TestOwnPHPOndemand: for the php-fpm Arka runs itself (address "php"),
// pm.max_children is known, so the pool never caps itself, even with pm =
// ondemand, which forks workers only when told of new connections (see
// spawnProbe): 12 requests at once over 4 connections are all served
// promptly, and the pool keeps its 4 connections.
func TestOwnPHPOndemand(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 4, PM: "ondemand"})
	h := e.handler(t, func(c *config.FastCGI, o *Options) {
		c.Address = "php"
		o.PHPAddress, o.PHPMaxConns = e.fpm.Address, 4
	})
	h.pool.probeTimeout = time.Millisecond // the external-php-fpm probe would time out and cap
	p := protos(t, h)[0]
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	codes, slowest := loadRound(t, client, p.url+"/app/sleep.php?ms=50", 12)
	if codes[200] != 12 || slowest > 2*time.Second {
		t.Fatalf("codes %v, slowest %v, stats %+v", codes, slowest, h.Stats())
	}
	if s := h.Stats(); s.Capped != 0 || s.Limit != 4 {
		t.Errorf("stats %+v", s)
	}
}

// TestQueueWaitMeasured: requests that wait in the queue are counted with
// their wait, for the status page.
func TestQueueWaitMeasured(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 1})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) { c.MaxConns = config.AutoInt{Set: true, Value: 1} })
	p := protos(t, h)[0]
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			get(t, p.client, p.url+"/app/sleep.php?ms=200")
		}()
	}
	wg.Wait()
	s := h.Stats()
	if s.QueueWaits < 1 || s.QueueWaitLongest < 150*time.Millisecond || s.QueueWaitTotal < s.QueueWaitLongest {
		t.Errorf("queue waits %d, total %v, longest %v; want 2 waits of 200 and 400 ms", s.QueueWaits, s.QueueWaitTotal, s.QueueWaitLongest)
	}
}

// TestCapLiftedWhenAllGone: a capacity learnt from php-fpm holds until
// every connection that had a worker is gone (php-fpm restarted): then
// the pool may have max connections again at once, not after a minute.
func TestCapLiftedWhenAllGone(t *testing.T) {
	p := newPool("test")
	p.configure(p, 4, 10, 0, nil, func(string, ...any) {})
	a, b := &conn{}, &conn{}
	p.all[a], p.all[b] = struct{}{}, struct{}{}
	p.capN, p.capUntil = 2, time.Now().Add(capPeriod)
	p.forget(a)
	if p.limit() != 2 {
		t.Fatalf("limit %d with one of two connections left", p.limit())
	}
	p.forget(b)
	if p.limit() != 4 {
		t.Errorf("limit %d after every connection went, want max 4", p.limit())
	}
}

// TestArrivalOrderWhenCapped: max_conns 6 against a php-fpm with 2
// workers, requests arriving 15 ms apart while the first two hold both
// workers. The connections the pool opens for the third and later
// requests get no worker, their probes time out and the pool caps itself;
// the requests that were waiting on those probes must not go back ahead
// of the ones that arrived before them or jump behind later ones: every
// request gets its connection in the order it arrived, and PHP starts the
// scripts in that order.
func TestArrivalOrderWhenCapped(t *testing.T) {
	const n = 10
	e := newEnv(t, fpmtest.Config{MaxChildren: 2})
	orderLog := filepath.Join(t.TempDir(), "order.log")
	h := e.handler(t, func(c *config.FastCGI, _ *Options) {
		c.MaxConns = config.AutoInt{Set: true, Value: 6}
		c.Env = map[string]string{"ORDER_LOG": orderLog}
	})
	h.pool.probeTimeout = 150 * time.Millisecond
	var mu sync.Mutex
	var arrived, granted []string
	h.pool.testHook = func(event string, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch event {
		case "arrive":
			arrived = append(arrived, r.Header.Get("X-Seq"))
		case "grant":
			granted = append(granted, r.Header.Get("X-Seq"))
		}
	}
	p := protos(t, h)[0]
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 15 * time.Millisecond)
			req, _ := http.NewRequest("GET", p.url+"/app/sleep.php?ms=120", nil)
			req.Header.Set("X-Seq", fmt.Sprint(i))
			res, err := client.Do(req)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			codes[i] = res.StatusCode
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d: %d", i, c)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("arrived %v, granted %v, stats %+v", arrived, granted, h.Stats())
	if s := h.Stats(); s.Capped == 0 {
		t.Errorf("the pool never capped itself (the probes did not fail): %+v", s)
	}
	if strings.Join(arrived, " ") != strings.Join(granted, " ") {
		t.Errorf("connections granted out of arrival order:\narrived %v\ngranted %v", arrived, granted)
	}
	data, err := os.ReadFile(orderLog)
	if err != nil {
		t.Fatal(err)
	}
	// Two workers: a request may start at most one place before the one
	// that arrived just ahead of it (both connections take the next two).
	started := strings.Fields(string(data))
	pos := map[string]int{}
	for i, s := range started {
		pos[s] = i
	}
	for i, seq := range arrived {
		for _, later := range arrived[i+1:] {
			if pos[later] < pos[seq]-1 {
				t.Errorf("PHP started %s before %s, which arrived earlier (start order %v)", later, seq, started)
			}
		}
	}
}

// TestRestartFullCapacity: an external php-fpm with pm = ondemand and 4
// children, max_conns 4, with the default probe timeout. After php-fpm
// restarts (its kept connections all break), full capacity returns at
// once: 8 requests of 300 ms sent right after the restart take two rounds
// of 4 (about 0.6 s plus the spawns), not the 2.4 s of one connection or
// the 2 s stall of a probe that gave up on a spawning worker.
func TestRestartFullCapacity(t *testing.T) {
	e := newEnv(t, fpmtest.Config{MaxChildren: 4, PM: "ondemand"})
	h := e.handler(t, func(c *config.FastCGI, _ *Options) { c.MaxConns = config.AutoInt{Set: true, Value: 4} })
	p := protos(t, h)[0]
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	if codes, _ := loadRound(t, client, p.url+"/app/sleep.php?ms=100", 4); codes[200] != 4 {
		t.Fatalf("warm-up: %v", codes)
	}
	if s := h.Stats(); s.Open != 4 {
		t.Fatalf("after warm-up: %+v", s)
	}
	e.fpm.Quit()
	e.fpm.Restart()
	start := time.Now()
	codes, slowest := loadRound(t, client, p.url+"/app/sleep.php?ms=300", 8)
	took := time.Since(start)
	s := h.Stats()
	t.Logf("after the restart: %v in %v (slowest %v), stats %+v", codes, took, slowest, s)
	if codes[200] != 8 {
		t.Fatalf("after the restart: %v", codes)
	}
	if took > 1500*time.Millisecond {
		t.Errorf("8 requests of 300 ms over 4 connections took %v after a restart, want about 0.6 s", took)
	}
	if s.Limit != 4 {
		t.Errorf("limit %d after the restart, want 4: %+v", s.Limit, s)
	}
}
