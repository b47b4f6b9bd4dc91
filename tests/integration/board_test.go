package integration

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arkaweb/arka/tests/integration/harness"
)

// boardFixture copies a board fixture (../../board/testdata/NAME) into a
// temporary root and adds a fake activity LED (sys/class/leds/ACT) whose
// kernel trigger is mmc0, as on a Raspberry Pi.
func boardFixture(t *testing.T, name string) string {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join("..", "..", "board", "testdata", name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(root, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	act := filepath.Join(root, "sys", "class", "leds", "ACT")
	os.MkdirAll(act, 0o755)
	for f, v := range map[string]string{
		"trigger":        "none kbd-scrolllock timer oneshot heartbeat default-on [mmc0] mmc1\n",
		"brightness":     "0\n",
		"max_brightness": "1\n",
	} {
		if err := os.WriteFile(filepath.Join(act, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The SoC temperature and a Pi 5 style fan the kernel drives.
	for f, v := range map[string]string{
		"sys/class/thermal/thermal_zone0/type":        "cpu-thermal\n",
		"sys/class/thermal/thermal_zone0/temp":        "71234\n",
		"sys/class/thermal/cooling_device0/type":      "pwm-fan\n",
		"sys/class/thermal/cooling_device0/cur_state": "3\n",
		"sys/class/thermal/cooling_device0/max_state": "4\n",
		"sys/class/hwmon/hwmon1/name":                 "pwmfan\n",
		"sys/class/hwmon/hwmon1/fan1_input":           "4410\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
		if err := os.WriteFile(filepath.Join(root, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

type stateView struct {
	State      string `json:"state"`
	LED        string `json:"led"`
	Conditions []struct {
		Name, State, Message string
	} `json:"conditions"`
}

func readState(t *testing.T, url string) stateView {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v struct {
		State stateView `json:"state"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, body)
	}
	return v.State
}

// waitState polls the status page until it shows want, for up to 10 s.
func waitState(t *testing.T, url, want string) stateView {
	t.Helper()
	var v stateView
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if v = readState(t, url); v.State == want {
			return v
		}
	}
	t.Fatalf("status page state %q, want %q (%+v)", v.State, want, v)
	return v
}

func ledFile(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "sys", "class", "leds", "ACT", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// ledValues samples the LED's brightness for d and returns the values seen
// (a fixture file reads empty for an instant while it is rewritten; skipped).
func ledValues(t *testing.T, root string, d time.Duration) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if v := ledFile(t, root, "brightness"); v != "" {
			seen[v] = true
		}
	}
	return seen
}

// TestActivityLED runs the real binary on a fixture Raspberry Pi 4 root
// (ARKA_BOARD_ROOT) with a fake LED class directory and drives the LED with
// the events the status page shows: start, a reload that fails, the update
// agent's status file, a reload that works, shutdown.
func TestActivityLED(t *testing.T) {
	root := boardFixture(t, "rpi4-b-4gb")
	t.Setenv("ARKA_BOARD_ROOT", root)
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	os.Mkdir(www, 0o755)
	os.WriteFile(filepath.Join(www, "index.html"), []byte("hello"), 0o644)
	addr := harness.FreeAddr(t)
	site := "listen = [\"" + addr + "\"]\n[[routes]]\npath = \"/status\"\nhandler = { type = \"status\" }\n" +
		"[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"" + www + "\" }\n"
	file := filepath.Join(dir, "site.toml")
	os.WriteFile(file, []byte(site), 0o644)
	p := harness.Start(t, nil, []string{"-c", file, "-state", filepath.Join(dir, "state")}, addr)
	p.WaitOutput(t, "arka started")
	status := "http://" + addr + "/status?format=json"

	v := waitState(t, status, "serving")
	if v.LED != "ACT" || len(v.Conditions) != 0 {
		t.Errorf("serving: %+v", v)
	}
	if got := ledFile(t, root, "trigger"); got != "none" {
		t.Errorf("trigger while Arka drives the LED = %q, want none", got)
	}
	if seen := ledValues(t, root, 1200*time.Millisecond); !seen["1"] {
		t.Errorf("serving: the LED is never on (%v)", seen)
	}
	// The board's sensors come from the same root: temperature and the
	// kernel's fan, in JSON and Prometheus.
	resp, err := http.Get(status)
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		Board   struct{ Model string }
		Sensors struct {
			TempC float64 `json:"temp_c"`
			Fans  []struct {
				Type  string
				Level int
				RPM   int
			}
		}
	}
	json.NewDecoder(resp.Body).Decode(&snap)
	resp.Body.Close()
	if snap.Board.Model != "Raspberry Pi 4 Model B Rev 1.1" || snap.Sensors.TempC != 71.234 || len(snap.Sensors.Fans) != 1 ||
		snap.Sensors.Fans[0].Type != "pwm-fan" || snap.Sensors.Fans[0].Level != 3 || snap.Sensors.Fans[0].RPM != 4410 {
		t.Errorf("board and sensors from the fixture root: %+v", snap)
	}
	resp, err = http.Get("http://" + addr + "/status?format=prometheus")
	if err != nil {
		t.Fatal(err)
	}
	prom, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`arka_state{state="serving"} 1`, `arka_board_fan_rpm{device="cooling_device0",type="pwm-fan"} 4410`, "arka_board_temperature_celsius 71.234"} {
		if !strings.Contains(string(prom), want) {
			t.Errorf("Prometheus lacks %s", want)
		}
	}

	// A reload that fails: degraded, with the error's file:line:col, for
	// the configuration and for the site file that does not load.
	os.WriteFile(file, []byte(site+"bogus = 1\n"), 0o644)
	p.Signal(syscall.SIGHUP)
	p.WaitOutput(t, "reload failed")
	v = waitState(t, status, "degraded")
	if len(v.Conditions) != 2 || v.Conditions[0].Name != "config" || !strings.Contains(v.Conditions[0].Message, file+":8:1: unknown key") ||
		v.Conditions[1].Name != "site:site.toml" || !strings.HasPrefix(v.Conditions[1].Message, "does not load: "+file+":8:1: unknown key") {
		t.Errorf("degraded: %+v", v)
	}
	if seen := ledValues(t, root, 2500*time.Millisecond); !seen["0"] || !seen["1"] {
		t.Errorf("degraded: the LED does not blink (%v)", seen)
	}

	// The update agent (arka-init) records a trial boot: updating wins.
	perm := filepath.Join(root, "perm", "arka")
	os.MkdirAll(perm, 0o755)
	writeStatus := func(s string) {
		t.Helper()
		tmp := filepath.Join(perm, "update-status.json.tmp")
		os.WriteFile(tmp, []byte(s), 0o644)
		if err := os.Rename(tmp, filepath.Join(perm, "update-status.json")); err != nil {
			t.Fatal(err)
		}
	}
	writeStatus(`{"partition": 3, "state": "trial", "to": {"version": "0.4.0"}}`)
	v = waitState(t, status, "updating")
	if len(v.Conditions) != 3 || v.Conditions[0].Name != "update" || v.Conditions[1].Name != "config" || v.Conditions[2].Name != "site:site.toml" {
		t.Errorf("updating while degraded: %+v", v)
	}

	// The reload that works clears the config and site conditions only.
	os.WriteFile(file, []byte(site), 0o644)
	p.Signal(syscall.SIGHUP)
	p.WaitOutput(t, "configuration reloaded")
	for end := time.Now().Add(5 * time.Second); len(readState(t, status).Conditions) != 1 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if v = readState(t, status); v.State != "updating" || len(v.Conditions) != 1 {
		t.Errorf("after a good reload: %+v", v)
	}

	// The trial failed and the old build came back.
	writeStatus(`{"partition": 3, "state": "rolled-back", "reason": "arka did not answer", "to": {"version": "0.4.0"}, "faulty": true}`)
	v = waitState(t, status, "rolled-back")
	if !strings.Contains(v.Conditions[0].Message, "0.4.0 failed and was rolled back: arka did not answer") {
		t.Errorf("rolled back: %+v", v)
	}
	// A rollback on request (not faulty) failed nothing: serving.
	writeStatus(`{"partition": 3, "state": "rolled-back", "reason": "rollback on request", "to": {"version": "0.4.0"}}`)
	if v = waitState(t, status, "serving"); len(v.Conditions) != 0 {
		t.Errorf("rolled back on request: %+v", v)
	}
	writeStatus(`{"partition": 2, "state": "confirmed", "to": {"version": "0.4.1"}}`)
	waitState(t, status, "serving")

	// SIGTERM gives the LED back to the kernel's trigger.
	if err := p.Stop(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if got := ledFile(t, root, "trigger"); got != "mmc0" {
		t.Errorf("trigger after SIGTERM = %q, want mmc0", got)
	}
}

// TestLEDOff: [global] led = false leaves the LED to the kernel; the state
// is still on the status page. A reload changing it takes effect at once.
func TestLEDOff(t *testing.T) {
	for _, appliance := range []bool{false, true} {
		name := "plain"
		if appliance {
			name = "appliance"
		}
		t.Run(name, func(t *testing.T) { testLEDOff(t, appliance) })
	}
}

func testLEDOff(t *testing.T, appliance bool) {
	root := boardFixture(t, "rpi4-b-4gb")
	t.Setenv("ARKA_BOARD_ROOT", root)
	dir := t.TempDir()
	addr := harness.FreeAddr(t)
	sites := filepath.Join(dir, "sites")
	os.Mkdir(sites, 0o755)
	file := filepath.Join(sites, "site.toml")
	src := "listen = [\"" + addr + "\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"status\" }\n[global]\nled = false\n"
	os.WriteFile(file, []byte(src), 0o644)
	args := []string{"-c", file, "-state", filepath.Join(dir, "state")}
	if appliance {
		args = []string{"-appliance", "-c", sites, "-state", filepath.Join(dir, "state"), "-fallback-listen", harness.FreeAddr(t), "-fallback-tls-listen", ""}
	}
	p := harness.Start(t, nil, args, addr)
	p.WaitOutput(t, "led=\"off ([global] led = false)\"")
	if v := waitState(t, "http://"+addr+"/?format=json", "serving"); v.LED != "" {
		t.Errorf("state %+v, want no LED", v)
	}
	if got := ledFile(t, root, "trigger"); !strings.Contains(got, "[mmc0]") {
		t.Errorf("trigger = %q: the LED was touched", got)
	}

	// Applied on reload: led = true takes the LED, led = false gives it
	// back to the kernel's trigger, without a restart.
	os.WriteFile(file, []byte(strings.Replace(src, "led = false", "led = true", 1)), 0o644)
	p.Signal(syscall.SIGHUP)
	p.WaitOutput(t, "activity LED driven again")
	if v := readState(t, "http://"+addr+"/?format=json"); v.LED != "ACT" {
		t.Errorf("led = true on reload: state %+v", v)
	}
	if seen := ledValues(t, root, 1200*time.Millisecond); !seen["1"] {
		t.Errorf("led = true on reload: the LED is never on (%v)", seen)
	}
	if got := ledFile(t, root, "trigger"); got != "none" {
		t.Errorf("led = true on reload: trigger %q, want none", got)
	}
	os.WriteFile(file, []byte(src), 0o644)
	p.Signal(syscall.SIGHUP)
	p.WaitOutput(t, "activity LED given back to the kernel")
	if got := ledFile(t, root, "trigger"); got != "mmc0" {
		t.Errorf("led = false on reload: trigger %q, want mmc0", got)
	}
	if v := readState(t, "http://"+addr+"/?format=json"); v.LED != "" {
		t.Errorf("led = false on reload: state %+v", v)
	}
}

// TestFanCheck: arka -t reports a fan whose off is not below on at the key's
// file:line:col; on a machine without GPIO the pin is noted, not failed.
func TestFanCheck(t *testing.T) {
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	os.Mkdir(www, 0o755)
	base := "listen = [\"127.0.0.1:1\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"" + www + "\" }\n[global]\n"
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte(base+"fan = { pin = \"GPIO14\", on = 50, off = 55 }\n"), 0o644)
	code, out := harness.Run(t, "-t", "-c", bad)
	if code != 1 || !strings.Contains(out, bad+":6:34: fan off = 55 °C must be below on = 50 °C") {
		t.Errorf("off above on: exit %d\n%s", code, out)
	}
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte(base+"fan = { pin = \"GPIO14\" }\n"), 0o644)
	code, out = harness.Run(t, "-t", "-c", good)
	if chips, _ := filepath.Glob("/dev/gpiochip*"); len(chips) > 0 {
		t.Skipf("this machine has GPIO (%v): the pin check depends on its pins", chips)
	}
	if code != 0 || !strings.Contains(out, good+":6:9: note: fan pin \"GPIO14\" not checked: this machine has no GPIO") {
		t.Errorf("no GPIO: exit %d\n%s", code, out)
	}
}
