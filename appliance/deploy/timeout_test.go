package deploy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// silentDevice accepts connections and never reads or answers.
func silentDevice(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// TestClientGivesUp: a device that accepts the connection but never
// answers (or never takes the upload) fails each request with a
// TimeoutError, within its limit, instead of hanging.
func TestClientGivesUp(t *testing.T) {
	c := &Client{Base: silentDevice(t), Password: "pw", HTTP: &http.Client{}, Timeout: 300 * time.Millisecond, IdleTimeout: 500 * time.Millisecond}
	ctx := context.Background()
	var te *TimeoutError
	start := time.Now()
	if _, err := c.State(ctx); !errors.As(err, &te) || te.Upload {
		t.Errorf("State: %v", err)
	}
	if _, err := c.Rollback(ctx); !errors.As(err, &te) {
		t.Errorf("Rollback: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("two requests took %s", d)
	}
	// An upload bigger than the socket buffers: the device never reads it.
	dir := t.TempDir()
	writeSite(t, dir, map[string]string{"sites/a.toml": siteToml, "www/index.html": "hi"})
	if err := os.WriteFile(filepath.Join(dir, "www", "big.bin"), make([]byte, 32<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	_, err = c.Deploy(ctx, dir, "test", NewPlan(files, nil), nil)
	if !errors.As(err, &te) || !te.Upload {
		t.Errorf("Deploy: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("upload gave up after %s", d)
	}
}

// TestUploadThatMovesIsNotCutOff: the idle limit is not a total one: a
// slow upload that keeps moving outlives it.
func TestUploadThatMovesIsNotCutOff(t *testing.T) {
	d := newDevice(t)
	dir := t.TempDir()
	writeSite(t, dir, map[string]string{"sites/a.toml": siteToml, "www/index.html": "hi", "www/b.bin": string(make([]byte, 512<<10))})
	files, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.client.IdleTimeout = 200 * time.Millisecond
	n := 0
	_, err = d.client.Deploy(context.Background(), dir, "test", NewPlan(files, nil), func(done, total int64) {
		n++
		time.Sleep(40 * time.Millisecond) // 512 KiB in many small reads: well over 200 ms in all
	})
	if err != nil || n < 10 {
		t.Errorf("slow upload (%d reads): %v", n, err)
	}
}
