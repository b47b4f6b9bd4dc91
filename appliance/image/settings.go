package image

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/arkaweb/arka/appliance/settings"
)

// SettingsBuildPath is a root file naming the settings.txt this build put
// into the boot partition (settings.Build as JSON). arka-init compares it
// with the boot partition's file after an over-the-air update (which
// rewrites the boot partition): a file the update brought that nobody gave
// on purpose is replaced by the device's own settings from before.
const SettingsBuildPath = "/etc/arka/settings-build.json"

// ZoneinfoPath is the time zone database in the root file system (Go's
// zoneinfo.zip: the programs read it through $ZONEINFO, so the settings
// file's time zone works without /usr/share/zoneinfo).
const ZoneinfoPath = "/etc/arka/zoneinfo.zip"

func (c *Config) settingsFile() []byte {
	if c.Settings != nil {
		return c.Settings
	}
	return settings.Marshal(settings.Settings{})
}

func (c *Config) settingsBuild() []byte {
	b, _ := json.Marshal(settings.NewBuild(c.settingsFile(), c.SettingsGiven))
	return append(b, '\n')
}

// zoneinfoZip is the time zone database of the Go that builds the
// programs, or "".
func (c *Config) zoneinfoZip() string {
	out, err := exec.Command(c.GoCmd, "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "lib", "time", "zoneinfo.zip")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
