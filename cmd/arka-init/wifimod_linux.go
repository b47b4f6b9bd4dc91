package main

import (
	"bytes"
	"errors"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// wifiModules are the Raspberry Pi kernel's (gokrazy/kernel.rpi) modules
// for the Broadcom/Cypress Wi-Fi chips, in load order (modules.dep);
// cfg80211 is built in. gokrazy's init loads no modules but pwm-fan.
var wifiModules = []string{
	"kernel/drivers/net/wireless/broadcom/brcm80211/brcmutil/brcmutil.ko",
	"kernel/drivers/net/wireless/broadcom/brcm80211/brcmfmac/brcmfmac.ko",
	"kernel/drivers/net/wireless/broadcom/brcm80211/brcmfmac/cyw/brcmfmac-cyw.ko",
	"kernel/drivers/net/wireless/broadcom/brcm80211/brcmfmac/wcc/brcmfmac-wcc.ko",
	"kernel/drivers/net/wireless/broadcom/brcm80211/brcmfmac/bca/brcmfmac-bca.ko",
}

// loadWiFiModules loads the Wi-Fi driver if the kernel has it as modules
// and reports whether it did (the interface then appears once the chip's
// firmware is loaded, within a few seconds).
func loadWiFiModules() bool {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return false
	}
	dir := filepath.Join("/lib/modules", string(uts.Release[:bytes.IndexByte(uts.Release[:], 0)]))
	loaded := false
	for _, m := range wifiModules {
		f, err := os.Open(filepath.Join(dir, m))
		if err != nil {
			continue
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		switch {
		case err == nil || errors.Is(err, unix.EEXIST):
			loaded = true
		default:
			log.Printf("wifi: loading %s: %v", filepath.Base(m), err)
		}
	}
	return loaded
}

// waitWireless waits up to d for a wireless interface.
func waitWireless(d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		if w := wirelessInterfaces(); len(w) > 0 || time.Now().After(deadline) {
			return w
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// noFirmwareFor names this board (its device tree compatible, e.g.
// "raspberrypi,model-zero-2-w") when it is a Raspberry Pi for which the
// image carries no Wi-Fi firmware, else "". Every Pi with Wi-Fi gets an
// NVRAM file named after its compatible (appliance/build/wifiimage), so none
// means the image was built without this board's firmware (the Zero 2 W's,
// when Raspberry Pi's firmware-nonfree could not be downloaded).
func noFirmwareFor(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "proc/device-tree/compatible"))
	if err != nil {
		return ""
	}
	compat, _, _ := bytes.Cut(b, []byte{0})
	c := string(compat)
	if !strings.HasPrefix(c, "raspberrypi,") || strings.ContainsAny(c, "/*?[") {
		return ""
	}
	if m, _ := filepath.Glob(filepath.Join(root, "lib/firmware/brcm", "*."+c+".txt")); len(m) > 0 {
		return ""
	}
	return c
}
