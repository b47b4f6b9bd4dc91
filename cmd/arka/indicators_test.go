package main

import (
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/device/ota"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/server/status"
)

// TestApplyUpdateStatus maps each state the update agent records to the LED.
func TestApplyUpdateStatus(t *testing.T) {
	c := led.NewConditions()
	c.Started()
	for _, tc := range []struct {
		st     ota.State
		faulty bool
		want   led.State
		msg    string
	}{
		{ota.Pending, false, led.Updating, "update to 1.2 written"},
		{ota.Trial, false, led.Updating, "update to 1.2 on trial"},
		{ota.Failed, true, led.RolledBack, "update to 1.2 failed and was rolled back: no answer"},
		{ota.RolledBack, true, led.RolledBack, "update to 1.2 failed and was rolled back: no answer"},
		{ota.Confirmed, false, led.Serving, ""},
		// arka-appliance rollback: the device runs the build it was
		// asked to run; nothing failed.
		{ota.RolledBack, false, led.Serving, ""},
	} {
		applyUpdateStatus(c, &ota.Attempt{State: tc.st, Faulty: tc.faulty, Reason: "no answer", To: ota.Build{Version: "1.2"}, Requested: time.Now()})
		if got := c.LEDState(); got != tc.want {
			t.Errorf("%s (faulty %v): LED %v, want %v", tc.st, tc.faulty, got, tc.want)
		}
		if l := c.List(); (tc.msg == "") != (len(l) == 0) || tc.msg != "" && !strings.HasPrefix(l[0].Message, tc.msg) {
			t.Errorf("%s (faulty %v): conditions %+v", tc.st, tc.faulty, l)
		}
	}
	applyUpdateStatus(c, &ota.Attempt{State: ota.Trial})
	applyUpdateStatus(c, nil)
	if c.LEDState() != led.Serving {
		t.Error("no status file: the update condition stays")
	}
}

// TestApplyAppliance: settings-file mistakes are Degraded until fixed; a
// refused deploy is not a condition at all (the previous site serves, as
// before it: the status page's appliance table and the deploy's own answer
// say why it was refused).
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
	if c.LEDState() != led.Degraded || len(l) != 1 || l[0].Name != "settings" ||
		!strings.Contains(l[0].Message, `settings.txt:3:1: unknown key "wfi_ssid" (and 1 more)`) {
		t.Errorf("conditions %+v", l)
	}
	a.Settings.Errors = nil
	applyAppliance(c, a) // the refused deploy alone
	if c.LEDState() != led.Serving || len(c.List()) != 0 {
		t.Errorf("a refused deploy: %v %+v", c.LEDState(), c.List())
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
