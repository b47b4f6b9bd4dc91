package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/board/fan"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/server/internal/enginetest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func f64(v float64) *float64 { return &v }
func u64(v uint64) *uint64   { return &v }

// demoSnapshot is a realistic snapshot of a busy Raspberry Pi 4 (4 GB) serving a
// static site, a WordPress site through php-fpm and an API through the proxy.
func demoSnapshot(now time.Time) Snapshot {
	b, err := board.Detect(filepath.Join("..", "..", "board", "testdata", "rpi4-b-4gb"))
	if err != nil {
		panic(err)
	}
	bud := board.ComputeBudget(b, board.Overrides{})
	up := 26*time.Hour + 17*time.Minute
	return Snapshot{
		Time: now, Version: "0.3.0", StartedAt: now.Add(-3*time.Hour - 12*time.Minute),
		Board: BoardInfoFrom(b),
		Sensors: board.Sensors{
			TempC: f64(61.3), TempZone: "cpu-thermal", Throttled: &board.Throttle{Raw: 0x50000},
			CPUFreqHz: u64(1_800_000_000), Load: &board.LoadAvg{Load1: 0.84, Load5: 0.71, Load15: 0.62},
			MemTotal: u64(3884324 * 1024), MemAvail: u64(2901112 * 1024), Uptime: &up,
			DiskFree: u64(21 << 30), DiskTotal: u64(28 << 30), DiskPath: "/perm",
		},
		Thermal: board.ThermalState{LimitC: 80, ResumeC: 75},
		Fan:     &fan.State{Pin: "GPIO14", OnC: 65, OffC: 55, LastC: f64(61.3), Since: now.Add(-20 * time.Minute), Transitions: 12},
		State:   led.Status{State: led.Serving, LED: "ACT"},
		Memory: Memory{RSSBytes: u64(38 << 20), HeapAllocBytes: 21 << 20, HeapSysBytes: 31 << 20,
			GoSysBytes: 44 << 20, LimitBytes: bud.MemoryLimitBytes, NumGC: 412, Goroutines: 57},
		Routes: []RouteStats{
			{Site: "example.org", Route: "/", Handler: "static", Requests: 1843211, PerSecond: 212.4, Status: StatusClasses{0, 1790112, 51322, 1770, 7}, P50Seconds: 0.00011, P99Seconds: 0.0019},
			{Site: "blog.example.org", Route: "/", Handler: "fastcgi", Requests: 91823, PerSecond: 9.3, Status: StatusClasses{0, 88011, 2210, 1598, 4}, P50Seconds: 0.021, P99Seconds: 0.094},
			{Site: "example.org", Route: "/api/", Handler: "proxy", Requests: 30411, PerSecond: 3.1, Status: StatusClasses{0, 29801, 0, 590, 20}, P50Seconds: 0.0042, P99Seconds: 0.031},
			{Site: "example.org", Route: "/status", Handler: "status", Requests: 1204, PerSecond: 0.1, Status: StatusClasses{0, 1180, 0, 24, 0}, P50Seconds: 0.0003, P99Seconds: 0.0011},
		},
		Caches: []CacheStats{
			{Name: "open files", Entries: 2210, Bytes: 3 << 20, BudgetBytes: bud.OpenFileCacheBytes, Hits: 1790000, Misses: 4100},
			{Name: "compressed", Entries: 312, Bytes: 141 << 20, BudgetBytes: bud.CompressedBytes, Hits: 802000, Misses: 900},
			{Name: "content", Entries: 1890, Bytes: 96 << 20, BudgetBytes: bud.ContentCacheBytes, Hits: 1201000, Misses: 23000},
		},
		FastCGI:   []FastCGIPool{{Address: "unix:/run/php/php-fpm.sock", MaxConns: bud.FastCGIMaxConns, Busy: 5, Idle: 11, Queued: 0, QueueSize: bud.FastCGIQueue, Rejected: 0}},
		Upstreams: []UpstreamStats{{Address: "127.0.0.1:3000", Healthy: true, ActiveConns: 2, IdleConns: 6, Requests: 30411, Failures: 3}, {Address: "127.0.0.1:3001", Healthy: false, Failures: 17}},
		PHPFPM:    []PHPFPMPool{{Pool: "www", ActiveProcesses: 5, IdleProcesses: 11, MaxChildren: bud.PHPMaxChildren, MaxChildrenReached: 2, SlowRequests: 1}},
	}
}

// demoHistory fills a history with an hour of plausible samples.
func demoHistory(now time.Time) *History {
	h := NewHistory()
	var total uint64 = 1_900_000
	for i := HistoryLen - 1; i >= 0; i-- {
		ts := now.Add(-time.Duration(i) * SampleInterval)
		x := float64(HistoryLen-i) / HistoryLen
		s := Snapshot{Sensors: board.Sensors{
			TempC: f64(55 + 8*x + 2*math.Sin(x*25)),
			Load:  &board.LoadAvg{Load1: 0.5 + 0.4*math.Sin(x*9) + 0.3*x},
		}}
		total += uint64(2000 + 1200*math.Sin(x*7) + 900*x)
		s.Routes = []RouteStats{{Requests: total}}
		h.Observe(ts, &s)
	}
	return h
}

func newTestHandler(t *testing.T, allow []string, snap Snapshot, h *History) *Handler {
	t.Helper()
	prefixes, err := ParseAllow(allow)
	if err != nil {
		t.Fatal(err)
	}
	hd, err := New(Options{Allow: prefixes, Source: SourceFunc(func() Snapshot { return snap }), History: h})
	if err != nil {
		t.Fatal(err)
	}
	return hd
}

func get(h http.Handler, remote, target string, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.RemoteAddr = remote
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestAccessControl(t *testing.T) {
	now := time.Now()
	configured := newTestHandler(t, []string{"127.0.0.0/8", "::1/128", "192.168.0.0/16"}, demoSnapshot(now), nil)
	byDefault := newTestHandler(t, nil, demoSnapshot(now), nil)
	for _, tc := range []struct {
		remote          string
		configured, def int
	}{
		{"127.0.0.1:5000", 200, 200},
		{"127.8.9.10:5000", 200, 200},
		{"[::1]:5000", 200, 200},
		{"[::ffff:127.0.0.1]:5000", 200, 200}, // IPv4-mapped loopback
		{"[::ffff:192.168.1.20]:443", 200, 200},
		{"192.168.44.2:1234", 200, 200},
		{"10.1.2.3:1234", 403, 200},
		{"172.20.0.5:1234", 403, 200},
		{"[fd12:3456::1]:80", 403, 200},
		{"[fe80::1%eth0]:80", 403, 403},
		{"8.8.8.8:53", 403, 403},
		{"[2001:db8::1]:443", 403, 403},
		{"[::ffff:8.8.8.8]:53", 403, 403},
		{"garbage", 403, 403},
	} {
		if got := get(configured, tc.remote, "/status", nil).Code; got != tc.configured {
			t.Errorf("configured allow, %s: %d, want %d", tc.remote, got, tc.configured)
		}
		if got := get(byDefault, tc.remote, "/status", nil).Code; got != tc.def {
			t.Errorf("default allow, %s: %d, want %d", tc.remote, got, tc.def)
		}
	}
	w := get(configured, "8.8.8.8:53", "/status?format=json", nil)
	if strings.Contains(w.Body.String(), "Raspberry") {
		t.Error("403 body leaks status data")
	}
	// The same small HTML error page as every handler's own errors.
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(w.Body.String(), "403") {
		t.Errorf("403 page: %q %q", ct, w.Body.String())
	}
}

func TestParseAllow(t *testing.T) {
	p, err := ParseAllow([]string{"10.0.0.1", "::1", " 192.168.0.0/16 ", "::ffff:10.0.0.0/104"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.1/32", "::1/128", "192.168.0.0/16", "10.0.0.0/8"}
	for i, w := range want {
		if p[i] != netip.MustParsePrefix(w) {
			t.Errorf("[%d] = %s, want %s", i, p[i], w)
		}
	}
	if _, err := ParseAllow([]string{"127.0.0.0/8", "localhost"}); err == nil || !strings.Contains(err.Error(), "allow[1]") {
		t.Errorf("err = %v", err)
	}
}

// Methods and formats as clients see them, over HTTP/1.1, TLS and HTTP/2
// on Arka's engines (the clients are on loopback, which the default allow
// list admits).
func TestMethodsAndFormats(t *testing.T) {
	h := newTestHandler(t, nil, demoSnapshot(time.Now()), nil)
	e := enginetest.Serve(t, h)
	e.Each(t, func(t *testing.T, c *enginetest.Client) {
		resp, _ := c.Do(t, http.MethodPost, "/status")
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST: %d %q", resp.StatusCode, resp.Header.Get("Allow"))
		}
		resp, body := c.Do(t, http.MethodHead, "/status")
		if resp.StatusCode != 200 || len(body) != 0 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("HEAD: %d %d %q", resp.StatusCode, len(body), resp.Header.Get("Content-Type"))
		}
		if resp, _ := c.Get(t, "/status?format=xml"); resp.StatusCode != 400 {
			t.Errorf("format=xml: %d", resp.StatusCode)
		}
		for accept, want := range map[string]string{
			"application/json":                          "application/json",
			"text/html,application/json;q=0.9":          "application/json",
			"application/json;q=0":                      "text/html; charset=utf-8",
			"text/html,application/xhtml+xml,*/*;q=0.8": "text/html; charset=utf-8",
		} {
			if resp, _ := c.Get(t, "/status", "Accept: "+accept); resp.Header.Get("Content-Type") != want {
				t.Errorf("Accept %q: %q, want %q", accept, resp.Header.Get("Content-Type"), want)
			}
		}
	})
	if _, err := New(Options{}); err == nil {
		t.Error("New without Source must fail")
	}
}

func TestJSON(t *testing.T) {
	now := time.Now()
	h := newTestHandler(t, nil, demoSnapshot(now), demoHistory(now))
	for _, w := range []*httptest.ResponseRecorder{
		get(h, "[::1]:9", "/status?format=json", nil),
		get(h, "[::1]:9", "/status", map[string]string{"Accept": "application/json"}),
	} {
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("%d %v", w.Code, w.Header())
		}
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{
			"version", "started_at", "board.model", "board.kind", "board.cores", "board.ram_bytes",
			"sensors.temp_c", "sensors.throttled.raw", "sensors.load.load1", "sensors.mem_available_bytes",
			"thermal.hot", "thermal.limit_c", "memory.rss_bytes", "memory.heap_alloc_bytes",
			"routes.0.site", "routes.0.route", "routes.0.requests", "routes.0.per_second", "routes.0.status",
			"routes.0.p50_seconds", "routes.0.p99_seconds", "caches.0.bytes", "caches.0.budget_bytes",
			"caches.0.hits", "fastcgi.0.busy", "fastcgi.0.idle", "fastcgi.0.queued", "fastcgi.0.rejected",
			"fastcgi.0.max_conns", "upstreams.0.address", "upstreams.0.healthy", "upstreams.0.active_conns",
			"phpfpm.0.listen_queue", "phpfpm.0.max_children_reached", "phpfpm.0.slow_requests",
			"history.interval_seconds", "history.temp_c", "history.load1", "history.req_per_sec",
			"fan.pin", "fan.running", "fan.on_c", "fan.off_c", "fan.last_c", "fan.transitions", "state.state", "state.led",
		} {
			if _, ok := lookup(m, path); !ok {
				t.Errorf("JSON has no %s", path)
			}
		}
		if v, _ := lookup(m, "state.state"); v != "serving" {
			t.Errorf("state.state = %v", v)
		}
		if v, _ := lookup(m, "board.model"); v != "Raspberry Pi 4 Model B Rev 1.1" {
			t.Errorf("board.model = %v", v)
		}
		if v, _ := lookup(m, "history.temp_c"); len(v.([]any)) != HistoryLen {
			t.Errorf("history length %d", len(v.([]any)))
		}
	}
	// Absent sensors are null, not zero.
	bare := newTestHandler(t, nil, Snapshot{Version: "x"}, nil)
	var m map[string]any
	_ = json.Unmarshal(get(bare, "127.0.0.1:1", "/?format=json", nil).Body.Bytes(), &m)
	if v, ok := lookup(m, "sensors.temp_c"); !ok || v != nil {
		t.Errorf("absent temperature must be null, got %v (present %v)", v, ok)
	}
}

func lookup(v any, path string) (any, bool) {
	for _, p := range strings.Split(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[p]; !ok {
				return nil, false
			}
		case []any:
			i := int(p[0] - '0')
			if i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func TestPrometheus(t *testing.T) {
	now := time.Now()
	h := newTestHandler(t, nil, demoSnapshot(now), demoHistory(now))
	w := get(h, "127.0.0.1:1", "/status?format=prometheus", nil)
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("%d %q", w.Code, w.Header().Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, w.Body.String())
	}
	for _, name := range []string{"arka_build_info", "arka_board_temperature_celsius", "arka_board_throttle_flag",
		"arka_requests_total", "arka_request_latency_seconds", "arka_cache_bytes", "arka_cache_budget_bytes",
		"arka_fastcgi_connections", "arka_fastcgi_rejected_total", "arka_upstream_healthy", "arka_phpfpm_listen_queue",
		"arka_thermal_hot", "arka_board_load", "arka_process_resident_memory_bytes",
		"arka_state", "arka_fan_running", "arka_fan_on_celsius", "arka_fan_transitions_total"} {
		if fams[name] == nil {
			t.Errorf("missing %s", name)
		}
	}
	for _, m := range fams["arka_state"].Metric {
		if want := b2f(m.Label[0].GetValue() == "serving"); m.GetGauge().GetValue() != want {
			t.Errorf("arka_state{state=%q} = %v, want %v", m.Label[0].GetValue(), m.GetGauge().GetValue(), want)
		}
	}
	if n := len(fams["arka_state"].Metric); n != 5 {
		t.Errorf("arka_state has %d states, want 5", n)
	}
	var twoxx float64
	for _, m := range fams["arka_requests_total"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "class" && l.GetValue() == "2xx" {
				twoxx += m.GetCounter().GetValue()
			}
		}
	}
	if twoxx != 1790112+88011+29801+1180 {
		t.Errorf("2xx sum %v", twoxx)
	}
}

func TestHTML(t *testing.T) {
	now := time.Now()
	snap := demoSnapshot(now)
	h := newTestHandler(t, nil, snap, demoHistory(now))
	w := get(h, "127.0.0.1:1", "/status", nil)
	body := w.Body.String()
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("%d", w.Code)
	}
	t.Logf("HTML: %d bytes", len(body))
	if len(body) >= maxPageBytes {
		t.Errorf("HTML is %d bytes, must be under %d", len(body), maxPageBytes)
	}
	for _, want := range []string{"<svg", `http-equiv="refresh"`, `name="viewport"`, "Raspberry Pi 4 Model B Rev 1.1",
		"61.3 °C", "under-voltage-since-boot", "blog.example.org", "unix:/run/php/php-fpm.sock", "127.0.0.1:3001",
		"fan GPIO14 stopped", "<b>serving</b> (LED ACT)"} {
		if !strings.Contains(body, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://", "src="} {
		if strings.Contains(body, bad) {
			t.Errorf("HTML contains %q (no scripts or external assets allowed)", bad)
		}
	}
	if n := strings.Count(body, "<svg"); n != 3 {
		t.Errorf("%d sparklines, want 3", n)
	}

	// Hot board, conditions with long messages and a huge route list still fit.
	snap.Thermal.Hot = true
	snap.State.State = led.Degraded
	for i := range 20 {
		snap.State.Conditions = append(snap.State.Conditions, led.Condition{Name: fmt.Sprint("site", i), State: led.Degraded, Message: strings.Repeat("é", 2000)})
	}
	for i := 0; i < 200; i++ {
		snap.Routes = append(snap.Routes, RouteStats{Site: "very-long-host-name-number.example.org", Route: "/some/long/route/prefix/", Handler: "static", Requests: 123456789})
	}
	body = get(newTestHandler(t, nil, snap, demoHistory(now)), "127.0.0.1:1", "/", nil).Body.String()
	t.Logf("hot/large page: %d bytes of %d", len(body), maxPageBytes)
	if len(body) >= maxPageBytes || !strings.Contains(body, "Too hot") || !strings.Contains(body, "more routes") ||
		!strings.Contains(body, "<b>degraded</b> · site0: éé") || strings.Contains(body, "site3:") || !strings.Contains(body, "20 in all") {
		t.Errorf("hot/large page: %d bytes, hot banner %v", len(body), strings.Contains(body, "Too hot"))
	}
	// Empty snapshot renders too.
	if w := get(newTestHandler(t, nil, Snapshot{}, nil), "127.0.0.1:1", "/", nil); w.Code != 200 {
		t.Errorf("empty snapshot: %d %s", w.Code, w.Body.String())
	}
}

func TestHistoryRing(t *testing.T) {
	h := NewHistory()
	t0 := time.Unix(1_700_000_000, 0)
	s := Snapshot{Sensors: board.Sensors{TempC: f64(50), Load: &board.LoadAvg{Load1: 1}}, Routes: []RouteStats{{}}}
	for i := 0; i < HistoryLen+25; i++ {
		s.Routes[0].Requests = uint64(i * 100)
		*s.Sensors.TempC = float64(i)
		h.Observe(t0.Add(time.Duration(i)*SampleInterval), &s)
	}
	v := h.View()
	if h.Len() != HistoryLen || len(v.TempC) != HistoryLen {
		t.Fatalf("len %d", h.Len())
	}
	if *v.TempC[0] != 25 || *v.TempC[HistoryLen-1] != HistoryLen+24 {
		t.Errorf("oldest %v newest %v", *v.TempC[0], *v.TempC[HistoryLen-1])
	}
	if v.ReqPerSec[0] == nil || *v.ReqPerSec[0] != 10 {
		t.Errorf("rate %v", v.ReqPerSec[0])
	}
	if v.Unix[1]-v.Unix[0] != 10 {
		t.Error("spacing")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		s.Routes[0].Requests += 10
		h.Observe(t0, &s)
	})
	if allocs != 0 {
		t.Errorf("Observe allocates %v times per sample", allocs)
	}
	// A reset counter gives no rate, a missing sensor gives null.
	s.Routes[0].Requests = 0
	s.Sensors.TempC = nil
	h.Observe(t0.Add(time.Hour), &s)
	v = h.View()
	if v.ReqPerSec[HistoryLen-1] != nil || v.TempC[HistoryLen-1] != nil {
		t.Error("reset counter / missing sensor")
	}
}

func TestHistoryRun(t *testing.T) {
	h := NewHistory()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	done := make(chan struct{})
	go func() {
		h.Run(ctx, time.Millisecond, SourceFunc(func() Snapshot { return Snapshot{} }), func(*Snapshot) {
			n++
			if n == 3 {
				cancel()
			}
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
	if h.Len() < 3 {
		t.Errorf("%d samples", h.Len())
	}
}

func TestProcessMemory(t *testing.T) {
	m := ReadProcessMemory()
	if m.HeapAllocBytes == 0 || m.Goroutines == 0 {
		t.Errorf("%+v", m)
	}
	if _, err := os.Stat("/proc/self/statm"); err == nil && (m.RSSBytes == nil || *m.RSSBytes == 0) {
		t.Error("RSS not read")
	}
}

// TestScreenshot renders the demo snapshot, serves it on loopback and has headless
// Chromium take a PNG of it, which must not be blank. The picture is kept at
// testdata/out/status.png (git-ignored), with the HTML beside it.
func TestScreenshot(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("no /usr/bin/chromium (Debian package chromium); screenshot skipped")
	}
	if testing.Short() {
		t.Skip("screenshot skipped in -short mode")
	}
	now := time.Now()
	h := newTestHandler(t, []string{"127.0.0.0/8", "::1/128"}, demoSnapshot(now), demoHistory(now))
	srv := httptest.NewServer(h) // listens on 127.0.0.1, a free port
	defer srv.Close()

	out, err := filepath.Abs(filepath.Join("testdata", "out"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := os.WriteFile(filepath.Join(out, "status.html"), html, 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(out, "status.png")
	_ = os.Remove(shot)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size=420,1500",
		srv.URL+"/status")
	if outb, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, outb)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	bnd := img.Bounds()
	first := img.At(bnd.Min.X, bnd.Min.Y)
	r0, g0, b0, _ := first.RGBA()
	differ := 0
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 3 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			if r != r0 || g != g0 || b != b0 {
				differ++
			}
		}
	}
	if differ < 500 {
		t.Errorf("screenshot looks blank: %d sampled pixels differ from the background", differ)
	}
	t.Logf("screenshot: %s (%dx%d, %d sampled pixels not background)", shot, bnd.Dx(), bnd.Dy(), differ)
}
