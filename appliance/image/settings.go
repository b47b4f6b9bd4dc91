package image

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/arkaweb/arka/appliance/settings"
)

// SettingsBuildPath is a root file naming the settings.txt this build put
// into the boot partition (SettingsBuild as JSON). arka-init compares it
// with the boot partition's file after an over-the-air update (which
// rewrites the boot partition): a file the update brought that nobody gave
// on purpose is replaced by the device's own settings from before.
const SettingsBuildPath = "/etc/arka/settings-build.json"

// ZoneinfoPath is the time zone database in the root file system (Go's
// zoneinfo.zip: the programs read it through $ZONEINFO, so the settings
// file's time zone works without /usr/share/zoneinfo).
const ZoneinfoPath = "/etc/arka/zoneinfo.zip"

// SettingsBuild is the content of SettingsBuildPath.
type SettingsBuild struct {
	SHA256 string `json:"sha256"` // of the boot partition's settings.txt as built
	Given  bool   `json:"given"`  // the settings were given at build time
}

func (c *Config) settingsFile() []byte {
	if c.Settings != nil {
		return c.Settings
	}
	return settings.Marshal(settings.Settings{})
}

func (c *Config) settingsBuild() []byte {
	b, _ := json.Marshal(SettingsBuild{SHA256: fmt.Sprintf("%x", sha256.Sum256(c.settingsFile())), Given: c.SettingsGiven})
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
