// Package status serves Arka's status page: board identity and health, memory,
// request counters and latency per site and route, caches against their budgets,
// FastCGI pools, upstreams and php-fpm, plus the last hour of temperature, load and
// requests per second as inline SVG sparklines.
//
// The package does not import the server. The server implements Source, which
// returns a Snapshot (plain data), owns a History that it feeds every 10 s
// (History.Run or History.Observe), and builds the handler with New. The handler
// answers HTML (< 10 KB, no scripts, meta refresh), JSON (Accept: application/json
// or ?format=json) and Prometheus text exposition (?format=prometheus), and only
// to clients whose address is in the allow list (403 otherwise).
package status

import (
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/board/fan"
	"github.com/arkaweb/arka/board/led"
)

// Source returns the current state of the server. It is called once per status
// request and once per history sample, so it should be cheap (read counters,
// do not walk caches).
type Source interface {
	Snapshot() Snapshot
}

// SourceFunc adapts a function to Source.
type SourceFunc func() Snapshot

// Snapshot calls f.
func (f SourceFunc) Snapshot() Snapshot { return f() }

// Snapshot is everything the status page shows. Zero values mean "none" (no
// routes, no pools); absent sensors are nil pointers inside Sensors.
type Snapshot struct {
	Time      time.Time `json:"time"`
	Version   string    `json:"version"`    // Arka version, server.Version
	StartedAt time.Time `json:"started_at"` // when this arka process started

	Board   BoardInfo          `json:"board"`
	Sensors board.Sensors      `json:"sensors"`
	Thermal board.ThermalState `json:"thermal"`
	Fan     *fan.State         `json:"fan,omitempty"` // the GPIO fan Arka drives; nil without [global] fan (kernel fans: Sensors.Fans)
	Memory  Memory             `json:"memory"`

	// State is what the appliance is doing and why (booting, serving,
	// updating, degraded, rolled-back), as the activity LED shows it.
	State led.Status `json:"state"`

	Routes    []RouteStats    `json:"routes"`
	Caches    []CacheStats    `json:"caches"`
	FastCGI   []FastCGIPool   `json:"fastcgi"`
	Upstreams []UpstreamStats `json:"upstreams"`
	PHPFPM    []PHPFPMPool    `json:"phpfpm,omitempty"`    // php-fpm's own status, when Arka runs php-fpm
	Appliance *Appliance      `json:"appliance,omitempty"` // on an appliance: deployed site, settings, Wi-Fi (appliance.go)

	// Serving says which configuration runs (ServingAsWritten, …; "" for
	// a plain Source); Problems are what Arka could not do as configured
	// and works around (a site file with a mistake, a certificate that did
	// not load, an address it cannot bind yet), one line each.
	Serving  string   `json:"serving,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// Certificates are those obtained from an ACME CA (certs.go);
	// ClockWaiting is true while nothing is ordered because the system
	// clock is not synchronised yet.
	Certificates []Certificate `json:"certificates,omitempty"`
	ClockWaiting bool          `json:"clock_waiting,omitempty"`

	// History is filled by the handler from its History; sources leave it empty.
	History *HistoryView `json:"history,omitempty"`
}

// BoardInfo identifies the machine; see board.Board.
type BoardInfo struct {
	Model    string     `json:"model"`
	Kind     board.Kind `json:"kind"`
	SoC      string     `json:"soc,omitempty"`
	CPU      string     `json:"cpu,omitempty"`
	Cores    int        `json:"cores"`
	RAMBytes uint64     `json:"ram_bytes"` // usable RAM (board.Board.UsableRAMBytes)
	QEMU     bool       `json:"qemu"`
}

// BoardInfoFrom copies the identity fields of b.
func BoardInfoFrom(b board.Board) BoardInfo {
	return BoardInfo{Model: b.Model, Kind: b.Kind, SoC: b.SoC, CPU: b.CPU, Cores: b.Cores, RAMBytes: b.UsableRAMBytes(), QEMU: b.QEMU}
}

// Memory is Arka's own memory use (the system's is in Sensors).
type Memory struct {
	RSSBytes       *uint64 `json:"rss_bytes"`        // resident set of the arka process; nil if unknown
	HeapAllocBytes uint64  `json:"heap_alloc_bytes"` // Go heap in use: live objects and garbage not yet collected (runtime.MemStats.HeapAlloc)
	HeapLiveBytes  uint64  `json:"heap_live_bytes"`  // heap the last collection found live (runtime/metrics /gc/heap/live:bytes)
	HeapSysBytes   uint64  `json:"heap_sys_bytes"`   // heap memory obtained from the OS
	GoSysBytes     uint64  `json:"go_sys_bytes"`     // all memory the Go runtime obtained
	LimitBytes     int64   `json:"limit_bytes"`      // GOMEMLIMIT in force (debug.SetMemoryLimit(-1))
	NumGC          uint32  `json:"num_gc"`
	Goroutines     int     `json:"goroutines"`
}

// StatusClasses counts responses by status class: [0] 1xx, [1] 2xx, [2] 3xx,
// [3] 4xx, [4] 5xx (RFC 9110 section 15).
type StatusClasses [5]uint64

// RouteStats are the counters of one route of one site.
type RouteStats struct {
	Site       string        `json:"site"`  // first server name, or "default"
	Route      string        `json:"route"` // route path prefix
	Handler    string        `json:"handler"`
	Requests   uint64        `json:"requests"`    // total since start
	PerSecond  float64       `json:"per_second"`  // recent rate
	Status     StatusClasses `json:"status"`      // 1xx..5xx
	P50Seconds float64       `json:"p50_seconds"` // recent median latency
	P99Seconds float64       `json:"p99_seconds"` // recent 99th percentile latency
}

// CacheStats describe one cache against its budget.
type CacheStats struct {
	Name        string `json:"name"` // "open files", "compressed", "content"
	Entries     uint64 `json:"entries"`
	Bytes       int64  `json:"bytes"`
	BudgetBytes int64  `json:"budget_bytes"`
	Hits        uint64 `json:"hits"`
	Misses      uint64 `json:"misses"`
}

// HitRatio is hits / (hits + misses), or 0 before the first lookup.
func (c CacheStats) HitRatio() float64 {
	if c.Hits+c.Misses == 0 {
		return 0
	}
	return float64(c.Hits) / float64(c.Hits+c.Misses)
}

// FastCGIPool is the state of one FastCGI connection pool and its FIFO queue.
type FastCGIPool struct {
	Address   string `json:"address"` // "unix:/run/php/php-fpm.sock", "127.0.0.1:9000"
	MaxConns  int    `json:"max_conns"`
	Busy      int    `json:"busy"`
	Idle      int    `json:"idle"`
	Queued    int    `json:"queued"`
	QueueSize int    `json:"queue_size"`
	Rejected  uint64 `json:"rejected"`  // requests refused because the queue was full
	TimedOut  uint64 `json:"timed_out"` // 503s after queue.timeout in the queue
	// Requests that waited in the queue, their total and longest wait.
	QueueWaits          uint64  `json:"queue_waits"`
	QueueWaitSeconds    float64 `json:"queue_wait_seconds"`
	QueueWaitMaxSeconds float64 `json:"queue_wait_max_seconds"`
}

// UpstreamStats is the state of one reverse-proxy upstream.
type UpstreamStats struct {
	Address     string `json:"address"`
	Healthy     bool   `json:"healthy"`
	ActiveConns int    `json:"active_conns"`
	IdleConns   int    `json:"idle_conns"`
	Requests    uint64 `json:"requests"`
	Failures    uint64 `json:"failures"`
}

// PHPFPMPool is php-fpm's own view of a pool (its status page fields).
type PHPFPMPool struct {
	Pool               string `json:"pool"`
	ActiveProcesses    int    `json:"active_processes"`
	IdleProcesses      int    `json:"idle_processes"`
	ListenQueue        int    `json:"listen_queue"`
	MaxChildren        int    `json:"max_children"`
	MaxChildrenReached uint64 `json:"max_children_reached"`
	SlowRequests       uint64 `json:"slow_requests"`
}

// TotalRequests sums Requests over all routes.
func (s Snapshot) TotalRequests() uint64 {
	var n uint64
	for _, r := range s.Routes {
		n += r.Requests
	}
	return n
}

// TotalPerSecond sums PerSecond over all routes.
func (s Snapshot) TotalPerSecond() float64 {
	var n float64
	for _, r := range s.Routes {
		n += r.PerSecond
	}
	return n
}

// Served configurations (Snapshot.Serving, Readiness.Config).
const (
	ServingAsWritten = "as-written" // the site files as they are now
	ServingLastGood  = "last-good"  // the last site files that loaded (they have a mistake now)
	ServingFallback  = "fallback"   // none loaded: Arka's built-in page saying what is wrong
	// ServingPartial: no site files loaded before and some have mistakes
	// now; the others serve.
	ServingPartial = "partial"
)

// ReadyFile is the name of the readiness file (Readiness as JSON) that
// cmd/arka -appliance keeps in its state directory, rewritten whenever it
// changes.
const ReadyFile = "ready.json"

// Readiness is what Arka reports about itself when it runs supervised
// (cmd/arka -appliance writes it as JSON to a file in its state directory,
// which the appliance's init reads to decide an update's trial). Ready is
// true only when the configuration loaded as written (Config is
// ServingAsWritten), every listener is bound, every certificate loaded and
// php-fpm runs where one is configured: Problems is then empty.
type Readiness struct {
	PID      int       `json:"pid"`
	Time     time.Time `json:"time"`
	Ready    bool      `json:"ready"`
	Config   string    `json:"config"`             // ServingAsWritten, ServingLastGood, ServingPartial or ServingFallback
	Problems []string  `json:"problems,omitempty"` // one line each, "file:line:col: what is wrong" where known
}
