package board

import "fmt"

// Byte sizes.
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// FloorRAMBytes is the memory Budget assumes when the board's RAM is unknown: the
// smallest board Arka supports (a 512 MB Pi Zero 2 W, of which ~416 MiB is usable).
const FloorRAMBytes = 416 * MiB

// MaxMemoryLimitBytes caps the derived soft memory limit (GOMEMLIMIT) on
// boards and PCs with much memory; see ComputeBudget.
const MaxMemoryLimitBytes = 1 * GiB

// MaxGCHeapFloorBytes caps the derived GC heap floor (Budget.GCHeapFloorBytes):
// the heap the collector lets grow before it runs, however small the live heap.
// 16 MiB keeps Arka's peak RSS within 1.2x nginx's (about 40 MB serving 64
// clients, against 34-36 MB at Go's default 4 MiB minimum and nginx's 34 MB;
// a 32 MiB floor made it 52-56 MB) while cutting collections under load
// two- to threefold (see ComputeBudget).
const MaxGCHeapFloorBytes = 16 * MiB

// GoHeapMinimumBytes is the Go runtime's minimum heap goal at GOGC=100; the
// runtime scales it with GOGC (runtime/mgcpacer.go, defaultHeapMinimum), which
// GCPercent relies on.
const GoHeapMinimumBytes = 4 * MiB

// PHPWorkerBytes is the resident memory budgeted per php-fpm worker (private pages
// of a worker serving a typical CMS page with opcache on; the shared opcache segment
// is budgeted separately as OpcacheMiB).
const PHPWorkerBytes = 32 * MiB

// ConnBytes is the memory budgeted per open client connection (goroutine
// stack, buffers, TLS state): the connection limit per listen address is
// the memory limit divided by it (cmd/arka maxConns), and the HTTP/2
// engine bounds the request heads a connection's streams in flight hold
// to it (server/internal/h2), so that many streams do not make a
// connection cost megabytes.
const ConnBytes = 64 * KiB

// PHPPM is php-fpm's process manager mode (php-fpm.conf "pm").
type PHPPM string

// php-fpm process manager modes Arka uses.
const (
	PMStatic   PHPPM = "static"   // all pm.max_children workers start up front
	PMOnDemand PHPPM = "ondemand" // workers start on demand and exit when idle
)

// Budget is every resource bound Arka derives from the board. Byte fields are in
// bytes; counts are plain counts. Each field can be overridden in the config
// (Overrides); "auto" (nil) keeps the derived value.
type Budget struct {
	// Inputs the numbers were derived from.
	Cores      int    // logical CPUs
	RAMBytes   uint64 // usable RAM the split is computed from
	RAMAssumed bool   // RAM was unknown and FloorRAMBytes was used

	GOMAXPROCS         int   // runtime.GOMAXPROCS
	MemoryLimitBytes   int64 // soft Go memory limit (GOMEMLIMIT) for the arka process
	GCHeapFloorBytes   int64 // smallest heap goal of the collector (see GCPercent); 0: Go's default (4 MiB)
	OpenFileCacheBytes int64 // open-file cache: descriptors, stat results, ETags, precomputed headers
	CompressedBytes    int64 // compressed-variant cache (br/zstd/gzip bodies made on the fly)
	ContentCacheBytes  int64 // content cache (bodies of small files kept in memory)
	FastCGIMaxConns    int   // FastCGI connections per php-fpm pool (max_conns)
	FastCGIQueue       int   // requests waiting for a FastCGI connection before 503
	ProxyKeepAlive     int   // idle keep-alive connections kept per upstream
	PHPMaxChildren     int   // php-fpm pm.max_children
	PHPPM              PHPPM // php-fpm pm
	OpcacheMiB         int   // opcache.memory_consumption, MiB
	SpoolFiles         int   // request bodies and buffered responses spooled to files at once (each holds a file descriptor)
	SpoolBytes         int64 // bytes of those files together (disk: on the appliance /perm)
}

// DefaultSpoolBytes is the disk all spooled request bodies and buffered
// responses may take together: as nginx's largest temporary file, and a small part of the
// smallest SD card gokrazy fits on.
const DefaultSpoolBytes = 1 * GiB

// Overrides replaces derived Budget values. A nil field means "auto" (derive it);
// the config layer maps the keyword "auto" to nil. Values are used as given, after
// Budget clamps them to sane minimums (at least 1 CPU, 1 connection, 1 MiB).
type Overrides struct {
	GOMAXPROCS         *int
	MemoryLimitBytes   *int64
	GCHeapFloorBytes   *int64 // 0 turns the floor off (Go's default target, GOGC=100)
	OpenFileCacheBytes *int64
	CompressedBytes    *int64
	ContentCacheBytes  *int64
	FastCGIMaxConns    *int
	FastCGIQueue       *int
	ProxyKeepAlive     *int
	PHPMaxChildren     *int
	PHPPM              *PHPPM
	OpcacheMiB         *int
	SpoolFiles         *int
	SpoolBytes         *int64
}

func clamp[T int | int64 | uint64](v, lo, hi T) T { return max(lo, min(v, hi)) }

// ComputeBudget derives the budget for b and applies o. The formula, with R the
// usable RAM (MemTotal, or 90% of the revision-code RAM, or FloorRAMBytes when
// unknown) and n the logical CPU count:
//
//	memory split of R: 30% arka (GOMEMLIMIT), 35% php-fpm (workers + opcache),
//	                   35% kernel, page cache (which serves static files) and the rest
//	GOMEMLIMIT         = clamp(30% R, 64 MiB, 1 GiB): a soft limit. A web server's
//	                     heap is its caches plus connections; nginx serves
//	                     from some tens of MB, and beyond 1 GiB the page cache
//	                     serves files better than a Go heap does (a larger limit
//	                     only lets the collector run late on a PC)
//	GC heap floor      = clamp(GOMEMLIMIT / 8, 4 MiB, 16 MiB): the collector runs
//	                     when the heap reaches max(2 x live heap, floor)
//	                     (GCPercent). A server's live heap is small (2-6 MiB
//	                     serving 64 clients), so Go's default goal of twice
//	                     that meant 4-9 collections a second under load; the
//	                     floor cuts that two- to threefold and CPU per request
//	                     2-6% (small page, proxy), for about 5 MB more RSS.
//	                     15.6 MiB on a Pi Zero 2 W, 16 MiB from 1 GB up
//	open-file cache    = clamp(5% GOMEMLIMIT, 2 MiB, 64 MiB)
//	compressed cache   = clamp(25% GOMEMLIMIT, 8 MiB, 2 GiB)
//	content cache      = clamp(20% GOMEMLIMIT, 8 MiB, 2 GiB)
//	                     (caches take half the limit; the other half is connections,
//	                     buffers and GC headroom)
//	GOMAXPROCS         = n: Go only runs what is runnable, so fewer Ps would only add latency
//	                     (measured with the load generator on the same 2 cores:
//	                     GOMAXPROCS=1 cost 3-19% more CPU per request on the
//	                     proxy, and fewer requests per second)
//	opcache MiB        = clamp(R/32, 32, 256) rounded down to 16 MiB steps
//	pm.max_children    = clamp(min((35% R - opcache) / 32 MiB, 4n), 2, 256)
//	                     memory bounds small boards, CPU (4 per core: PHP waits on the
//	                     database and disk) bounds large ones
//	pm                 = ondemand below 2 GiB (idle workers give memory back), else static
//	FastCGI max_conns  = pm.max_children: php-fpm ties a worker to each connection, so
//	                     more connections than workers only queue inside php-fpm
//	FastCGI queue      = clamp(8 x max_conns, 32, 4096)
//	proxy keep-alive   = clamp(GOMEMLIMIT / 2 MiB, 32, 128): an idle upstream
//	                     connection costs about 10 KiB, and fewer kept connections
//	                     than concurrent requests means dialling (and TIME_WAIT)
//	                     per request; nginx's `keepalive 128` is the peer
//	spool files        = clamp(GOMEMLIMIT / 512 KiB, 64, 1024): one for every
//	                     eight connections the memory limit admits (64 KiB
//	                     each), so that connections and spool files together
//	                     stay well within the 4096 descriptors a process gets
//	                     (the kernel's hard limit; gokrazy raises none):
//	                     249 on a Pi Zero 2 W
//	spool bytes        = DefaultSpoolBytes (1 GiB): disk, not memory
//	                     (one client may hold a quarter of each, as of
//	                     connections: see package server)
func ComputeBudget(b Board, o Overrides) Budget {
	r := b.UsableRAMBytes()
	bud := Budget{Cores: max(b.Cores, 1), RAMBytes: r}
	if r == 0 {
		r, bud.RAMBytes, bud.RAMAssumed = FloorRAMBytes, FloorRAMBytes, true
	}
	n := bud.Cores

	limit := clamp(int64(r)*30/100, 64*MiB, MaxMemoryLimitBytes)
	bud.GOMAXPROCS = n
	bud.MemoryLimitBytes = limit
	bud.GCHeapFloorBytes = clamp(limit/8, GoHeapMinimumBytes, MaxGCHeapFloorBytes)
	bud.OpenFileCacheBytes = clamp(limit*5/100, 2*MiB, 64*MiB)
	bud.CompressedBytes = clamp(limit*25/100, 8*MiB, 2*GiB)
	bud.ContentCacheBytes = clamp(limit*20/100, 8*MiB, 2*GiB)

	opcache := clamp(int(r/32/MiB), 32, 256) / 16 * 16
	bud.OpcacheMiB = opcache
	phpMem := int64(r)*35/100 - int64(opcache)*MiB
	byMem := int(max(phpMem, 0) / PHPWorkerBytes)
	bud.PHPMaxChildren = clamp(min(byMem, 4*n), 2, 256)
	bud.PHPPM = PMStatic
	if r < 2*GiB {
		bud.PHPPM = PMOnDemand
	}
	bud.FastCGIMaxConns = bud.PHPMaxChildren
	bud.FastCGIQueue = clamp(8*bud.FastCGIMaxConns, 32, 4096)
	bud.ProxyKeepAlive = clamp(int(limit/(2*MiB)), 32, 128)
	bud.SpoolFiles = int(clamp(limit/(512*KiB), 64, 1024))
	bud.SpoolBytes = DefaultSpoolBytes

	// Overrides.
	setInt := func(dst *int, v *int, lo int) {
		if v != nil {
			*dst = max(*v, lo)
		}
	}
	setBytes := func(dst *int64, v *int64) {
		if v != nil {
			*dst = max(*v, MiB)
		}
	}
	setInt(&bud.GOMAXPROCS, o.GOMAXPROCS, 1)
	setBytes(&bud.MemoryLimitBytes, o.MemoryLimitBytes)
	if o.GCHeapFloorBytes != nil {
		bud.GCHeapFloorBytes = max(*o.GCHeapFloorBytes, 0)
	}
	setBytes(&bud.OpenFileCacheBytes, o.OpenFileCacheBytes)
	setBytes(&bud.CompressedBytes, o.CompressedBytes)
	setBytes(&bud.ContentCacheBytes, o.ContentCacheBytes)
	setInt(&bud.PHPMaxChildren, o.PHPMaxChildren, 1)
	if o.PHPMaxChildren != nil && o.FastCGIMaxConns == nil {
		bud.FastCGIMaxConns = bud.PHPMaxChildren // keep the pairing unless both are set
	}
	setInt(&bud.FastCGIMaxConns, o.FastCGIMaxConns, 1)
	if o.FastCGIQueue == nil {
		bud.FastCGIQueue = clamp(8*bud.FastCGIMaxConns, 32, 4096)
	}
	setInt(&bud.FastCGIQueue, o.FastCGIQueue, 0)
	setInt(&bud.ProxyKeepAlive, o.ProxyKeepAlive, 0)
	setInt(&bud.OpcacheMiB, o.OpcacheMiB, 8)
	setInt(&bud.SpoolFiles, o.SpoolFiles, 1)
	setBytes(&bud.SpoolBytes, o.SpoolBytes)
	if o.PHPPM != nil && (*o.PHPPM == PMStatic || *o.PHPPM == PMOnDemand) {
		bud.PHPPM = *o.PHPPM
	}
	return bud
}

// CacheBytes is the sum of the cache budgets, all of which live inside MemoryLimitBytes.
func (b Budget) CacheBytes() int64 {
	return b.OpenFileCacheBytes + b.CompressedBytes + b.ContentCacheBytes
}

// GCPercent is the GOGC value that makes the collector's next heap goal
// max(2 x live heap, floor) (the GC heap floor). marked is the heap marked live
// by the last cycle (runtime/metrics /gc/heap/live:bytes) and roots the stack
// and global bytes it scanned (/gc/scan/stack:bytes + /gc/scan/globals:bytes);
// all three in bytes.
//
// The runtime's goal for GOGC=p is max(marked + (marked+roots) x p/100,
// GoHeapMinimumBytes x p/100) (runtime/mgcpacer.go). GCPercent returns 100
// when twice the live heap is above the floor; else the p that puts the first
// term at the floor, but at most floor/GoHeapMinimumBytes x 100, where the
// second term is the floor: either way the goal is the floor (to within a
// byte per percent), never above it. floor <= 0 means no floor: 100.
func GCPercent(floor int64, marked, roots uint64) int {
	if floor <= 0 {
		return 100
	}
	f := uint64(floor)
	top := max(f*100/GoHeapMinimumBytes, 100)
	if marked >= f {
		return 100
	}
	base := max(marked+roots, 1)
	p := (f - marked) * 100 / base
	return int(clamp(p, 100, top))
}

// FormatBytes renders n with a binary unit: "512 B", "64 MiB", "1.5 GiB".
func FormatBytes[T int64 | uint64 | int](n T) string {
	v := float64(n)
	switch {
	case v >= GiB:
		return trimFloat(v/GiB) + " GiB"
	case v >= MiB:
		return trimFloat(v/MiB) + " MiB"
	case v >= KiB:
		return trimFloat(v/KiB) + " KiB"
	}
	return fmt.Sprintf("%d B", int64(n))
}

func trimFloat(f float64) string {
	if f >= 100 || f == float64(int64(f)) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.1f", f)
}
