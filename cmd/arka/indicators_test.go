package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/board/fan"

	"github.com/arkaweb/arka/appliance/device/ota"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/status"
)

func TestWarnBoardChanged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	off, on := false, true
	start := config.Global{Fan: &config.Fan{Pin: "GPIO14", On: 65, Off: 55}}
	warnBoardChanged(config.Global{Fan: &config.Fan{Pin: "GPIO14", On: 65, Off: 55}, LED: &on}, start, log)
	warnBoardChanged(config.Global{}, config.Global{}, log)
	if buf.Len() != 0 {
		t.Errorf("unchanged settings logged: %s", buf.String())
	}
	warnBoardChanged(config.Global{Fan: &config.Fan{Pin: "GPIO18", On: 65, Off: 55}}, start, log)
	warnBoardChanged(config.Global{}, start, log)
	warnBoardChanged(config.Global{Fan: start.Fan, LED: &off}, start, log)
	if n := strings.Count(buf.String(), "restart Arka to apply it"); n != 3 {
		t.Errorf("%d warnings, want 3:\n%s", n, buf.String())
	}
}

// TestApplyUpdateStatus maps each state the update agent records to the LED.
func TestApplyUpdateStatus(t *testing.T) {
	c := led.NewConditions()
	c.Started()
	for _, tc := range []struct {
		st   ota.State
		want led.State
		msg  string
	}{
		{ota.Pending, led.Updating, "update to 1.2 written"},
		{ota.Trial, led.Updating, "update to 1.2 on trial"},
		{ota.Failed, led.RolledBack, "update to 1.2 failed and was rolled back: no answer"},
		{ota.RolledBack, led.RolledBack, "update to 1.2 failed and was rolled back: no answer"},
		{ota.Confirmed, led.Serving, ""},
	} {
		applyUpdateStatus(c, &ota.Attempt{State: tc.st, Reason: "no answer", To: ota.Build{Version: "1.2"}, Requested: time.Now()})
		if got := c.LEDState(); got != tc.want {
			t.Errorf("%s: LED %v, want %v", tc.st, got, tc.want)
		}
		if l := c.List(); tc.msg != "" && (len(l) != 1 || !strings.HasPrefix(l[0].Message, tc.msg)) {
			t.Errorf("%s: conditions %+v", tc.st, l)
		}
	}
	applyUpdateStatus(c, &ota.Attempt{State: ota.Trial})
	applyUpdateStatus(c, nil)
	if c.LEDState() != led.Serving {
		t.Error("no status file: the update condition stays")
	}
}

// TestFanFollowsThermalTicker: the fan gets the thermal ticker's readings
// (board.Thermal.Run over a fixture root), as cmd/arka wires it.
func TestFanFollowsThermalTicker(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name, temp string
		want       gpio.Level
	}{
		{"cool board stops the fan", "40000\n", gpio.Low},
		{"hot board runs it", "70000\n", gpio.High},
		{"no sensor runs it", "", gpio.High},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.temp != "" {
				zone := filepath.Join(root, "sys/class/thermal/thermal_zone0")
				os.MkdirAll(zone, 0o755)
				os.WriteFile(filepath.Join(zone, "type"), []byte("cpu-thermal\n"), 0o644)
				os.WriteFile(filepath.Join(zone, "temp"), []byte(c.temp), 0o644)
			}
			pin := &gpiotest.Pin{N: "GPIO14"}
			f := fan.New(pin, 65, 55, quiet)
			f.Update(60) // decided: stopped, so that "runs" below is the ticker's doing
			th := board.NewThermal(0, 0, quiet)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { th.Run(ctx, root, feedFan(f)); close(done) }()
			deadline := time.Now().Add(5 * time.Second)
			for {
				pin.Lock()
				l := pin.L
				pin.Unlock()
				st := f.State()
				if l == c.want && (c.temp == "" || st.LastC != nil && *st.LastC != 60) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("pin %v, fan %+v", l, st)
				}
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			<-done
		})
	}
	feedFan(nil)(nil) // no fan configured: nothing to feed, no panic
}

// TestApplyAppliance: settings-file mistakes and a refused deploy (after the
// last good one) are Degraded; fixed, they clear.
func TestApplyAppliance(t *testing.T) {
	c := led.NewConditions()
	c.Started()
	now := time.Now()
	a := &status.Appliance{}
	a.Settings.Errors = []string{"settings.txt:3:1: unknown key \"wfi_ssid\"", "settings.txt:4:1: bad"}
	a.Deploy.Deployed = now.Add(-time.Hour)
	a.Deploy.LastError, a.Deploy.LastErrorAt = "site.toml:2:1: unknown key", now
	applyAppliance(c, a)
	l := c.List()
	if c.LEDState() != led.Degraded || len(l) != 2 || l[0].Name != "deploy" || l[1].Name != "settings" ||
		!strings.Contains(l[1].Message, `settings.txt:3:1: unknown key "wfi_ssid" (and 1 more)`) ||
		!strings.Contains(l[0].Message, "site.toml:2:1: unknown key") {
		t.Errorf("conditions %+v", l)
	}
	a.Deploy.Deployed = now.Add(time.Minute) // a later deploy worked
	a.Settings.Errors = nil
	applyAppliance(c, a)
	if c.LEDState() != led.Serving {
		t.Errorf("fixed: %+v", c.List())
	}
	// A deploy being received is an update in progress; a stale mark is not.
	applyAppliance(c, &status.Appliance{Deploy: status.ApplianceDeploy{Receiving: now}})
	if c.LEDState() != led.Updating || len(c.List()) != 1 || c.List()[0].Name != "deploying" {
		t.Errorf("deploy in progress: %v %+v", c.LEDState(), c.List())
	}
	applyAppliance(c, &status.Appliance{Deploy: status.ApplianceDeploy{Receiving: now.Add(-time.Hour)}})
	if c.LEDState() != led.Serving {
		t.Errorf("stale deploy mark: %v %+v", c.LEDState(), c.List())
	}
	applyAppliance(c, &status.Appliance{Deploy: status.ApplianceDeploy{LastError: "x", LastErrorAt: now}})
	applyAppliance(c, nil)
	if c.LEDState() != led.Serving {
		t.Errorf("not an appliance: %+v", c.List())
	}
}
