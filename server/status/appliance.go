package status

import (
	"encoding/json"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// ApplianceEnv names the file (JSON, Appliance) in which an appliance's
// init (cmd/arka-init) describes the device for the status page: the
// deployed site, the settings file, Wi-Fi. Arka reads it at each request
// of the page; outside an appliance the variable is unset.
const ApplianceEnv = "ARKA_APPLIANCE_STATUS"

// Appliance is what the status page shows about an Arka appliance.
type Appliance struct {
	Hostname string            `json:"hostname"`
	Settings ApplianceSettings `json:"settings"`
	Deploy   ApplianceDeploy   `json:"deploy"`
	WiFi     *WiFi             `json:"wifi,omitempty"`
}

// ApplianceSettings is the state of the boot partition's settings.txt.
type ApplianceSettings struct {
	File     string   `json:"file"`
	Found    bool     `json:"found"`
	Restored bool     `json:"restored,omitempty"` // the device's own settings replaced those an update brought
	Errors   []string `json:"errors,omitempty"`   // "settings.txt:3:1: …": those settings keep their defaults
	Applied  []string `json:"applied,omitempty"`
	WiFi     string   `json:"wifi,omitempty"` // Wi-Fi configuration in words
}

// ApplianceDeploy is the deployed site.
type ApplianceDeploy struct {
	Generation int       `json:"generation,omitempty"` // 0: the site baked into the image
	Deployed   time.Time `json:"deployed,omitzero"`
	From       string    `json:"from,omitempty"`
	Files      int       `json:"files,omitempty"`
	Bytes      int64     `json:"bytes,omitempty"`
	Previous   int       `json:"previous,omitempty"` // what `deploy --rollback` returns to
	// LastError is the last deploy or rollback that was refused or failed
	// since the last that succeeded ("deploy refused: sites/a.toml:3:1: …"),
	// with its time. It changed nothing (the site above serves), so it is
	// information, not a condition of the device.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	Receiving   time.Time `json:"receiving,omitzero"` // a deploy being received since then
}

// WiFi is the wireless link, read when the page is made.
type WiFi struct {
	Interface string   `json:"interface"`
	SSID      string   `json:"ssid,omitempty"`
	SignalDBm *float64 `json:"signal_dbm,omitempty"` // from /proc/net/wireless
	Addresses []string `json:"addresses,omitempty"`
}

// ReadAppliance reads the file named by $ARKA_APPLIANCE_STATUS, or returns
// nil. The Wi-Fi signal and addresses are read live.
func ReadAppliance() *Appliance {
	p := os.Getenv(ApplianceEnv)
	if p == "" {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var a Appliance
	if json.Unmarshal(b, &a) != nil {
		return nil
	}
	if a.WiFi != nil && a.WiFi.Interface != "" {
		w := a.WiFi
		if pw, err := os.ReadFile("/proc/net/wireless"); err == nil {
			w.SignalDBm = wirelessLevel(string(pw), w.Interface)
		}
		if ifc, err := net.InterfaceByName(w.Interface); err == nil {
			if addrs, err := ifc.Addrs(); err == nil {
				for _, ad := range addrs {
					w.Addresses = append(w.Addresses, ad.String())
				}
			}
		}
	}
	return &a
}

// wirelessLevel parses the signal level (dBm) of iface from
// /proc/net/wireless ("wlan0: 0000   54.  -56.  -256 ...").
func wirelessLevel(s, iface string) *float64 {
	for _, l := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || name != iface {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 3 {
			return nil
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(f[2], "."), 64)
		if err != nil {
			return nil
		}
		return &v
	}
	return nil
}
