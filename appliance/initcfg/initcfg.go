// Package initcfg is the contract between the image builder and the init
// inside the image (cmd/arka-init): which programs init supervises, with
// which arguments. The builder writes it as JSON to Path in the root file
// system; init reads it at boot. Adding a program to an image (php-fpm, a
// helper) is adding a Service here plus its files, without changing init.
package initcfg

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Path is where the configuration lives in the root file system.
const Path = "/etc/arka/init.json"

// Arka's programs in the root file system. gokrazy supervises /user/arka,
// a symbolic link to /gokrazy/init: arka-init started under that name runs
// ArkaBinary and restarts it with a backoff (package appliance/device/supervise),
// writing SupervisorState.
const (
	ArkaService     = "/user/arka"
	ArkaBinary      = "/usr/lib/arka/arka"
	SupervisorState = "/run/arka/supervise.json"
)

// SettingsBuildPath is a root file naming the settings.txt this build put
// into the boot partition (package appliance/settings, its Build as JSON). arka-init compares it
// with the boot partition's file after an over-the-air update (which
// rewrites the boot partition): a file the update brought that nobody gave
// on purpose is replaced by the device's own settings from before, and
// settings given one by one (flags) are merged into them (settings.Choose).
const SettingsBuildPath = "/etc/arka/settings-build.json"

// ZoneinfoPath is the time zone database in the root file system (Go's
// zoneinfo.zip: the programs read it through $ZONEINFO, so the settings
// file's time zone works without /usr/share/zoneinfo).
const ZoneinfoPath = "/etc/arka/zoneinfo.zip"

// Placeholders init expands in Service.Args and Service.Env at boot.
const (
	Sites = "{sites}" // the sites directory Arka reads: /tmp/arka/active/sites, a link to the deployed, /perm or baked site (cmd/arka-init)
	State = "{state}" // Arka's state directory: /perm/arka/state, or a tmpfs directory if /perm is not writable
	Netif = "{netif}" // the network interface for DHCP: eth0, or arka.netif= on the kernel command line
)

// Service is one supervised program.
type Service struct {
	Path string   `json:"path"`           // absolute path in the root file system
	Args []string `json:"args,omitempty"` // arguments (without argv[0]); placeholders expanded
	Env  []string `json:"env,omitempty"`  // extra KEY=value pairs; placeholders expanded
	// WaitForClock delays the start until the clock is set (NTP).
	WaitForClock bool `json:"wait_for_clock,omitempty"`
	// DontStart registers the service stopped; it can be started from the UI.
	DontStart bool `json:"dont_start,omitempty"`
}

// Config is the whole file.
type Config struct {
	Services []Service `json:"services"`
}

// Marshal returns the JSON form with a trailing newline.
func (c Config) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Load reads and checks the configuration at path.
func Load(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %v", path, err)
	}
	for i, s := range c.Services {
		if !strings.HasPrefix(s.Path, "/") {
			return c, fmt.Errorf("%s: service %d: path %q is not absolute", path, i+1, s.Path)
		}
	}
	return c, nil
}

// Expand replaces the placeholders in s with the values in vars
// (placeholder -> value).
func Expand(s []string, vars map[string]string) []string {
	out := make([]string, len(s))
	for i, a := range s {
		for k, v := range vars {
			a = strings.ReplaceAll(a, k, v)
		}
		out[i] = a
	}
	return out
}
