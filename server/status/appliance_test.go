package status

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
// mistakes and the last deploy error (which changed nothing: the site above
// serves), and the page stays under maxPageBytes.
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
		"Mars/Olympus", "1 mistake(s)", "deploy refused: sites/a.toml:3:1", "the site above kept serving", "no wireless interface", "of 4 cores", "scroll sideways for more →"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if len(body) >= maxPageBytes {
		t.Errorf("page with the appliance card: %d bytes, want under %d", len(body), maxPageBytes)
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
	// Buckets of 3 samples: means 1, 4, 7, drawn at x 0, 60, 120 and
	// (range 1..7 over the height 28, 2 units of margin) y 26, 14, 2.
	if got, want := fmt.Sprint(pathPoints(t, svg)), "[[[0 26] [60 14] [120 2]]]"; got != want {
		t.Errorf("sparkline points %s, want %s (spanning the width): %s", got, want, svg)
	}
}

// A gap in the samples lifts the pen: two runs, each drawn from its own
// moveto, at the same places as without the gap.
func TestSparklineGap(t *testing.T) {
	var vals []*float64
	for i := 0; i < 12; i++ {
		v := float64(i % 4)
		if i >= 3 && i < 6 {
			vals = append(vals, nil)
			continue
		}
		vals = append(vals, &v)
	}
	svg := string(sparkline(vals, 1, nil, "#000"))
	runs := pathPoints(t, svg)
	if len(runs) != 2 || len(runs[0]) != 1 || len(runs[1]) != 2 || runs[0][0][0] != 0 || runs[1][0][0] != 80 || runs[1][1][0] != 120 {
		t.Errorf("runs %v, want [x0] and [x80 x120]: %s", runs, svg)
	}
}

// pathPoints decodes the chart's path ("M x y" then "l dx dy ...") into
// runs of absolute points.
func pathPoints(t *testing.T, svg string) [][][2]int {
	t.Helper()
	i := strings.LastIndex(svg, ` d="`)
	if i < 0 {
		t.Fatalf("no path: %s", svg)
	}
	d := svg[i+4:]
	d = d[:strings.IndexByte(d, '"')]
	var runs [][][2]int
	var x, y int
	for _, part := range regexp.MustCompile(`[Ml][^Ml]*`).FindAllString(d, -1) {
		nums := regexp.MustCompile(`-?\d+`).FindAllString(part, -1)
		if len(nums)%2 != 0 || len(nums) == 0 {
			t.Fatalf("odd path segment %q in %s", part, d)
		}
		for k := 0; k < len(nums); k += 2 {
			dx, _ := strconv.Atoi(nums[k])
			dy, _ := strconv.Atoi(nums[k+1])
			if part[0] == 'M' {
				x, y = dx, dy
				runs = append(runs, [][2]int{{x, y}})
				continue
			}
			x, y = x+dx, y+dy
			runs[len(runs)-1] = append(runs[len(runs)-1], [2]int{x, y})
		}
	}
	return runs
}
