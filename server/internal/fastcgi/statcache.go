package fastcgi

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/arkaweb/arka/server/internal/monotime"
)

// statTTL is how long a file found under the root is believed to be
// there without a new stat, like nginx's open_file_cache_valid (60 s in
// the seed's nginx) but short: a script removed by a redeploy is seen
// within statTTL. Until then php-fpm is asked to run it and answers 404
// itself ("File not found."), so the client gets 404 either way. Only
// files and directories that exist are remembered: a missing path is
// looked up every time, so a new script is served at once. A reload
// builds new handlers and starts with an empty cache.
const statTTL = time.Second

// statSlots is the number of paths remembered per handler (a fixed table:
// a flood of distinct paths costs lookups, never memory).
const statSlots = 256

// statCache remembers recent fileKind results for one handler's root,
// lock-free: each slot holds the latest path that hashed to it.
type statCache [statSlots]atomic.Pointer[statEntry]

type statEntry struct {
	a, b  string // the path below the root, as passed to kind
	k     kind
	until int64 // monotime
}

// kind is fileKind(h.root, a, b), answered from the cache while fresh.
func (h *Handler) kind(a, b string) kind {
	hash := uint32(2166136261) // FNV-1a over a, a separator, b
	for i := 0; i < len(a); i++ {
		hash = (hash ^ uint32(a[i])) * 16777619
	}
	hash = (hash ^ '|') * 16777619
	for i := 0; i < len(b); i++ {
		hash = (hash ^ uint32(b[i])) * 16777619
	}
	slot := &h.stats[hash%statSlots]
	now := monotime.Now()
	if e := slot.Load(); e != nil && now < e.until && e.a == a && e.b == b {
		return e.k
	}
	k := fileKind(h.root, a, b)
	if k == kindFile || k == kindDir {
		// Copies: the request's strings may live in a buffer the engine
		// reuses.
		slot.Store(&statEntry{a: strings.Clone(a), b: strings.Clone(b), k: k, until: now + int64(statTTL)})
	}
	return k
}
