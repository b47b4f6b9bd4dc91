package ota

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestTargets(t *testing.T) {
	got := Targets("arka", "/", []string{":80", "0.0.0.0:80", "10.0.0.1:8080"}, []string{"[::]:443", ":443"})
	want := []Target{{"127.0.0.1:80", false, "arka", "/"}, {"10.0.0.1:8080", false, "arka", "/"}, {"[::1]:443", true, "arka", "/"}, {"127.0.0.1:443", true, "arka", "/"}}
	if len(got) != len(want) {
		t.Fatalf("Targets = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("target %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// fast makes a check quick enough for a unit test.
func fast(h Health) Health {
	h.Interval = 20 * time.Millisecond
	if h.Stable == 0 {
		h.Stable = 200 * time.Millisecond
	}
	if h.StartTimeout == 0 {
		h.StartTimeout = 2 * time.Second
	}
	return h
}

func serverTarget(t *testing.T, h http.Handler) (Target, *httptest.Server) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return Target{Addr: srv.Listener.Addr().String()}, srv
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestHealthPasses(t *testing.T) {
	var hits atomic.Int32
	tg, _ := serverTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Host != "localhost" || r.URL.Path != "/" {
			http.NotFound(w, r)
		}
	}))
	tls := httptest.NewTLSServer(http.RedirectHandler("/elsewhere", http.StatusFound)) // 3xx passes
	defer tls.Close()
	started := time.Now()
	h := fast(Health{
		Targets: []Target{tg, {Addr: tls.Listener.Addr().String(), TLS: true}},
		Process: func(context.Context) (Process, error) { return Process{Started: started}, nil },
	})
	took, err := h.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if took > time.Second || hits.Load() < 5 {
		t.Errorf("took %s with %d probes; want an early answer and probes through the stable period", took, hits.Load())
	}
}

func TestHealthWaitsForArka(t *testing.T) {
	// Arka comes up a little after the check starts.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	go func() {
		time.Sleep(300 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
		t.Cleanup(func() { srv.Close() })
		srv.Serve(l)
	}()
	took, err := fast(Health{Targets: []Target{{Addr: addr}}}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if took < 250*time.Millisecond {
		t.Errorf("healthy after %s, before Arka listened", took)
	}
}

func TestHealthFails(t *testing.T) {
	up, _ := serverTarget(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	bad, _ := serverTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.Error(w, "upstream down", http.StatusBadGateway)
		}
	}))
	good := bad
	good.Path = "/healthz"
	var readyCalls atomic.Int32
	var n atomic.Int64
	restarting := func(context.Context) (Process, error) {
		return Process{Started: time.Unix(n.Add(1), 0)}, nil // a new process every time
	}
	// Stops answering once it has answered a few times.
	var answers atomic.Int32
	flakySrv := httptest.NewUnstartedServer(nil)
	flakySrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answers.Add(1) == 3 {
			go flakySrv.Listener.Close()
		}
	})
	flakySrv.Start()
	defer flakySrv.Close()
	flaky := Target{Addr: flakySrv.Listener.Addr().String()}
	for _, c := range []struct {
		name string
		h    Health
		want string
	}{
		{"never answers", Health{Targets: []Target{{Addr: closedPort(t)}}, StartTimeout: 300 * time.Millisecond}, "not healthy within 300ms"},
		{"502", Health{Targets: []Target{up, bad}, StartTimeout: 300 * time.Millisecond}, "answered 502 Bad Gateway"},
		{"final", Health{Targets: []Target{good}, StartTimeout: time.Minute, Ready: func() error {
			return Final{errors.New("no configuration loaded: Arka serves its fallback page")}
		}}, "fallback page"},
		{"not ready", Health{Targets: []Target{good}, StartTimeout: 300 * time.Millisecond, Ready: func() error {
			readyCalls.Add(1)
			return errors.New("Arka serves the last configuration that loaded")
		}}, "last configuration that loaded"},
		{"crash loop", Health{Targets: []Target{{Addr: closedPort(t)}}, Process: restarting}, "restarted 5 times"},
		{"restart while stable", Health{Targets: []Target{up}, Process: func(ctx context.Context) (Process, error) {
			if n.Add(1) > 5 {
				return Process{Started: time.Unix(2, 0)}, nil
			}
			return Process{Started: time.Unix(1, 0)}, nil
		}, Stable: 2 * time.Second}, "restarted"},
		{"stops answering", Health{Targets: []Target{flaky}, Stable: 2 * time.Second}, "stopped answering"},
		{"stopped by its supervisor", Health{Targets: []Target{up}, Process: func(context.Context) (Process, error) { return Process{Stopped: true}, nil }}, "supervisor stopped it"},
		{"no address", Health{ConfigErr: errors.New("/perm/arka/sites/a.toml:3:1: unknown key \"x\"\nmore"), StartTimeout: 100 * time.Millisecond}, `(Arka's configuration: /perm/arka/sites/a.toml:3:1: unknown key "x" …)`},
	} {
		n.Store(0)
		start := time.Now()
		_, err := fast(c.h).Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
		}
		if time.Since(start) > 3*time.Second { // "final": at once, not after its minute
			t.Errorf("%s: took %s", c.name, time.Since(start))
		}
	}
}

func TestHealthBound(t *testing.T) {
	if b := (Health{}).Bound(); b != 2*time.Minute+12*time.Second {
		t.Errorf("default bound %s", b)
	}
}
