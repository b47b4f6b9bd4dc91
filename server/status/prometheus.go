package status

import (
	"io"
	"sort"

	"github.com/arkaweb/arka/board/led"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// families collects metric families in insertion order.
type families struct {
	list []*dto.MetricFamily
	byNm map[string]*dto.MetricFamily
}

func (f *families) add(name, help string, typ dto.MetricType, value float64, labels ...string) {
	if f.byNm == nil {
		f.byNm = map[string]*dto.MetricFamily{}
	}
	mf := f.byNm[name]
	if mf == nil {
		mf = &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum()}
		f.byNm[name] = mf
		f.list = append(f.list, mf)
	}
	m := &dto.Metric{}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
	}
	switch typ {
	case dto.MetricType_COUNTER:
		m.Counter = &dto.Counter{Value: proto.Float64(value)}
	default:
		m.Gauge = &dto.Gauge{Value: proto.Float64(value)}
	}
	mf.Metric = append(mf.Metric, m)
}

func (f *families) gauge(name, help string, v float64, labels ...string) {
	f.add(name, help, dto.MetricType_GAUGE, v, labels...)
}

func (f *families) counter(name, help string, v float64, labels ...string) {
	f.add(name, help, dto.MetricType_COUNTER, v, labels...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var classNames = [5]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// writePrometheus writes s in the Prometheus text exposition format (version
// 0.0.4), encoded by prometheus/common/expfmt.
func writePrometheus(w io.Writer, s *Snapshot) error {
	var f families
	f.gauge("arka_build_info", "Arka version and board; always 1.", 1, "version", s.Version, "board", s.Board.Model, "kind", string(s.Board.Kind))
	f.gauge("arka_uptime_seconds", "Seconds since this arka process started.", s.Time.Sub(s.StartedAt).Seconds())
	f.gauge("arka_board_cores", "Logical CPUs of the board.", float64(s.Board.Cores))
	se := s.Sensors
	if se.TempC != nil {
		f.gauge("arka_board_temperature_celsius", "SoC temperature.", *se.TempC)
	}
	if se.Throttled != nil {
		t := *se.Throttled
		for i, name := range []string{"under-voltage", "freq-capped", "throttled", "soft-temp-limit"} {
			f.gauge("arka_board_throttle_flag", "Raspberry Pi firmware throttling flags (get_throttled).", b2f(t.Raw&(1<<i) != 0), "flag", name, "when", "now")
			f.gauge("arka_board_throttle_flag", "Raspberry Pi firmware throttling flags (get_throttled).", b2f(t.Raw&(1<<(16+i)) != 0), "flag", name, "when", "since_boot")
		}
	}
	f.gauge("arka_thermal_hot", "1 while optional CPU work is paused because the board is too hot.", b2f(s.Thermal.Hot))
	f.gauge("arka_thermal_limit_celsius", "Temperature above which optional CPU work pauses.", s.Thermal.LimitC)
	for st := led.Serving; st <= led.Updating; st++ {
		f.gauge("arka_state", "1 for the state the appliance is in (as the activity LED shows it), 0 for the others.", b2f(s.State.State == st), "state", st.String())
	}
	for _, c := range s.State.Conditions {
		f.gauge("arka_condition", "Conditions that set the state, by who raised them (the message is on the status page).", 1, "name", c.Name, "state", c.State.String())
	}
	if fs := s.Fan; fs != nil {
		f.gauge("arka_fan_running", "1 while the GPIO fan Arka drives runs.", b2f(fs.Running), "pin", fs.Pin)
		f.gauge("arka_fan_on_celsius", "Temperature at or above which the fan starts.", fs.OnC, "pin", fs.Pin)
		f.gauge("arka_fan_off_celsius", "Temperature at or below which the fan stops.", fs.OffC, "pin", fs.Pin)
		f.counter("arka_fan_transitions_total", "Fan starts and stops.", float64(fs.Transitions), "pin", fs.Pin)
	}
	for _, kf := range se.Fans {
		f.gauge("arka_board_fan_level", "Level of a fan the kernel drives (cooling device cur_state; 0 is off).", float64(kf.Level), "device", kf.Device, "type", kf.Type)
		f.gauge("arka_board_fan_max_level", "Highest level of a fan the kernel drives (max_state).", float64(kf.MaxLevel), "device", kf.Device, "type", kf.Type)
		if kf.RPM != nil {
			f.gauge("arka_board_fan_rpm", "Fan speed from its tachometer.", float64(*kf.RPM), "device", kf.Device, "type", kf.Type)
		}
	}
	if se.CPUFreqHz != nil {
		f.gauge("arka_board_cpu_frequency_hertz", "Current frequency of CPU 0.", float64(*se.CPUFreqHz))
	}
	if se.Load != nil {
		for _, l := range []struct {
			w string
			v float64
		}{{"1m", se.Load.Load1}, {"5m", se.Load.Load5}, {"15m", se.Load.Load15}} {
			f.gauge("arka_board_load", "Load average.", l.v, "window", l.w)
		}
	}
	if se.MemTotal != nil {
		f.gauge("arka_board_memory_total_bytes", "MemTotal.", float64(*se.MemTotal))
	}
	if se.MemAvail != nil {
		f.gauge("arka_board_memory_available_bytes", "MemAvailable.", float64(*se.MemAvail))
	}
	if se.DiskFree != nil {
		f.gauge("arka_board_disk_free_bytes", "Free space on the writable partition.", float64(*se.DiskFree), "path", se.DiskPath)
	}
	if s.Memory.RSSBytes != nil {
		f.gauge("arka_process_resident_memory_bytes", "Resident set size of arka.", float64(*s.Memory.RSSBytes))
	}
	f.gauge("arka_go_heap_alloc_bytes", "Live Go heap.", float64(s.Memory.HeapAllocBytes))
	f.gauge("arka_go_memory_limit_bytes", "Soft Go memory limit (GOMEMLIMIT).", float64(s.Memory.LimitBytes))

	for _, r := range s.Routes {
		for i, n := range r.Status {
			f.counter("arka_requests_total", "Responses by site, route and status class.", float64(n), "site", r.Site, "route", r.Route, "class", classNames[i])
		}
	}
	for _, r := range s.Routes {
		f.gauge("arka_request_latency_seconds", "Recent request latency quantiles.", r.P50Seconds, "site", r.Site, "route", r.Route, "quantile", "0.5")
		f.gauge("arka_request_latency_seconds", "Recent request latency quantiles.", r.P99Seconds, "site", r.Site, "route", r.Route, "quantile", "0.99")
	}
	for _, c := range s.Caches {
		f.gauge("arka_cache_entries", "Entries in the cache.", float64(c.Entries), "cache", c.Name)
		f.gauge("arka_cache_bytes", "Bytes held by the cache.", float64(c.Bytes), "cache", c.Name)
		f.gauge("arka_cache_budget_bytes", "Byte budget of the cache.", float64(c.BudgetBytes), "cache", c.Name)
		f.counter("arka_cache_hits_total", "Cache hits.", float64(c.Hits), "cache", c.Name)
		f.counter("arka_cache_misses_total", "Cache misses.", float64(c.Misses), "cache", c.Name)
	}
	for _, p := range s.FastCGI {
		f.gauge("arka_fastcgi_connections", "FastCGI connections by state.", float64(p.Busy), "pool", p.Address, "state", "busy")
		f.gauge("arka_fastcgi_connections", "FastCGI connections by state.", float64(p.Idle), "pool", p.Address, "state", "idle")
		f.gauge("arka_fastcgi_max_conns", "FastCGI max_conns.", float64(p.MaxConns), "pool", p.Address)
		f.gauge("arka_fastcgi_queued", "Requests waiting for a FastCGI connection.", float64(p.Queued), "pool", p.Address)
		f.gauge("arka_fastcgi_queue_size", "FastCGI queue capacity.", float64(p.QueueSize), "pool", p.Address)
		f.counter("arka_fastcgi_rejected_total", "Requests refused because the FastCGI queue was full.", float64(p.Rejected), "pool", p.Address)
		f.counter("arka_fastcgi_queue_timeouts_total", "Requests answered 503 after queue.timeout in the FastCGI queue.", float64(p.TimedOut), "pool", p.Address)
		f.counter("arka_fastcgi_queue_waits_total", "Requests that waited in the FastCGI queue.", float64(p.QueueWaits), "pool", p.Address)
		f.counter("arka_fastcgi_queue_wait_seconds_total", "Time requests spent in the FastCGI queue.", p.QueueWaitSeconds, "pool", p.Address)
	}
	for _, u := range s.Upstreams {
		f.gauge("arka_upstream_healthy", "1 if the upstream passes health checks.", b2f(u.Healthy), "upstream", u.Address)
		f.gauge("arka_upstream_connections", "Upstream connections by state.", float64(u.ActiveConns), "upstream", u.Address, "state", "active")
		f.gauge("arka_upstream_connections", "Upstream connections by state.", float64(u.IdleConns), "upstream", u.Address, "state", "idle")
		f.counter("arka_upstream_requests_total", "Requests sent upstream.", float64(u.Requests), "upstream", u.Address)
		f.counter("arka_upstream_failures_total", "Failed upstream requests.", float64(u.Failures), "upstream", u.Address)
	}
	for _, p := range s.PHPFPM {
		f.gauge("arka_phpfpm_processes", "php-fpm processes by state.", float64(p.ActiveProcesses), "pool", p.Pool, "state", "active")
		f.gauge("arka_phpfpm_processes", "php-fpm processes by state.", float64(p.IdleProcesses), "pool", p.Pool, "state", "idle")
		f.gauge("arka_phpfpm_listen_queue", "Requests in php-fpm's listen queue.", float64(p.ListenQueue), "pool", p.Pool)
		f.gauge("arka_phpfpm_max_children", "php-fpm pm.max_children.", float64(p.MaxChildren), "pool", p.Pool)
		f.counter("arka_phpfpm_max_children_reached_total", "Times php-fpm hit pm.max_children.", float64(p.MaxChildrenReached), "pool", p.Pool)
		f.counter("arka_phpfpm_slow_requests_total", "php-fpm slow requests.", float64(p.SlowRequests), "pool", p.Pool)
	}
	for _, c := range s.Certificates {
		if !c.NotAfter.IsZero() {
			f.gauge("arka_certificate_not_after_seconds", "Expiry of an ACME certificate (Unix time).", float64(c.NotAfter.Unix()), "name", c.Name, "issuer", c.Issuer)
		}
		if !c.NextAttempt.IsZero() {
			f.gauge("arka_certificate_next_attempt_seconds", "When an ACME certificate is next renewed or retried (Unix time).", float64(c.NextAttempt.Unix()), "name", c.Name)
		}
		f.gauge("arka_certificate_valid", "1 if the ACME certificate served for the name is within its validity.", b2f(c.Valid(s.Time)), "name", c.Name)
		f.gauge("arka_certificate_error", "1 if the last attempt to obtain or renew failed.", b2f(c.LastError != ""), "name", c.Name)
	}
	if len(s.Certificates) > 0 {
		f.gauge("arka_clock_waiting", "1 while certificates wait for the system clock to be synchronised.", b2f(s.ClockWaiting))
	}
	sort.SliceStable(f.list, func(i, j int) bool { return f.list[i].GetName() < f.list[j].GetName() })
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range f.list {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}
