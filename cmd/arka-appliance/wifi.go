package main

import (
	"fmt"
	"os"

	"github.com/arkaweb/arka/appliance/image"
	"github.com/arkaweb/arka/appliance/settings"
	"github.com/arkaweb/arka/appliance/wifiimage"
)

// wifiFirmware collects the Wi-Fi chip firmware for a Raspberry Pi image
// (appliance/wifiimage). Without Debian's non-free-firmware component the
// image is built without Wi-Fi, saying so, unless the settings name a
// Wi-Fi network: then that is an error.
func wifiFirmware(board *image.Board, cache string, settingsTxt []byte) (*wifiimage.Result, error) {
	if board.Name != "rpi" {
		return nil, nil
	}
	fmt.Fprintf(os.Stderr, "Collecting Wi-Fi firmware from Debian's packages (cache %s)\n", cache)
	res, err := wifiimage.Collect(wifiimage.Options{CacheDir: cache, Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "  "+f+"\n", a...) }})
	if err == nil {
		return res, nil
	}
	if s, _ := settings.Parse(settings.FileName, settingsTxt); len(s.WiFi.Networks) > 0 {
		return nil, fmt.Errorf("the settings name a Wi-Fi network, but the image cannot carry the Wi-Fi firmware: %v", err)
	}
	fmt.Fprintf(os.Stderr, "warning: building without Wi-Fi firmware (Ethernet only): %v\n", err)
	return nil, nil
}
