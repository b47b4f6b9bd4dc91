package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/device/ota"
	"github.com/arkaweb/arka/appliance/devices"
	"github.com/arkaweb/arka/appliance/settings"
)

// TestUpdateBuildsForTheDevice: README's `update --host garden --board
// rpi` after `build --hostname garden` builds an image for garden, with
// garden's password (not the default hostname's) and garden's hostname,
// and writes no hostname into its settings (the device keeps its own).
func TestUpdateBuildsForTheDevice(t *testing.T) {
	t.Setenv("ARKA_DEVICES", t.TempDir())
	gardenPw, _ := devices.PasswordFile("garden")
	if err := devices.WriteFile(gardenPw, []byte("garden-secret\n")); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop here")
	var got image.Config
	buildImage = func(c image.Config) (*image.Summary, error) { got = c; return nil, stop }
	defer func() { buildImage = image.Build }()
	for _, host := range []string{"garden", "garden.local", "https://garden.local:8443"} {
		got = image.Config{}
		// --yes: no device answers here, and off a terminal an unpinned
		// one is otherwise probed (and refused) before the build.
		err := cmdUpdate([]string{"--yes", "--host", host, "--board", "amd64", "-o", filepath.Join(t.TempDir(), "a.img")})
		if !errors.Is(err, stop) {
			t.Fatalf("update --host %s: %v", host, err)
		}
		if got.Hostname != "garden" || got.PasswordFile != gardenPw || strings.Contains("\n"+string(got.Settings), "\nhostname =") || got.SettingsGiven {
			t.Errorf("update --host %s builds hostname %q with password %s, settings:\n%s", host, got.Hostname, got.PasswordFile, got.Settings)
		}
	}
	arkaPw, _ := devices.PasswordFile("arka")
	if _, err := os.Stat(arkaPw); err == nil {
		t.Errorf("%s was created", arkaPw)
	}
	// --name names the device behind an address; --hostname renames it
	// (the image still carries the password the device has now).
	got = image.Config{}
	if err := cmdUpdate([]string{"--yes", "--host", "192.168.1.20", "--name", "garden", "--board", "amd64", "--hostname", "orchard"}); !errors.Is(err, stop) {
		t.Fatal(err)
	}
	if got.Hostname != "orchard" || got.PasswordFile != gardenPw {
		t.Errorf("--hostname orchard builds hostname %q with password %s", got.Hostname, got.PasswordFile)
	}
	// ... and only the hostname: the device keeps its Wi-Fi networks,
	// addresses and the rest of its settings (settings.Choose merges).
	if !got.SettingsGiven || !reflect.DeepEqual(got.SettingsKeys, []string{settings.KeyHostname}) {
		t.Errorf("--hostname orchard: settings given %v, keys %q", got.SettingsGiven, got.SettingsKeys)
	}
}

// TestStatusLastUpdate: `status` tells a rollback on request from a failed
// update: the first says which build runs now, the second keeps its
// "from -> to: rolled-back" line with the reason (tests/e2e greps it).
func TestStatusLastUpdate(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	printLast(&b, &ota.Attempt{Partition: 3, From: ota.Build{Version: "v1"}, To: ota.Build{Version: "v2"},
		State: ota.RolledBack, Reason: "rollback on request", Finished: at})
	if got, want := b.String(), "Last update  v1 -> v2 (partition 3), then rolled back on request to Arka v1 at 2026-12-02T10:00:00Z\n"; got != want {
		t.Errorf("on request:\n%q, want\n%q", got, want)
	}
	b.Reset()
	printLast(&b, &ota.Attempt{Partition: 3, From: ota.Build{Version: "v1"}, To: ota.Build{Version: "v2"},
		State: ota.RolledBack, Faulty: true, Reason: "Arka answered 502", Finished: at})
	if got, want := b.String(), "Last update  v1 -> v2 (partition 3): rolled-back at 2026-12-02T10:00:00Z\n           Arka answered 502\n"; got != want {
		t.Errorf("failed:\n%q, want\n%q", got, want)
	}
}
