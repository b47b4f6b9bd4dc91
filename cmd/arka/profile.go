package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// startCPUProfile writes a CPU profile to path until the returned function
// is called. Enabled by ARKA_CPUPROFILE=path (see README, Performance).
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeHeapProfile writes a heap profile (what is live after a collection,
// and what was allocated over the run) to path. Enabled by
// ARKA_MEMPROFILE=path, written on exit (see README, Performance).
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile's in-use figures are as of the last collection
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
