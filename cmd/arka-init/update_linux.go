package main

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/arkaweb/arka/appliance/ota"
	"github.com/arkaweb/arka/config"
)

// startUpdateAgent starts Arka's update agent (appliance/ota) once /perm is
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
	a := &ota.Agent{Build: build, BootID: ota.BootID(), Running: running, KernelRoot: kernelRoot, Device: dev, Logf: log.Printf}
	a.Start()
	// gokrazy's listeners serve http.DefaultServeMux behind the UI password.
	a.Register(http.DefaultServeMux)
	return a
}

// runTrial checks, on a trial boot, that Arka answers on every address
// its sites listen on and keeps running; the agent then makes the update
// permanent or reboots into the old root.
func runTrial(a *ota.Agent, sites string) {
	if a == nil || !a.TrialBoot() {
		return
	}
	g := &ota.Gokrazy{Password: ota.GokrazyPassword()}
	h := ota.Health{Process: func(ctx context.Context) (ota.Process, error) { return g.Process(ctx, "/user/arka") }}
	h.Targets, h.ConfigErr = healthTargets(sites)
	go a.RunTrial(context.Background(), h)
}

// healthTargets returns the addresses Arka listens on with the sites in
// dir, as the health check reaches them.
func healthTargets(dir string) ([]ota.Target, error) {
	loaded, err := config.Load(dir)
	if err != nil {
		return nil, err
	}
	var plain, tls []string
	for _, s := range loaded {
		plain = append(plain, s.Listen...)
		tls = append(tls, s.TLS.Listen...)
	}
	return ota.Targets(plain, tls), nil
}

// keepWatchdog pings the hardware watchdog if gokrazy could not open it.
// gokrazy opens /dev/watchdog from a goroutine at the start of Boot; after
// the pivot into a trial root that can run before /dev is mounted again,
// and then nobody would ping a watchdog the old init had started, and it
// would reset the machine during the trial. /dev/watchdog opens only once:
// if gokrazy has it, this returns at once.
func keepWatchdog() {
	time.Sleep(3 * time.Second) // let gokrazy's own pinger open it first
	f, err := os.OpenFile("/dev/watchdog", os.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
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
