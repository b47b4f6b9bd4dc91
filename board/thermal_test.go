package board

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Run reads the SoC temperature by itself (at once, then every
// ThermalInterval) and stops with its context.
func TestThermalRun(t *testing.T) {
	root := t.TempDir()
	zone := filepath.Join(root, "sys/class/thermal/thermal_zone0")
	if err := os.MkdirAll(zone, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(zone, "type"), []byte("cpu-thermal\n"), 0o644)
	os.WriteFile(filepath.Join(zone, "temp"), []byte("85000\n"), 0o644)
	th := NewThermal(0, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		th.Run(ctx, root)
		close(stopped)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !th.Hot() {
		if time.Now().After(deadline) {
			t.Fatal("85 °C did not make the governor hot")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := th.State(); st.LastC == nil || *st.LastC != 85 || st.LimitC != DefaultHotC {
		t.Errorf("state %+v", st)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
}

// SetLimits (a reload) moves the thresholds; the state changes with the
// next reading.
func TestThermalSetLimits(t *testing.T) {
	th := NewThermal(0, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if th.Update(85) != true {
		t.Fatal("85 °C is above the default 80")
	}
	th.SetLimits(90, 2)
	if !th.Hot() {
		t.Error("the state changed before a reading")
	}
	if th.Update(87.5) != false {
		t.Error("87.5 °C is at or below 90-2: cool again")
	}
	if st := th.State(); st.LimitC != 90 || st.ResumeC != 88 {
		t.Errorf("limits %+v", st)
	}
	th.SetLimits(0, 0)
	if st := th.State(); st.LimitC != DefaultHotC || st.ResumeC != DefaultHotC-DefaultHysteresisC {
		t.Errorf("defaults %+v", st)
	}
}
