package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
	Versions map[string]string // "debian/<package>", "rpi-firmware-nonfree"
}

// wifiFirmware collects the Wi-Fi parts for a Raspberry Pi image. Without
// Debian's non-free-firmware component or the arm64 package lists the image
// is built without Wi-Fi, saying so, unless the settings name a Wi-Fi
// network: then that is an error. The Zero 2 W's firmware comes from
// Raspberry Pi's firmware-nonfree (unless zero2w is false); if it cannot be
// downloaded, the same rule holds for the Zero 2 W alone, and a file with
// the wrong SHA-256 is always an error.
func wifiFirmware(board *image.Board, cache string, settingsTxt []byte, zero2w bool) (*wifiParts, error) {
	if board.Name != "rpi" {
		return nil, nil
	}
	s, _ := settings.Parse(settings.FileName, settingsTxt)
	wantWiFi := len(s.WiFi.Networks) > 0
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "  "+f+"\n", a...) }
	fmt.Fprintf(os.Stderr, "Collecting Wi-Fi firmware and wpa_supplicant from Debian's packages (cache %s)\n", cache)
	parts := &wifiParts{Versions: map[string]string{}}
	fw, err := wifiimage.Collect(wifiimage.Options{CacheDir: cache, Logf: logf, SkipNonFree: !zero2w})
	if err == nil {
		parts.Files = append(parts.Files, fw.Files...)
		for p, v := range fw.Packages {
			parts.Versions["debian/"+p] = v
		}
		if fw.NonFree != "" {
			parts.Versions["rpi-firmware-nonfree"] = fw.NonFree
		}
		if err := leftBoards(fw, cache, wantWiFi); err != nil {
			return nil, err
		}
		var sup *phpimage.Result
		sup, err = phpimage.CollectProgram(phpimage.ProgramOptions{Arch: board.GOARCH, Package: "wpasupplicant", Path: "/sbin/wpa_supplicant", CacheDir: cache, Logf: logf})
		if err == nil {
			parts.Files = append(parts.Files, sup.Files...)
			for p, v := range sup.Packages {
				parts.Versions["debian/"+p] = v
			}
			return parts, nil
		}
	}
	if errors.Is(err, wifiimage.ErrChecksum) {
		return nil, err
	}
	if wantWiFi {
		return nil, fmt.Errorf("the settings name a Wi-Fi network, but the image cannot carry Wi-Fi: %v", err)
	}
	fmt.Fprintf(os.Stderr, "warning: building without Wi-Fi (Ethernet only): %v\n", err)
	return nil, nil
}

// leftBoards says which boards have no Wi-Fi firmware in the image. When
// the settings name a network, a board left out because the download
// failed is an error (a Zero 2 W has no Ethernet port to fall back on).
func leftBoards(fw *wifiimage.Result, cache string, wantWiFi bool) error {
	if len(fw.Left) == 0 {
		return nil
	}
	var names []string
	for _, b := range fw.Left {
		names = append(names, b.Name+" ("+b.Chip+")")
	}
	which := strings.Join(names, ", ")
	if fw.NonFreeErr == nil {
		fmt.Fprintf(os.Stderr, "note: no Wi-Fi firmware for %s in this image (--zero2w-wifi=false)\n", which)
		return nil
	}
	how := fmt.Sprintf("%v\nTo get it: build on a machine that can reach GitHub, or %sor build with --zero2w-wifi=false (the other Pis keep Wi-Fi)", fw.NonFreeErr, wifiimage.NonFreeHowTo(cache))
	if wantWiFi {
		return fmt.Errorf("the settings name a Wi-Fi network, but there is no Wi-Fi firmware for %s: %s", which, how)
	}
	fmt.Fprintf(os.Stderr, "warning: no Wi-Fi firmware for %s in this image: %s\n", which, how)
	return nil
}
