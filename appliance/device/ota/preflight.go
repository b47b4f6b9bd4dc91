package ota

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// PermFreeMin is the free space /perm must have before an update starts:
// room for the attempt's record and evidence (a few KiB), Arka's state and
// its copy of the last good configuration, with a margin.
const PermFreeMin = 4 << 20

// PreflightRequest is the body of POST /arka/update/preflight: what the
// client is about to send.
type PreflightRequest struct {
	To       Build `json:"to"`
	RootSize int64 `json:"root_size"` // bytes of the root file system
}

// Preflight checks, before anything is written, that an update can be
// recorded and applied: not a trial boot, the image's board is the
// device's, /perm is mounted, writable (a file written, synced and removed)
// and has PermFreeMin free. Its error is one line.
func (a *Agent) Preflight(req PreflightRequest) error {
	if a.TrialBoot() {
		return &httpError{http.StatusConflict, a.trialConflict()}
	}
	if req.To.Board != "" && a.Build.Board != "" && req.To.Board != a.Build.Board {
		return &httpError{http.StatusConflict, fmt.Sprintf("the image is for board %s, this device runs a %s image: nothing written", req.To.Board, a.Build.Board)}
	}
	perm := a.Perm
	if perm == "" {
		perm = "/perm"
	}
	fail := func(format string, args ...any) error {
		return &httpError{http.StatusInsufficientStorage, fmt.Sprintf(format, args...) + ": the update could not record its trial, so nothing was written"}
	}
	var root, pst unix.Stat_t
	if err := unix.Stat(perm, &pst); err != nil {
		return fail("%s: %v", perm, err)
	}
	if unix.Stat(filepath.Dir(perm), &root) == nil && root.Dev == pst.Dev && !a.PermOnRootOK {
		return fail("%s is not mounted (the permanent partition did not mount at boot)", perm)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(perm, &fs); err != nil {
		return fail("%s: %v", perm, err)
	}
	need := PermFreeMin + a.bootKeepNeed()
	if free := int64(fs.Bavail) * int64(fs.Bsize); free < need {
		return fail("%s has %s free, an update needs %s (its record, and a copy of the boot files for the way back)", perm, mib(free), mib(need))
	}
	probe := filepath.Join(filepath.Dir(a.statusFile()), ".preflight")
	if err := writeProbe(probe); err != nil {
		return fail("%s is not writable (%v)", perm, err)
	}
	// The running build's boot files, for a way back to it.
	if err := a.keepRunningBoot(); err != nil {
		return fail("%v", err)
	}
	// The other root partition is about to be written: a probation still
	// running must not return to it.
	a.mu.Lock()
	defer a.mu.Unlock()
	if at := a.last; at != nil && at.State == Confirmed && !at.ProbationEnds.IsZero() {
		at.ProbationEnds = time.Time{}
		if err := a.save(at); err != nil {
			return err
		}
		a.logf("update: probation of Arka %s ended: another update is being sent", at.To.Version)
	}
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// writeProbe writes 64 KiB to path, syncs it and removes it.
func writeProbe(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	_, err = f.Write(make([]byte, 64<<10))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
