package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/arkaweb/arka/appliance/device/ota"
	"github.com/arkaweb/arka/appliance/device/supervise"
	"github.com/arkaweb/arka/appliance/initcfg"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/status"
)

// startUpdateAgent starts Arka's update agent (appliance/device/ota) once /perm is
// mounted: it serves GET /arka/update and POST /arka/update/testboot on
// gokrazy's web UI, records what became of the last update, and on a trial
// boot guards gokrazy's update endpoints and arms a deadline that reboots
// into the old root if the trial does not finish. It returns nil if this
// system cannot be updated that way (not booted from a root partition).
func startUpdateAgent() *ota.Agent {
	dev, running, kernelRoot, err := ota.Detect()
	if err != nil {
		log.Printf("update: %v; /arka/update is not available", err)
		return nil
	}
	dev.Logf = log.Printf
	build, err := ota.ReadBuild("/etc/gokrazy/sbom.json")
	if err != nil {
		log.Printf("update: %v", err)
	}
	if build.Version == "" {
		build.Version = initVersion
	}
	if build.BuildTimestamp == "" {
		build.BuildTimestamp = initBuildTimestamp
	}
	cmdline, _ := os.ReadFile("/proc/cmdline")
	a := &ota.Agent{Build: build, BootID: ota.BootID(), Running: running, KernelRoot: kernelRoot, Device: dev, Logf: log.Printf,
		Arka: arkaState, CrashLoop: crashLoop, KernelCmdline: strings.TrimSpace(string(cmdline))}
	a.Start()
	// gokrazy's listeners serve http.DefaultServeMux behind the UI password.
	a.Register(http.DefaultServeMux)
	return a
}

// arkaState is Arka's supervisor state of this boot, nil before it runs.
func arkaState() *supervise.State {
	st, err := supervise.ReadState(initcfg.SupervisorState)
	if err != nil {
		return nil
	}
	return st
}

// crashLoopExits is how many exits in a row (each after less than
// supervise.Stable) make a crash loop for probation.
const crashLoopExits = 3

// crashLoop says whether Arka crash-loops, with the evidence.
func crashLoop() (string, *ota.Evidence) {
	st := arkaState()
	if st == nil || st.LastExit == nil || st.InARow < crashLoopExits {
		return "", nil
	}
	return fmt.Sprintf("Arka exited %d times in a row, the last time %s", st.InARow, st.LastExit),
		&ota.Evidence{Starts: st.Starts, LastExit: st.LastExit}
}

// runTrial checks, on a trial boot, that Arka reports itself ready and
// that every site answers 2xx or 3xx at its health path on every address
// it listens on, and keeps doing so without restarting; the agent then
// makes the update permanent or reboots into the old root, keeping the
// evidence (Arka's last exit and output, its problems) with the attempt.
func runTrial(a *ota.Agent, sites, state string) {
	if a == nil {
		return
	}
	if !a.TrialBoot() {
		if a.Settle() { // back on the old root, whose kernel was just restored: reboot into it
			return
		}
		go a.RunProbation(context.Background()) // what is left of a probation a reboot interrupted
		return
	}
	g := &ota.Gokrazy{Password: ota.GokrazyPassword()}
	h := ota.Health{
		Process: func(ctx context.Context) (ota.Process, error) {
			p, err := g.Process(ctx, initcfg.ArkaService) // the supervisor: Stopped
			if st := arkaState(); st != nil {
				p.Started, err = st.Started, nil // Arka itself: restarts
			}
			return p, err
		},
		Ready: func() error { return arkaReady(state) },
	}
	h.Targets, h.ConfigErr = healthTargets(sites)
	a.Evidence = func() *ota.Evidence {
		ev := &ota.Evidence{}
		if st := arkaState(); st != nil {
			ev.Starts, ev.LastExit = st.Starts, st.LastExit
		}
		if r, err := readReadiness(state); err == nil {
			ev.Problems = r.Problems
		}
		return ev
	}
	go a.RunTrial(context.Background(), h)
}

func readReadiness(state string) (*status.Readiness, error) {
	b, err := os.ReadFile(filepath.Join(state, status.ReadyFile))
	if err != nil {
		return nil, err
	}
	var r status.Readiness
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// arkaReady says whether the running Arka reports itself ready (its
// readiness file, written by this process).
func arkaReady(state string) error {
	r, err := readReadiness(state)
	if err != nil {
		return fmt.Errorf("no readiness report from Arka yet (%v)", err)
	}
	if st := arkaState(); st != nil && st.PID != r.PID {
		return fmt.Errorf("no readiness report from the running Arka (pid %d) yet", st.PID)
	}
	if r.Ready {
		return nil
	}
	msg := "Arka is not ready"
	final := false
	switch r.Config {
	case status.ServingLastGood:
		msg, final = "Arka serves the last configuration that loaded, not the one written", true
	case status.ServingFallback:
		msg, final = "no configuration loaded: Arka serves its fallback page", true
	case status.ServingPartial:
		msg, final = "site files with mistakes: Arka serves only the others", true
	}
	for _, p := range r.Problems {
		// A certificate replaced by a self-signed one stays so; an
		// address not bound yet may be bound at the next try.
		final = final || strings.Contains(p, "serving a self-signed certificate")
	}
	if len(r.Problems) > 0 {
		msg += ": " + r.Problems[0]
		if len(r.Problems) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(r.Problems)-1)
		}
	}
	if final {
		return ota.Final{Err: errors.New(msg)}
	}
	return errors.New(msg)
}

// healthTargets returns the health URLs of the sites in dir: each site's
// health_path (default "/") with its first server name (else localhost)
// as Host, on every address it listens on.
func healthTargets(dir string) ([]ota.Target, error) {
	files, err := config.ReadFiles(dir)
	if err != nil {
		return nil, err
	}
	// As Arka -appliance reads them: a certificate that does not load is
	// Arka's to report (it serves a self-signed one), not a reason to
	// check nothing.
	loaded, err := config.ParseFiles(files)
	if err != nil {
		return nil, err
	}
	var out []ota.Target
	for _, s := range loaded {
		host := "localhost"
		for _, n := range s.ServerNames {
			if !strings.HasPrefix(n, "*") {
				host = n
				break
			}
		}
		for _, t := range ota.Targets(host, s.HealthPath, config.ListenStrings(s.Listen), config.ListenStrings(s.TLS.Listen)) {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// keepWatchdog pings the hardware watchdog if gokrazy could not open it.
// gokrazy opens /dev/watchdog from a goroutine at the start of Boot; after
// the pivot into a trial root that can run before /dev is mounted again,
// and then nobody would ping a watchdog the old init had started, and it
// would reset the machine during the trial. /dev/watchdog opens only once:
// if gokrazy has it, this returns at once. A /dev not populated yet is
// waited for (up to watchdogWait): on a slow boot it may take longer than
// gokrazy's single attempt, and the watchdog the old init started resets
// the machine 30 s after its last ping (a trial ended that way in CI).
// watchdogWait is how long keepWatchdog waits for /dev/watchdog to appear:
// a machine without a watchdog costs one idle goroutine that long.
const watchdogWait = 2 * time.Minute

func keepWatchdog() {
	time.Sleep(3 * time.Second) // let gokrazy's own pinger open it first
	var f *os.File
	for deadline := time.Now().Add(watchdogWait); ; {
		var err error
		f, err = os.OpenFile("/dev/watchdog", os.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			break
		}
		if errors.Is(err, os.ErrNotExist) && time.Now().Before(deadline) {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if !errors.Is(err, unix.EBUSY) && !errors.Is(err, os.ErrNotExist) {
			log.Printf("watchdog: %v", err)
		}
		return
	}
	log.Printf("watchdog: gokrazy did not open /dev/watchdog; arka-init pings it")
	for {
		if err := unix.IoctlWatchdogKeepalive(int(f.Fd())); err != nil {
			log.Printf("watchdog: %v", err)
		}
		time.Sleep(time.Second)
	}
}
