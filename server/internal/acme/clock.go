package acme

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// clockFloor is a time the clock of a working system is past: this code
// was written after it. A board without a real-time clock boots in 1970
// (or, with arka-init, at the image's build time).
var clockFloor = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// processStart is when this process started, for noticing a clock step.
var processStart = time.Now()

// ClockSynced reports whether the system clock can be trusted for ACME:
// orders and certificate expiry depend on it, and a Raspberry Pi has no
// real-time clock. It is true when the kernel says an NTP daemon keeps the
// clock (adjtimex without STA_UNSYNC: chrony, systemd-timesyncd); else
// false while the clock is before clockFloor; else, on gokrazy (whose ntp
// steps the clock with settimeofday and leaves the kernel's flag alone),
// true once the clock was stepped since Arka started or Arka started more
// than two minutes after boot; elsewhere true.
func ClockSynced() bool {
	if kernelSynced() {
		return true
	}
	if time.Now().Before(clockFloor) {
		return false
	}
	if !onGokrazy() {
		return true
	}
	// time.Now carries a monotonic reading: a step of the wall clock
	// shows as a difference between the two kinds of elapsed time.
	now := time.Now()
	wall := now.Round(0).Sub(processStart.Round(0))
	mono := now.Sub(processStart)
	if d := wall - mono; d > 2*time.Second || d < -2*time.Second {
		return true
	}
	return uptime()-mono > 2*time.Minute
}

func onGokrazy() bool {
	_, err := os.Stat("/gokrazy")
	return err == nil
}

// uptime is the time since boot, from /proc/uptime (0 when unknown).
func uptime() time.Duration {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	if err != nil {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}
