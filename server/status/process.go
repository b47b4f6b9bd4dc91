package status

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
)

// ReadProcessMemory fills Memory for the calling process: RSS from
// /proc/self/statm (nil where that file does not exist), the rest from the Go
// runtime. It stops the world briefly (runtime.ReadMemStats), which is fine once
// per status request or sample.
func ReadProcessMemory() Memory {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := Memory{
		HeapAllocBytes: ms.HeapAlloc, HeapSysBytes: ms.HeapSys, GoSysBytes: ms.Sys,
		LimitBytes: debug.SetMemoryLimit(-1), NumGC: ms.NumGC, Goroutines: runtime.NumGoroutine(),
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	if metrics.Read(live); live[0].Value.Kind() == metrics.KindUint64 {
		m.HeapLiveBytes = live[0].Value.Uint64()
	}
	// statm: size resident shared text lib data dt, in pages.
	if data, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := bytes.Fields(data)
		if len(f) > 1 {
			if pages, err := strconv.ParseUint(string(f[1]), 10, 64); err == nil {
				rss := pages * uint64(os.Getpagesize())
				m.RSSBytes = &rss
			}
		}
	}
	return m
}
