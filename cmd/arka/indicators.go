package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/arkaweb/arka/appliance/device/ota"
	"github.com/arkaweb/arka/board/fan"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/status"
)

// boardRoot is the directory that stands for "/" when Arka reads the board
// (/proc, /sys) and the appliance's update status (/perm): "/", or
// $ARKA_BOARD_ROOT, which tests point at a fixture tree (a fake LED class
// directory, an update-status.json) to watch the LED driven by real events.
func boardRoot() string {
	if r := os.Getenv("ARKA_BOARD_ROOT"); r != "" {
		return r
	}
	return "/"
}

// takeLED finds the activity LED under root and takes it from the kernel,
// or returns nil when there is none (quietly: the "arka started" line says
// led=none) or it cannot be written (logged: Arka not running as root).
func takeLED(root string, log *slog.Logger) *led.LED {
	l, err := led.Find(root)
	if errors.Is(err, led.ErrNoLED) {
		return nil
	}
	if err != nil {
		log.Warn("activity LED", "err", err)
		return nil
	}
	if err := l.Take(); err != nil {
		log.Warn("activity LED not driven", "led", l.Name, "err", err)
		return nil
	}
	return l
}

// runLED blinks l (nil: none) with the state of conds until the returned stop
// is called; stop gives the LED back to the kernel's default trigger and
// waits for that. It may be called more than once.
func runLED(l *led.LED, conds *led.Conditions, activity func() uint64, log *slog.Logger) (stop func()) {
	if l == nil {
		return func() {}
	}
	d := &led.Driver{LED: l, Source: conds, Activity: activity, Log: log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil {
			log.Warn("activity LED", "led", l.Name, "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// UpdateStatusInterval is how often watchUpdateStatus reads the update agent's
// status file.
const UpdateStatusInterval = 2 * time.Second

// watchUpdateStatus turns what arka-init reports about the appliance into
// conditions until ctx ends, every UpdateStatusInterval:
//
//   - the update agent's status file (appliance/device/ota StatusFile under root)
//     is the "update" condition: pending or trial is Updating, failed or
//     rolled back after a failure is RolledBack (until the next update
//     attempt); confirmed, rolled back on request (ota.Attempt.OnRequest)
//     or no file clears it. A file that cannot be read or parsed is logged
//     once per change and leaves the condition as it was;
//   - the appliance status ($ARKA_APPLIANCE_STATUS, status.ReadAppliance):
//     mistakes in the boot partition's settings file are the "settings"
//     condition (Degraded), a deploy being received the "deploying" one
//     (Updating); see applyAppliance.
func watchUpdateStatus(ctx context.Context, root string, conds *led.Conditions, log *slog.Logger) {
	path := filepath.Join(root, ota.StatusFile)
	var lastErr string
	t := time.NewTicker(UpdateStatusInterval)
	defer t.Stop()
	for {
		at, err := ota.ReadStatusFile(path)
		switch {
		case err != nil:
			if err.Error() != lastErr {
				log.Warn("update status unreadable; the LED keeps its update state", "err", err)
			}
			lastErr = err.Error()
		default:
			lastErr = ""
			applyUpdateStatus(conds, at)
		}
		applyAppliance(conds, status.ReadAppliance())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// applyUpdateStatus sets the "update" condition from the last update attempt
// (nil: none). A rollback on request is no condition: the device runs the
// build it was asked to run (`arka-appliance status` shows the rollback).
func applyUpdateStatus(conds *led.Conditions, at *ota.Attempt) {
	if at == nil || at.OnRequest() {
		conds.Clear("update")
		return
	}
	to := at.To.Version
	if to == "" {
		to = at.To.BuildTimestamp
	}
	switch at.State {
	case ota.Pending:
		conds.Set("update", led.Updating, fmt.Sprintf("update to %s written; it boots on trial next", to))
	case ota.Trial:
		conds.Set("update", led.Updating, fmt.Sprintf("update to %s on trial: health check running", to))
	case ota.Failed, ota.RolledBack:
		msg := fmt.Sprintf("update to %s failed and was rolled back", to)
		if at.Reason != "" {
			msg += ": " + at.Reason
		}
		conds.Set("update", led.RolledBack, msg)
	default:
		conds.Clear("update")
	}
}

// applyAppliance sets the "settings" and "deploying" conditions from what
// arka-init reports (nil: not an appliance, both cleared). Settings with
// mistakes keep their defaults: Degraded until a settings file without
// mistakes loads at a boot. A refused or failed deploy (or rollback) is no
// condition: it changed nothing, the previous site serves as before. Its
// answer said why, and the status page's appliance table shows it as the
// last deploy error (status.ApplianceDeploy.LastError) until a deploy or
// rollback succeeds.
func applyAppliance(conds *led.Conditions, a *status.Appliance) {
	if a == nil || len(a.Settings.Errors) == 0 {
		conds.Clear("settings")
	} else {
		msg := a.Settings.Errors[0]
		if n := len(a.Settings.Errors); n > 1 {
			msg += fmt.Sprintf(" (and %d more)", n-1)
		}
		conds.Set("settings", led.Degraded, "settings file: "+msg+"; those settings keep their defaults")
	}
	// A deploy being received is an update in progress. One that started
	// longer ago than maxDeploying is stale (arka-init did not live to
	// clear it) and shown no longer.
	if a != nil && !a.Deploy.Receiving.IsZero() && time.Since(a.Deploy.Receiving) < maxDeploying {
		conds.Set("deploying", led.Updating, "a site is being deployed (since "+a.Deploy.Receiving.Format(time.TimeOnly)+" UTC)")
	} else {
		conds.Clear("deploying")
	}
}

// maxDeploying bounds how long a deploy is shown as in progress.
const maxDeploying = 15 * time.Minute

// fanOf returns the [global] fan of the sites, or nil.
func fanOf(sites []*config.Site) *config.Fan {
	return config.GlobalOf(sites).Fan
}

// checkFan is arka -t's check of the fan pin against this board. On a board
// with GPIO, a pin it does not have is an error at the pin's file:line:col.
// On a machine without GPIO (a PC checking a Pi's configuration), or as a
// user who cannot open the GPIO chips, the pin cannot be checked: that is a
// note on standard error, not a failure.
func checkFan(sites []*config.Site) error {
	fc := fanOf(sites)
	if fc == nil {
		return nil
	}
	_, err := fan.Lookup(fc.Pin)
	for _, e := range []error{fan.ErrNoGPIO, fan.ErrGPIOAccess} {
		if errors.Is(err, e) {
			file, line, col := fc.PinPosition()
			fmt.Fprintf(os.Stderr, "%s:%d:%d: note: fan pin %q not checked: %v (Arka checks it when it starts on the board)\n", file, line, col, fc.Pin, e)
			return nil
		}
	}
	if err != nil {
		return fc.PinError(err.Error())
	}
	return nil
}
