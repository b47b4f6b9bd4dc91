package status

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWirelessLevel(t *testing.T) {
	const proc = `Inter-| sta-|   Quality        |   Discarded packets               | Missed | WE
 face | tus | link level noise |  nwid  crypt   frag  retry   misc | beacon | 22
 wlan0: 0000   54.  -56.  -256        0      0      0      0      0        0
`
	if v := wirelessLevel(proc, "wlan0"); v == nil || *v != -56 {
		t.Errorf("wlan0: %v", v)
	}
	if v := wirelessLevel(proc, "wlan1"); v != nil {
		t.Errorf("wlan1: %v", *v)
	}
}

// The appliance card shows the deployed generation, the settings file's
// mistakes and the last error, and the page stays under 10 KB.
func TestApplianceCard(t *testing.T) {
	a := Appliance{Hostname: "garden",
		Settings: ApplianceSettings{Found: true, Errors: []string{`settings.txt:2:1: timezone "Mars/Olympus" is not a time zone name`}, WiFi: "no wireless interface on this machine"},
		Deploy:   ApplianceDeploy{Generation: 7, Deployed: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), From: "alice@laptop", Files: 12, Bytes: 345678, Previous: 6, LastError: "deploy refused: sites/a.toml:3:1: unknown key", LastErrorAt: time.Now()},
	}
	b, _ := json.Marshal(a)
	p := filepath.Join(t.TempDir(), "appliance.json")
	os.WriteFile(p, b, 0o644)
	t.Setenv(ApplianceEnv, p)
	got := ReadAppliance()
	if got == nil || got.Deploy.Generation != 7 || got.WiFi != nil {
		t.Fatalf("ReadAppliance: %+v", got)
	}
	now := time.Now()
	snap := demoSnapshot(now)
	snap.Appliance = got
	body := get(newTestHandler(t, nil, snap, demoHistory(now)), "127.0.0.1:1", "/status", nil).Body.String()
	for _, want := range []string{"Appliance garden", "generation 7, deployed 2026-12-01 10:00 UTC from alice@laptop, 12 files", "rollback to 6",
		"Mars/Olympus", "1 mistake(s)", "deploy refused: sites/a.toml:3:1", "no wireless interface", "of 4 cores", "scroll sideways for more →"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if len(body) >= 10*1024 {
		t.Errorf("page with the appliance card: %d bytes, want under 10 KB", len(body))
	}
	t.Setenv(ApplianceEnv, "")
	if ReadAppliance() != nil {
		t.Error("appliance outside an appliance")
	}
}

// In the first hour there are few samples: they span the whole width
// instead of a sliver at the right edge.
func TestSparklineSpansTheData(t *testing.T) {
	var vals []*float64
	for i := 0; i < 9; i++ { // 90 s of samples: 3 points
		v := float64(i)
		vals = append(vals, &v)
	}
	svg := string(sparkline(vals, 1, nil, "#000"))
	if !strings.Contains(svg, `d="M0 `) || !strings.Contains(svg, "L120 ") {
		t.Errorf("sparkline does not span the width: %s", svg)
	}
}
