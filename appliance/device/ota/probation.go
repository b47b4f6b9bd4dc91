package ota

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// DefaultProbation is how long after a confirmed update the old root stays
// the way back: if Arka crash-loops within it, the device returns to the
// old build by itself.
const DefaultProbation = 10 * time.Minute

// probationPoll is how often probation looks at Arka (a variable for
// tests).
var probationPoll = 2 * time.Second

// RunProbation watches Arka while the last attempt is confirmed, runs from
// this boot's partition and its probation has not ended: if CrashLoop
// reports a crash loop, root= is pointed back at the other partition, the
// attempt is recorded as rolled back with the evidence, and the device
// reboots. It returns when probation ends (at once when there is none).
// The period is measured with the monotonic clock from when this boot
// starts watching; only the end of the whole period is kept on /perm (wall
// clock), so a reboot during probation watches for what is left of it.
func (a *Agent) RunProbation(ctx context.Context) {
	if a.CrashLoop == nil {
		return
	}
	a.mu.Lock()
	at := a.last
	var left time.Duration
	if at != nil && at.State == Confirmed && at.Partition == a.Running && !at.ProbationEnds.IsZero() {
		left = time.Until(at.ProbationEnds)
		if full := time.Duration(at.ProbationSeconds * float64(time.Second)); left > full {
			left = full // the clock went backwards since: watch the whole period again
		}
	}
	a.mu.Unlock()
	if left <= 0 {
		return
	}
	a.logf("update: Arka %s is on probation for %s: the old build on root partition %d comes back if Arka crash-loops", a.Build.Version, left.Round(time.Second), 5-a.Running)
	end := time.NewTimer(left)
	defer end.Stop()
	tick := time.NewTicker(probationPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-end.C:
			a.logf("update: probation of Arka %s ended without a crash loop", a.Build.Version)
			return
		case <-tick.C:
			a.mu.Lock()
			current := a.last == at && at.State == Confirmed && !at.ProbationEnds.IsZero()
			a.mu.Unlock()
			if !current {
				return // another update (or a rollback on request) since: its own rules apply
			}
			reason, ev := a.CrashLoop()
			if reason == "" {
				continue
			}
			if err := a.returnTo(at, 5-a.Running, RolledBack, "on probation: "+reason, ev); err != nil {
				a.logf("update: cannot roll back: %v", err)
				continue
			}
			a.logf("update: Arka crash-loops on probation (%s): rebooting into root partition %d", reason, 5-a.Running)
			a.Device.Reboot()
			return
		}
	}
}

// Rollback returns to the other root partition on request (POST
// /arka/update/rollback): root= names it and the device reboots. The last
// attempt records the switch, so Status is right after it.
func (a *Agent) Rollback() error {
	a.requests.Lock()
	defer a.requests.Unlock()
	a.mu.Lock()
	undecided := a.TrialBoot() && !a.decided
	a.mu.Unlock()
	if undecided {
		return &httpError{http.StatusConflict, "an update's trial is running: wait for its verdict"}
	}
	other := 5 - a.Running
	if other == a.KernelRoot && !a.TrialBoot() {
		return &httpError{http.StatusConflict, fmt.Sprintf("the next boot already runs root partition %d", other)}
	}
	if _, err := a.otherBuild(); err != nil {
		return &httpError{http.StatusConflict, fmt.Sprintf("root partition %d holds no Arka build to return to (%v)", other, err)}
	}
	// A root an update wrote is checked against what it wrote: an update
	// interrupted since may have left it half overwritten.
	a.mu.Lock()
	last := a.last
	a.mu.Unlock()
	if last != nil && last.Partition == other && last.Faulty {
		return &httpError{http.StatusConflict, fmt.Sprintf("root partition %d holds Arka %s, which failed on this device (%s): not switching to it", other, last.To.Version, last.Reason)}
	}
	if last != nil && last.Partition == other && last.RootSHA256 != "" {
		if err := a.checkRoot(other, TestbootRequest{RootSHA256: last.RootSHA256, RootSize: last.RootSize}); err != nil {
			return &httpError{http.StatusConflict, fmt.Sprintf("root partition %d no longer holds Arka %s intact (an update was interrupted since?): not switching", other, last.To.Version)}
		}
	}
	if err := a.returnTo(nil, other, "", "rollback on request", nil); err != nil {
		return err
	}
	a.logf("update: rollback on request: rebooting into root partition %d", other)
	go a.Device.Reboot()
	return nil
}

// returnTo points root= at partition n and records it: as state (the last
// attempt's, when it concerns the running partition), or, for a switch on
// request, whatever describes the result. With expect set, it does
// nothing unless expect is still the last attempt.
func (a *Agent) returnTo(expect *Attempt, n int, state State, reason string, ev *Evidence) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if expect != nil && a.last != expect {
		return fmt.Errorf("another update was prepared since")
	}
	boot, err := a.Device.OpenBoot()
	if err != nil {
		return err
	}
	defer boot.Close()
	// The boot files of the build on n first (they name n in root=
	// already), then root= checked and synced.
	other, _ := a.otherBuildLocked()
	note, _ := a.restoreBootLocked(boot, n, other, state == "")
	if err := PointRootAt(boot, n); err != nil {
		return err
	}
	if err := boot.Sync(); err != nil {
		return err
	}
	now := time.Now().UTC()
	at := a.last
	switch {
	case state != "":
		if at != nil {
			at.State, at.Reason, at.Finished, at.Evidence, at.Faulty = state, reason, now, ev, true
		}
	case at != nil && at.Partition == a.Running:
		// Back from the last update's build to the one before it.
		at.State, at.Reason, at.Finished = RolledBack, reason, now
	case at != nil && at.Partition == n:
		// Forward again to the last update's build.
		at.State, at.Reason, at.Finished = Confirmed, "returned to on request", now
	default:
		at = &Attempt{Partition: n, From: a.Build, To: other, State: Confirmed, Reason: "switched to on request", Requested: now, Finished: now}
	}
	if at != nil {
		at.Boot = note
	}
	if state == "" {
		at.ProbationEnds = time.Time{} // (an automatic rollback keeps it: evidence that it came within probation)
	}
	a.last = at
	a.decided = true
	return a.save(at)
}

// otherBuild is the build on the root partition this system does not run.
func (a *Agent) otherBuild() (Build, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.otherBuildLocked()
}

func (a *Agent) otherBuildLocked() (Build, error) {
	if a.other == nil {
		a.other = &otherRoot{}
		ob, ok := a.Device.(interface{ RootBuild(n int) (Build, error) })
		if ok {
			a.other.b, a.other.err = ob.RootBuild(5 - a.Running)
		} else {
			a.other.err = fmt.Errorf("cannot read root partition %d", 5-a.Running)
		}
	}
	return a.other.b, a.other.err
}

// otherRoot is what the other root partition holds, read once.
type otherRoot struct {
	b   Build
	err error
}
