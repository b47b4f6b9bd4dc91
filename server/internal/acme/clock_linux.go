package acme

import "golang.org/x/sys/unix"

// kernelSynced reports whether the kernel considers the clock synchronised
// by NTP (adjtimex(2): STA_UNSYNC clear and no TIME_ERROR).
func kernelSynced() bool {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	return err == nil && state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0
}
