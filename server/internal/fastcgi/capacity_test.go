package fastcgi

import (
	"net/http"
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
