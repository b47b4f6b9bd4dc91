package main

import (
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/config"
)

// budgetFor derives the board budget with the [global] overrides applied.
func budgetFor(b board.Board, g config.Global) board.Budget {
	var o board.Overrides
	ai := func(a config.AutoInt) *int {
		if !a.Set {
			return nil
		}
		v := a.Value
		return &v
	}
	as := func(a config.AutoSize) *int64 {
		if !a.Set {
			return nil
		}
		v := int64(a.Value)
		return &v
	}
	bc := g.Budget
	o.GOMAXPROCS = ai(bc.GOMAXPROCS)
	o.MemoryLimitBytes = as(bc.MemoryLimit)
	o.GCHeapFloorBytes = as(bc.GCHeapFloor)
	o.OpenFileCacheBytes = as(bc.OpenFileCache)
	o.ContentCacheBytes = as(bc.ContentCache)
	o.CompressedBytes = as(bc.CompressedCache)
	o.FastCGIMaxConns = ai(bc.FastCGIMaxConns)
	o.FastCGIQueue = ai(bc.FastCGIQueue)
	o.ProxyKeepAlive = ai(bc.ProxyKeepalive)
	o.PHPMaxChildren = ai(bc.PHPMaxChildren)
	o.SpoolFiles = ai(bc.SpoolFiles)
	o.SpoolBytes = as(bc.SpoolSize)
	if bc.Opcache.Set {
		v := int(int64(bc.Opcache.Value) >> 20)
		o.OpcacheMiB = &v
	}
	if bc.PHPPM == "static" || bc.PHPPM == "ondemand" {
		pm := board.PHPPM(bc.PHPPM)
		o.PHPPM = &pm
	}
	return board.ComputeBudget(b, o)
}

// applyRuntime sets GOMAXPROCS, the soft memory limit and the GC heap floor
// from the budget, except what the environment already chose (GOMAXPROCS,
// GOMEMLIMIT, GOGC: with GOGC set there is no floor), and raises the
// open-file limit (raiseNoFile). It is the one place that changes these
// runtime settings. The collector runs at twice the live
// heap (Go's default, GOGC=100) but never below the floor (startGCFloor):
// 400% held four times the live heap in garbage however large (up to 171 MB
// in the benchmark's 1 MB file test), while 100% alone collected 4-5 times a
// second under load because the live heap is only a few MiB.
func applyRuntime(b board.Budget, log *slog.Logger) {
	if os.Getenv("GOMAXPROCS") == "" && b.GOMAXPROCS > 0 {
		runtime.GOMAXPROCS(b.GOMAXPROCS)
	}
	if os.Getenv("GOMEMLIMIT") == "" && b.MemoryLimitBytes > 0 {
		debug.SetMemoryLimit(b.MemoryLimitBytes)
	}
	if os.Getenv("GOGC") == "" {
		startGCFloor(b.GCHeapFloorBytes)
	}
	raiseNoFile(log)
	if os.Getenv("GOMAXPROCS")+os.Getenv("GOMEMLIMIT")+os.Getenv("GOGC") != "" {
		log.Info("runtime settings from the environment", "GOMAXPROCS", os.Getenv("GOMAXPROCS"),
			"GOMEMLIMIT", os.Getenv("GOMEMLIMIT"), "GOGC", os.Getenv("GOGC"))
	}
}

// maxConns bounds open connections per listen address from the memory
// limit: an open connection costs up to about board.ConnBytes (64 KiB:
// goroutine stack, buffers, TLS state), so a Pi Zero 2 W (125 MiB limit)
// keeps 2000.
func maxConns(b board.Budget) int {
	n := b.MemoryLimitBytes / board.ConnBytes
	return int(max(256, min(n, 65536)))
}
