package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/ota"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
)

func TestWarnFanChanged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	a := &config.Fan{Pin: "GPIO14", On: 65, Off: 55}
	b := &config.Fan{Pin: "GPIO14", On: 65, Off: 55}
	warnFanChanged(b, a, log)
	warnFanChanged(nil, nil, log)
	if buf.Len() != 0 {
		t.Errorf("unchanged fan logged: %s", buf.String())
	}
	warnFanChanged(&config.Fan{Pin: "GPIO18", On: 65, Off: 55}, a, log)
	warnFanChanged(nil, a, log)
	if n := strings.Count(buf.String(), "restart Arka to apply it"); n != 2 {
		t.Errorf("%d warnings, want 2:\n%s", n, buf.String())
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
