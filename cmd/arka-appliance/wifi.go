package main

import (
	"fmt"
	"os"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/build/phpimage"
	"github.com/arkaweb/arka/appliance/build/wifiimage"
	"github.com/arkaweb/arka/appliance/settings"
)

// wifiParts is what a Raspberry Pi image needs for Wi-Fi: the chip
// firmware and regulatory database (appliance/build/wifiimage) and Debian's
// wpa_supplicant with its libraries (carried like php-fpm).
type wifiParts struct {
	Files    []image.File
	Packages map[string]string
}

// wifiFirmware collects the Wi-Fi parts for a Raspberry Pi image. Without
// Debian's non-free-firmware component or the arm64 package lists the image
// is built without Wi-Fi, saying so, unless the settings name a Wi-Fi
// network: then that is an error.
func wifiFirmware(board *image.Board, cache string, settingsTxt []byte) (*wifiParts, error) {
	if board.Name != "rpi" {
		return nil, nil
	}
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "  "+f+"\n", a...) }
	fmt.Fprintf(os.Stderr, "Collecting Wi-Fi firmware and wpa_supplicant from Debian's packages (cache %s)\n", cache)
	parts := &wifiParts{Packages: map[string]string{}}
	fw, err := wifiimage.Collect(wifiimage.Options{CacheDir: cache, Logf: logf})
	if err == nil {
		parts.Files = append(parts.Files, fw.Files...)
		for p, v := range fw.Packages {
			parts.Packages[p] = v
		}
		var sup *phpimage.Result
		sup, err = phpimage.CollectProgram(phpimage.ProgramOptions{Arch: board.GOARCH, Package: "wpasupplicant", Path: "/sbin/wpa_supplicant", CacheDir: cache, Logf: logf})
		if err == nil {
			parts.Files = append(parts.Files, sup.Files...)
			for p, v := range sup.Packages {
				parts.Packages[p] = v
			}
			return parts, nil
		}
	}
	if s, _ := settings.Parse(settings.FileName, settingsTxt); len(s.WiFi.Networks) > 0 {
		return nil, fmt.Errorf("the settings name a Wi-Fi network, but the image cannot carry Wi-Fi: %v", err)
	}
	fmt.Fprintf(os.Stderr, "warning: building without Wi-Fi (Ethernet only): %v\n", err)
	return nil, nil
}
