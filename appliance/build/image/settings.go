package image

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/arkaweb/arka/appliance/settings"
)

func (c *Config) settingsFile() []byte {
	if c.Settings != nil {
		return c.Settings
	}
	return settings.Marshal(settings.Settings{})
}

func (c *Config) settingsBuild() []byte {
	b, _ := json.Marshal(settings.NewBuild(c.settingsFile(), c.SettingsGiven, c.SettingsKeys))
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
