package ota

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/arkaweb/arka/appliance/device/supervise"
	"github.com/arkaweb/arka/internal/atomicfile"
)

// BootPartition is partition 1, open for reading and in-place writing.
type BootPartition interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Close() error
}

// Device is what the Agent needs from the machine (package ota's Linux
// implementation: LinuxDevice).
type Device interface {
	OpenBoot() (BootPartition, error)
	// OpenRoot opens root partition n (2 or 3) for reading.
	OpenRoot(n int) (io.ReadCloser, error)
	// Testboot asks gokrazy to trial the inactive root at the next boot
	// (POST /update/testboot).
	Testboot(ctx context.Context) error
	// Reboot reboots the machine; it does not return if it succeeds.
	Reboot()
}

// Agent is arka-init's update agent. Fill in the exported fields, call
// Start once /perm is mounted, Register to serve its endpoints, and on a
// trial boot RunTrial once the supervised programs run.
type Agent struct {
	StatusFile string // default StatusFile
	Build      Build  // the running build
	BootID     string
	Running    int // root partition this system runs from
	KernelRoot int // root partition root= named at this boot
	// KernelCmdline is /proc/cmdline, for Status.
	KernelCmdline string
	Device        Device
	Logf          func(format string, args ...any) // default: discard
	// TrialDeadline bounds a trial boot from Start: if it is neither
	// confirmed nor failed by then (something hangs), it fails and the
	// device reboots into the old root. Default 5 minutes.
	TrialDeadline time.Duration
	// Evidence, if set, says what the trial saw of Arka; called when a
	// trial fails, its answer kept with the attempt.
	Evidence func() *Evidence
	// Arka, if set, returns Arka's supervisor state for Status.
	Arka func() *supervise.State
	// Perm is the permanent partition's mount point (default /perm);
	// PermOnRootOK lets Preflight accept one that is not a mount of its
	// own (tests).
	Perm         string
	PermOnRootOK bool
	// CrashLoop, if set, says whether Arka crash-loops (a reason, and the
	// evidence), for probation (RunProbation).
	CrashLoop func() (string, *Evidence)

	mu      sync.Mutex
	last    *Attempt
	decided bool // the trial was confirmed or failed
	// rebootForBoot: Start restored another kernel than the one running
	// (Settle reboots into it).
	rebootForBoot bool
	other         *otherRoot // the other root partition's build, once read
	requests      sync.Mutex
}

// TrialBoot reports whether this boot is a trial boot: the system runs
// from another root partition than the kernel's root= names.
func (a *Agent) TrialBoot() bool { return a.Running != a.KernelRoot }

func (a *Agent) logf(format string, args ...any) {
	if a.Logf != nil {
		a.Logf(format, args...)
	}
}

func (a *Agent) statusFile() string {
	if a.StatusFile == "" {
		return StatusFile
	}
	return a.StatusFile
}

// Start reads the last attempt and moves it on according to this boot:
//   - a trial boot of the attempt's partition: Trial (RunTrial decides);
//   - a normal boot of another partition while the attempt was pending,
//     on trial or failed: RolledBack, saying why;
//   - a normal boot of the attempt's partition while the attempt was not
//     confirmed (someone called gokrazy's /update/switch): Confirmed.
func (a *Agent) Start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	last, err := a.load()
	if err != nil {
		a.logf("update: %v", err)
	}
	now := time.Now().UTC()
	switch {
	case a.TrialBoot():
		if last == nil || last.Partition != a.Running || (last.State != Pending && last.State != Trial) {
			// A trial nobody announced to the agent (gok update --testboot).
			last = &Attempt{Partition: a.Running, To: a.Build, Requested: now,
				Reason: "trial boot not requested through /arka/update/testboot"}
		}
		last.State, last.Started, last.To = Trial, now, a.Build
		a.logf("update: trial boot of root partition %d (Arka %s); root= still names partition %d until Arka passes its health check", a.Running, a.Build.Version, a.KernelRoot)
		d := a.TrialDeadline
		if d == 0 {
			d = 5 * time.Minute
		}
		time.AfterFunc(d, func() { a.fail(fmt.Sprintf("the trial did not finish within %s", d)) })
	case last == nil:
	case last.State == Pending || last.State == Trial || last.State == Failed:
		if last.Partition != a.Running {
			last.Reason = rollbackReason(last)
			last.State, last.Finished, last.Faulty = RolledBack, now, true
			a.logf("update: rolled back to root partition %d: %s", a.Running, last.Reason)
			if last.Boot == "" {
				// The trial ended before its agent could restore the
				// old build's boot files (a crash, a hang, a power cut).
				last.Boot = a.restoreOwnBootLocked()
			}
		} else {
			last.State, last.Finished = Confirmed, now
			last.Reason = "made permanent without a health check (gokrazy's /update/switch)"
		}
	}
	a.last = last
	if last != nil {
		if err := a.save(last); err != nil {
			a.logf("update: %v", err)
		}
	}
}

func rollbackReason(at *Attempt) string {
	switch at.State {
	case Pending:
		return "the new build never reached its health check (the kernel, init or root file system failed before arka-init ran, or the device was rebooted by other means)"
	case Trial:
		return "the trial boot ended before Arka's health check finished (crash, hang, watchdog or power loss)"
	default:
		return at.Reason
	}
}

// Status returns the agent's view of the device.
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := Status{BootID: a.BootID, Build: a.Build, Running: a.Running, KernelRoot: a.KernelRoot, TrialBoot: a.TrialBoot(), KernelCmdline: a.KernelCmdline}
	if a.Arka != nil {
		st.Arka = a.Arka()
	}
	if b, err := a.otherBuildLocked(); err == nil {
		st.Other = &b
	}
	if a.last != nil {
		c := *a.last
		st.Last = &c
	}
	if b, err := a.Device.OpenBoot(); err == nil {
		if files, err := ReadBootFiles(b); err == nil {
			st.NextBoot, st.NextIsTrial, _ = NextBoot(files)
		}
		if bi, err := ReadBootInfo(b); err == nil {
			st.Boot = &bi
		}
		b.Close()
	}
	st.Kept = a.keptBoots()
	return st
}

// Register serves the agent's endpoints on mux (gokrazy's: its listeners
// put every request behind the web UI password). On a trial boot it also
// answers gokrazy's update endpoints with 409 Conflict: their partition
// numbers come from the kernel's root=, which names the old root, so
// /update/root would overwrite the running system.
func (a *Agent) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /arka/update", a.serveStatus)
	mux.HandleFunc("POST /arka/update/testboot", a.serveTestboot)
	mux.HandleFunc("POST /arka/update/preflight", a.servePreflight)
	mux.HandleFunc("POST /arka/update/rollback", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Rollback(); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, a.Status())
	})
	if !a.TrialBoot() {
		return
	}
	for _, p := range []string{"PUT /update/root", "PUT /update/boot", "PUT /update/bootonly", "PUT /update/mbr", "POST /update/switch", "POST /update/testboot"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, a.trialConflict(), http.StatusConflict)
		})
	}
}

func (a *Agent) trialConflict() string {
	return fmt.Sprintf("this system runs the trial boot of an update (root partition %d; the kernel's root= names partition %d): reboot it before the next update", a.Running, a.KernelRoot)
}

func (a *Agent) serveStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, a.Status())
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// httpError is an error with an HTTP status.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func (a *Agent) servePreflight(w http.ResponseWriter, r *http.Request) {
	var req PreflightRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "preflight request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := a.Preflight(req); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, a.Status())
}

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	if errors.As(err, &he) {
		code = he.code
	}
	http.Error(w, err.Error(), code)
}

func (a *Agent) serveTestboot(w http.ResponseWriter, r *http.Request) {
	var req TestbootRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "testboot request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := a.PrepareTrial(r.Context(), req); err != nil {
		code := http.StatusInternalServerError
		var he *httpError
		if errors.As(err, &he) {
			code = he.code
		}
		http.Error(w, err.Error(), code)
		return
	}
	writeJSON(w, a.Status())
}

// PrepareTrial checks that the inactive root partition holds the root file
// system req describes and that cmdline.txt boots the running root, records
// the attempt as Pending and has gokrazy set its trial flag: the next boot
// runs the new root on trial.
func (a *Agent) PrepareTrial(ctx context.Context, req TestbootRequest) error {
	a.requests.Lock() // one at a time
	defer a.requests.Unlock()
	if a.TrialBoot() {
		return &httpError{http.StatusConflict, a.trialConflict()}
	}
	if _, err := hex.DecodeString(req.RootSHA256); err != nil || len(req.RootSHA256) != 64 || req.RootSize <= 0 {
		return &httpError{http.StatusBadRequest, "testboot request: root_sha256 (64 hex digits) and root_size are required"}
	}
	target := 5 - a.Running

	boot, err := a.Device.OpenBoot()
	if err != nil {
		return err
	}
	defer boot.Close()
	files, err := ReadBootFiles(boot)
	if err != nil {
		return err
	}
	next, trial, err := NextBoot(files)
	switch {
	case err != nil:
		return &httpError{http.StatusConflict, "cmdline.txt: " + err.Error()}
	case trial:
		return &httpError{http.StatusConflict, "cmdline.txt already asks for a trial boot: send the boot image again first"}
	case next != a.Running:
		return &httpError{http.StatusConflict, fmt.Sprintf("cmdline.txt boots root partition %d, not the running %d: send the boot image with /update/bootonly first", next, a.Running)}
	case files[0].Room() < len(TryFlag)+1:
		return &httpError{http.StatusConflict, fmt.Sprintf("cmdline.txt has room for %d more bytes, the trial flag needs %d: send the boot image again first", files[0].Room(), len(TryFlag)+1)}
	}

	if err := a.checkRoot(target, req); err != nil {
		return err
	}
	a.mu.Lock()
	a.other = nil // written anew
	a.mu.Unlock()

	a.mu.Lock()
	prev := a.last
	probation := req.ProbationSeconds
	if probation == 0 {
		probation = DefaultProbation.Seconds()
	}
	at := &Attempt{Partition: target, From: a.Build, To: req.To, RootSHA256: req.RootSHA256, RootSize: req.RootSize,
		State: Pending, Requested: time.Now().UTC(), ProbationSeconds: max(probation, 0), StartSeconds: max(req.StartSeconds, 0)}
	err = a.save(at)
	if err == nil {
		a.last = at
	}
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("cannot record the update attempt: %v", err)
	}

	if err := a.Device.Testboot(ctx); err != nil {
		a.restore(prev)
		return fmt.Errorf("gokrazy's testboot: %v", err)
	}
	files, err = ReadBootFiles(boot)
	if err == nil {
		if n, trial, err2 := NextBoot(files); err2 != nil || !trial || n != target {
			err = fmt.Errorf("after gokrazy's testboot cmdline.txt does not trial partition %d: %q", target, files[0].Line())
		}
	}
	if err != nil {
		a.restore(prev)
		return err
	}
	a.logf("update: root partition %d holds Arka %s (SHA-256 %.12s…); the next boot tries it", target, req.To.Version, req.RootSHA256)
	return nil
}

func (a *Agent) restore(prev *Attempt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = prev
	if prev != nil {
		a.save(prev)
	} else {
		os.Remove(a.statusFile())
	}
}

// checkRoot reads the first req.RootSize bytes of root partition n and
// compares their SHA-256 with the request's.
func (a *Agent) checkRoot(n int, req TestbootRequest) error {
	f, err := a.Device.OpenRoot(n)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	got, err := io.Copy(h, io.LimitReader(f, req.RootSize))
	if err != nil {
		return fmt.Errorf("reading root partition %d: %v", n, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if got != req.RootSize || !strings.EqualFold(sum, req.RootSHA256) {
		return &httpError{http.StatusUnprocessableEntity, fmt.Sprintf("root partition %d does not hold the root file system you sent (%d bytes with SHA-256 %s, expected %d bytes with %s): nothing switched", n, got, sum, req.RootSize, req.RootSHA256)}
	}
	return nil
}

// RunTrial runs the health check on a trial boot. If it passes, root= is
// pointed at the running partition (the update becomes permanent);
// otherwise the failure is recorded and the device reboots into the old
// root. (The deadline armed by Start ends a trial whose check hangs.)
func (a *Agent) RunTrial(ctx context.Context, h Health) {
	if !a.TrialBoot() {
		return
	}
	a.mu.Lock()
	if a.last != nil && a.last.StartSeconds > 0 {
		h.StartTimeout = time.Duration(a.last.StartSeconds * float64(time.Second))
	}
	a.mu.Unlock()
	a.logf("update: checking Arka on %s (ready and 2xx/3xx within %s, then for %s)", describeTargets(h.Targets), h.withDefaults().StartTimeout, h.withDefaults().Stable)
	took, err := h.Run(ctx)
	if err != nil {
		a.fail(err.Error())
		return
	}
	if err := a.confirm(took, h.Targets); err != nil {
		a.fail("could not make the new root permanent: " + err.Error())
		return
	}
	a.RunProbation(ctx)
}

func (h Health) withDefaults() Health {
	h.defaults()
	return h
}

func describeTargets(ts []Target) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.String())
	}
	if len(s) == 0 {
		return "no address"
	}
	return strings.Join(s, ", ")
}

// confirm makes the running root permanent: root= in cmdline.txt and
// gokrazy.conf names it (PointRootAt).
func (a *Agent) confirm(took time.Duration, checked []Target) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.decided {
		return nil
	}
	boot, err := a.Device.OpenBoot()
	if err != nil {
		return err
	}
	defer boot.Close()
	if err := PointRootAt(boot, a.Running); err != nil {
		return err
	}
	a.decided = true
	if a.last != nil {
		a.last.State, a.last.Finished, a.last.Reason = Confirmed, time.Now().UTC(), ""
		a.last.HealthySeconds = took.Seconds()
		if a.last.ProbationSeconds > 0 {
			a.last.ProbationEnds = time.Now().UTC().Add(time.Duration(a.last.ProbationSeconds * float64(time.Second)))
		}
		a.last.Checked = nil
		for _, t := range checked {
			a.last.Checked = append(a.last.Checked, t.String())
		}
		if err := a.save(a.last); err != nil {
			a.logf("update: %v", err)
		}
	}
	a.logf("update: Arka answered after %s and stayed up: root partition %d is now the default", took.Round(100*time.Millisecond), a.Running)
	return nil
}

// fail records a failed trial and reboots into the old root.
func (a *Agent) fail(reason string) {
	a.mu.Lock()
	if a.decided {
		a.mu.Unlock()
		return
	}
	a.decided = true
	// Back to the old build's boot files (root= names the old root in
	// them, as it does now).
	note := ""
	if boot, err := a.Device.OpenBoot(); err == nil {
		want, _ := a.otherBuildLocked()
		note, _ = a.restoreBootLocked(boot, a.KernelRoot, want, false)
		if err := PointRootAt(boot, a.KernelRoot); err != nil {
			a.logf("update: %v", err)
		}
		boot.Close()
	}
	if a.last != nil {
		a.last.State, a.last.Finished, a.last.Reason, a.last.Faulty = Failed, time.Now().UTC(), reason, true
		a.last.Boot = note
		if a.Evidence != nil {
			a.last.Evidence = a.Evidence()
		}
		if err := a.save(a.last); err != nil {
			a.logf("update: %v", err)
		}
	}
	a.mu.Unlock()
	a.logf("update: the new build failed its health check: %s; rebooting into root partition %d", reason, a.KernelRoot)
	a.Device.Reboot()
}

func (a *Agent) load() (*Attempt, error) { return ReadStatusFile(a.statusFile()) }

// save writes the attempt atomically and durably (it must survive the
// reboot that follows).
func (a *Agent) save(at *Attempt) error {
	path := a.statusFile()
	b, err := json.MarshalIndent(at, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}
