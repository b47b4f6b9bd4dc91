package led

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLED lays out ROOT/sys/class/leds/NAME as the kernel shows a GPIO LED,
// with the given current trigger, and returns the root.
func fakeLED(t *testing.T, name, trigger string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "sys", "class", "leds", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	trig := strings.Replace("none rc-feedback kbd-scrolllock timer oneshot heartbeat default-on mmc0 mmc1", trigger, "["+trigger+"]", 1)
	for f, v := range map[string]string{"brightness": "0\n", "max_brightness": "1\n", "trigger": trig + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestFind(t *testing.T) {
	if _, err := Find(t.TempDir()); !errors.Is(err, ErrNoLED) {
		t.Fatalf("empty root: %v, want ErrNoLED", err)
	}

	// Older Raspberry Pi kernels: led0, trigger mmc0, no device tree.
	root := fakeLED(t, "led0", "mmc0")
	l, err := Find(root)
	if err != nil || l.Name != "led0" || l.DefaultTrigger() != "mmc0" {
		t.Fatalf("led0: %+v, %v", l, err)
	}

	// A crashed Arka left "none": without a device tree, fall back to mmc0.
	root = fakeLED(t, "ACT", "none")
	if l, _ := Find(root); l.DefaultTrigger() != "mmc0" {
		t.Errorf("stale none: default trigger %q, want mmc0", l.DefaultTrigger())
	}

	// The device tree's linux,default-trigger wins over the current one.
	node := filepath.Join(root, "proc", "device-tree", "leds", "led-act")
	os.MkdirAll(node, 0o755)
	os.WriteFile(filepath.Join(node, "label"), []byte("ACT\x00"), 0o644)
	os.WriteFile(filepath.Join(node, "linux,default-trigger"), []byte("heartbeat\x00"), 0o644)
	if l, _ := Find(root); l.Name != "ACT" || l.DefaultTrigger() != "heartbeat" {
		t.Errorf("device tree: %q %q, want ACT heartbeat", l.Name, l.DefaultTrigger())
	}

	// An LED without brightness is not an LED class device.
	root = t.TempDir()
	os.MkdirAll(filepath.Join(root, "sys", "class", "leds", "ACT"), 0o755)
	if _, err := Find(root); !errors.Is(err, ErrNoLED) {
		t.Errorf("no brightness file: %v", err)
	}
}

func TestTakeSetRelease(t *testing.T) {
	root := fakeLED(t, "ACT", "mmc0")
	os.WriteFile(filepath.Join(root, "sys/class/leds/ACT/max_brightness"), []byte("255\n"), 0o644)
	l, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := l.Dir
	if err := l.Release(); err != nil || read(t, dir+"/trigger") == "mmc0" {
		t.Fatalf("Release before Take changed the trigger: %v", err)
	}
	if err := l.Take(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, dir+"/trigger"); got != "none" {
		t.Errorf("trigger after Take = %q", got)
	}
	if err := l.Set(true); err != nil || read(t, dir+"/brightness") != "255" {
		t.Errorf("Set(true): %v, brightness %q, want max_brightness 255", err, read(t, dir+"/brightness"))
	}
	l.Set(false)
	if got := read(t, dir+"/brightness"); got != "0" {
		t.Errorf("Set(false): brightness %q", got)
	}
	if err := l.Release(); err != nil || read(t, dir+"/trigger") != "mmc0" {
		t.Errorf("Release: %v, trigger %q, want mmc0", err, read(t, dir+"/trigger"))
	}

	// A read-only LED (arka not running as root): Take fails, nothing changes.
	os.Chmod(dir+"/trigger", 0o444)
	if os.Geteuid() != 0 {
		if err := l.Take(); err == nil {
			t.Error("Take on a read-only trigger succeeded")
		}
	}
}

func TestConditions(t *testing.T) {
	c := NewConditions()
	if c.LEDState() != Booting {
		t.Fatalf("new: %v, want booting", c.LEDState())
	}
	ch := c.Changed()
	c.Started()
	select {
	case <-ch:
	default:
		t.Fatal("Started did not signal a change")
	}
	if c.LEDState() != Serving || len(c.List()) != 0 {
		t.Fatalf("started: %v %v", c.LEDState(), c.List())
	}
	c.Set("update", RolledBack, "rolled back")
	c.Set("config", Degraded, "reload failed")
	if c.LEDState() != Degraded {
		t.Errorf("degraded and rolled back: %v, want degraded", c.LEDState())
	}
	c.Set("deploy", Updating, "receiving")
	if c.LEDState() != Updating {
		t.Errorf("with a deploy: %v, want updating", c.LEDState())
	}
	l := c.List()
	if len(l) != 3 || l[0].Name != "deploy" || l[1].Name != "config" || l[2].Name != "update" {
		t.Errorf("List order: %+v", l)
	}
	since := l[1].Since
	ch = c.Changed()
	c.Set("config", Degraded, "reload failed") // same: no change
	select {
	case <-ch:
		t.Error("setting the same condition again signalled a change")
	default:
	}
	if c.List()[1].Since != since {
		t.Error("Since moved on an identical Set")
	}
	c.Clear("deploy")
	c.Clear("config")
	c.Clear("nothing")
	if c.LEDState() != RolledBack {
		t.Errorf("after clears: %v", c.LEDState())
	}
}

func TestPatternsDistinct(t *testing.T) {
	seen := map[string]State{}
	for s := Serving; s <= Updating; s++ {
		p := Pattern(s)
		var total time.Duration
		key := ""
		for _, st := range p {
			total += st.For
			key += map[bool]string{true: "+", false: "-"}[st.On] + st.For.String()
		}
		if total < 200*time.Millisecond || total > 3*time.Second {
			t.Errorf("%v: cycle %v", s, total)
		}
		if o, dup := seen[key]; dup {
			t.Errorf("%v and %v blink alike", s, o)
		}
		seen[key] = s
		if s.String() == "unknown" {
			t.Errorf("state %d has no name", s)
		}
	}
}

// TestDriver runs the driver on a fake LED: it takes the LED, follows
// condition changes at once, writes the pattern to brightness and gives the
// LED back to the default trigger when stopped.
func TestDriver(t *testing.T) {
	root := fakeLED(t, "ACT", "mmc0")
	l, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	conds := NewConditions()
	var requests atomic.Uint64
	cycles := make(chan State, 64)
	d := &Driver{LED: l, Source: conds, Activity: requests.Load, cycle: func(s State) {
		select {
		case cycles <- s:
		default:
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	waitState := func(want State) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case s := <-cycles:
				if s == want {
					return
				}
			case <-deadline:
				t.Fatalf("driver never showed %v", want)
			}
		}
	}
	waitState(Booting)
	if got := read(t, l.Dir+"/trigger"); got != "none" {
		t.Errorf("trigger while driven = %q", got)
	}
	// The booting pattern toggles brightness within a cycle (250 ms).
	if !saw(t, l.Dir, "0", time.Second) || !saw(t, l.Dir, "1", time.Second) {
		t.Error("booting: brightness does not toggle")
	}
	conds.Started()
	waitState(Serving)
	// Serving with no requests: steady on for a whole cycle.
	if saw(t, l.Dir, "0", 1200*time.Millisecond) {
		t.Error("serving without requests: the LED went dark")
	}
	// Requests: a dark flicker.
	requests.Add(1)
	if !saw(t, l.Dir, "0", 1500*time.Millisecond) {
		t.Error("serving with requests: no dark flicker")
	}
	conds.Set("config", Degraded, "reload failed")
	start := time.Now()
	waitState(Degraded)
	if time.Since(start) > 500*time.Millisecond {
		t.Errorf("state change took %v to show", time.Since(start))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if got := read(t, l.Dir+"/trigger"); got != "mmc0" {
		t.Errorf("trigger after stop = %q, want mmc0", got)
	}
}

// saw polls the fake LED's brightness for up to d and reports whether it
// held v. A fixture file briefly reads empty between truncate and write;
// such reads are skipped.
func saw(t *testing.T, dir, v string, d time.Duration) bool {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if read(t, dir+"/brightness") == v {
			return true
		}
	}
	return false
}
