package fastcgi

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// BenchmarkQueue measures the pool's hand-off through its FIFO queue: 8
// goroutines per core take turns on 2 connections, as 64 clients do on 32
// php-fpm workers in tests/bench, so most acquisitions wait in the queue
// and are granted by a release. Each goroutine's context is cancelable,
// as a request's is.
func BenchmarkQueue(b *testing.B) {
	p := newPool("bench")
	p.configure(p, 2, 1000, 2, func(context.Context) (*conn, error) { return nil, errors.New("no dialing here") }, func(string, ...any) {})
	for range 2 { // two open connections, idle: the pool never dials
		a, z := net.Pipe()
		defer z.Close()
		c := &conn{nc: a}
		p.all[c] = struct{}{}
		p.idle = append(p.idle, c)
		p.open++
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		p.shutdown(ctx)
	})
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for pb.Next() {
			c, err := p.acquire(ctx, nil, 30*time.Second, p, 1000)
			if err != nil {
				b.Error(err)
				return
			}
			p.release(c, true)
		}
	})
	b.StopTimer()
	if q := p.timedOut.Load(); q != 0 {
		b.Fatalf("%d queue timeouts", q)
	}
}
