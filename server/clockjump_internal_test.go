package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
)

// fakeClock is a clock the test sets.
type fakeClock struct {
	mu   sync.Mutex
	wall time.Time
	mono time.Duration
}

func (c *fakeClock) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *fakeClock) Mono() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// advance moves the monotonic clock by d and sets the wall clock.
func (c *fakeClock) advance(d time.Duration, wall time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mono += d
	c.wall = wall
}

func TestClockWatch(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var w clockWatch
	for i, c := range []struct {
		wall time.Time
		mono time.Duration
		want time.Duration
	}{
		{t0, 0, 0}, // the first reading
		{t0.Add(10 * time.Second), 10 * time.Second, 0},                                                                               // both moved alike
		{t0.Add(20*time.Second + 30*time.Millisecond), 20 * time.Second, 30 * time.Millisecond},                                       // slewed
		{t0.AddDate(0, 3, 0), 30 * time.Second, t0.AddDate(0, 3, 0).Sub(t0.Add(20*time.Second+30*time.Millisecond)) - 10*time.Second}, // stepped forward
		{t0, 40 * time.Second, t0.Sub(t0.AddDate(0, 3, 0)) - 10*time.Second},                                                          // and back
	} {
		if got := w.observe(c.wall, c.mono); got != c.want {
			t.Errorf("reading %d: jump %s, want %s", i, got, c.want)
		}
	}
}

// TestSelfSignedRenewedAfterClockJump: a self-signed certificate made
// while the clock was wrong is served until the clock jumps to the right
// time; then one that is valid at the right time is, without a reload. A
// jump that leaves the certificate valid changes nothing.
func TestSelfSignedRenewedAfterClockJump(t *testing.T) {
	for _, c := range []struct {
		name  string
		wrong time.Time
	}{
		{"clock ahead (valid 2069 to 2079)", time.Date(2069, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"clock behind (valid 1970 to 1980)", time.Unix(0, 0).UTC()},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			f := filepath.Join(dir, "site.toml")
			src := "server_names = [\"localhost\"]\n[tls]\nlisten = [\"" + addr + "\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"" + dir + "\" }\n"
			if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			sites, err := config.LoadFiles([]string{f})
			if err != nil {
				t.Fatal(err)
			}
			s := New(Options{StateDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				s.Shutdown(ctx)
			}()
			clk := &fakeClock{wall: c.wrong}
			s.clock = clk
			if err := s.Apply(sites); err != nil {
				t.Fatal(err)
			}
			served := func() *x509.Certificate {
				t.Helper()
				conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"})
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				return conn.ConnectionState().PeerCertificates[0]
			}
			first := served()
			if !first.NotBefore.Before(c.wrong) || first.NotBefore.Before(c.wrong.Add(-2*time.Hour)) {
				t.Fatalf("the certificate made at %s is valid from %s", c.wrong, first.NotBefore)
			}
			var w clockWatch
			w.observe(clk.Wall(), clk.Mono())
			// Ten seconds later by both clocks: no jump.
			clk.advance(10*time.Second, c.wrong.Add(10*time.Second))
			if n := s.clockTick(&w); n != 0 {
				t.Errorf("replaced %d certificates without a jump", n)
			}
			// NTP steps the clock to the right time.
			right := time.Now()
			clk.advance(10*time.Second, right)
			if n := s.clockTick(&w); n != 1 {
				t.Errorf("after the jump %d certificates replaced, want 1", n)
			}
			now := served()
			if now.SerialNumber.Cmp(first.SerialNumber) == 0 || right.Before(now.NotBefore) || right.After(now.NotAfter) {
				t.Errorf("after the jump the served certificate is valid %s to %s (serial %s, was %s)", now.NotBefore, now.NotAfter, now.SerialNumber, first.SerialNumber)
			}
			// A second jump (half an hour back) leaves it valid: kept.
			clk.advance(10*time.Second, right.Add(-30*time.Minute))
			if n := s.clockTick(&w); n != 0 {
				t.Errorf("a jump inside the validity replaced %d certificates", n)
			}
			if again := served(); again.SerialNumber.Cmp(now.SerialNumber) != 0 {
				t.Errorf("the certificate changed after a jump inside its validity")
			}
		})
	}
}
