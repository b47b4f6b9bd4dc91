package main

import (
	"log"
	"time"

	"golang.org/x/sys/unix"
)

// clockFloor moves a system clock that is behind the build time forward to
// the build time, as systemd does with its clock epoch. A Raspberry Pi has no
// battery-backed clock and boots in 1970; without this, Arka would generate
// its self-signed certificate with 1970 validity dates before NTP (gokrazy's
// ntp service) sets the exact time. Note: gokrazy's WaitForClock then
// returns at once (it only checks that the clock is past 1971).
func clockFloor(buildTimestamp string) {
	t, err := time.Parse(time.RFC3339, buildTimestamp)
	if err != nil || !time.Now().Before(t) {
		return
	}
	tv := unix.NsecToTimeval(t.UnixNano())
	if err := unix.Settimeofday(&tv); err != nil {
		log.Printf("clock: %v", err)
		return
	}
	log.Printf("clock: was behind the build time; set to %s until NTP sets it", buildTimestamp)
}
