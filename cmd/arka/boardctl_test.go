package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/tests/testkit"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// testPin is a gpiotest pin standing in for one of the board's, registered
// in periph.io's gpioreg (where fan.Lookup finds pins), whose writes can be
// made to fail and whose kernel line is counted when released.
type testPin struct {
	gpiotest.Pin
	mu     sync.Mutex
	broken bool
	closed int
}

func (p *testPin) Out(l gpio.Level) error {
	p.mu.Lock()
	broken := p.broken
	p.mu.Unlock()
	if broken {
		return errors.New("gpio: write /dev/gpiochip0: input/output error")
	}
	return p.Pin.Out(l)
}

func (p *testPin) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed++
}

func (p *testPin) level() gpio.Level {
	p.Lock()
	defer p.Unlock()
	return p.L
}

func (p *testPin) closes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *testPin) setBroken(b bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.broken = b
}

// registerPins registers test pins under names no Raspberry Pi has.
func registerPins(t *testing.T, names ...string) []*testPin {
	t.Helper()
	var out []*testPin
	for i, n := range names {
		p := &testPin{Pin: gpiotest.Pin{N: n, Num: 900 + i}}
		if err := gpioreg.Register(p); err != nil {
			t.Skipf("cannot register test pin %s: %v", n, err)
		}
		t.Cleanup(func() { gpioreg.Unregister(n) })
		out = append(out, p)
	}
	return out
}

// fanConfig is the [global] fan of a site file holding global (with the
// positions config gives it).
func fanConfig(t *testing.T, global string) *config.Fan {
	t.Helper()
	s, err := config.Parse("/etc/arka/site.toml", []byte("listen = [\"127.0.0.1:1\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"status\" }\n[global]\n"+global+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return config.GlobalOf([]*config.Site{s}).Fan
}

func fanCondition(c *led.Conditions) *led.Condition {
	for _, cd := range c.List() {
		if cd.Name == "fan" {
			return &cd
		}
	}
	return nil
}

// TestFanReload: [global] fan changes are applied (thresholds on the same
// pin; a new pin, the old one driven low and released; the fan removed) or
// refused with a located message while the old fan keeps running.
func TestFanReload(t *testing.T) {
	pins := registerPins(t, "GPIO914", "GPIO918")
	p14, p18 := pins[0], pins[1]
	conds := led.NewConditions()
	conds.Started()
	var logs testkit.LogBuffer
	c := &fanControl{log: slog.New(slog.NewTextHandler(&logs, nil)), conds: conds}
	f := func(v float64) *float64 { return &v }

	c.apply(fanConfig(t, `fan = { pin = "GPIO914", on = 65, off = 55 }`))
	if p14.level() != gpio.High || c.state() == nil || c.state().Pin != "GPIO914" {
		t.Fatalf("start: level %v, state %+v", p14.level(), c.state())
	}
	c.feed(f(60))
	if p14.level() != gpio.Low {
		t.Fatal("60 °C with on = 65: the fan runs")
	}

	// Same pin, new thresholds: applied at the next reading.
	c.apply(fanConfig(t, `fan = { pin = "GPIO914", on = 58, off = 50 }`))
	c.feed(f(60))
	if p14.level() != gpio.High || p14.closes() != 0 || c.state().OnC != 58 {
		t.Errorf("thresholds on reload: level %v, closes %d, state %+v", p14.level(), p14.closes(), c.state())
	}

	// A pin this board does not have: refused, the old fan keeps running
	// (and following the temperature), the LED shows degraded.
	c.apply(fanConfig(t, `fan = { pin = "GPIO999", on = 58, off = 50 }`))
	cd := fanCondition(conds)
	if cd == nil || cd.State != led.Degraded || !strings.HasPrefix(cd.Message, "/etc/arka/site.toml:6:9: fan pin \"GPIO999\" does not exist on this board") ||
		!strings.Contains(cd.Message, "the fan on GPIO914 keeps running (on 58 °C, off 50 °C)") {
		t.Fatalf("refused pin: condition %+v", cd)
	}
	if conds.LEDState() != led.Degraded {
		t.Errorf("refused pin: LED %v", conds.LEDState())
	}
	c.feed(f(40))
	if p14.level() != gpio.Low || c.state().Pin != "GPIO914" || p14.closes() != 0 {
		t.Errorf("the old fan after a refused pin: level %v, state %+v", p14.level(), c.state())
	}
	if !strings.Contains(logs.String(), "[global] fan refused") {
		t.Errorf("no log line for the refusal:\n%s", logs.String())
	}

	// Another pin that exists: the old one is stopped and released.
	c.apply(fanConfig(t, `fan = { pin = "GPIO918", on = 58, off = 50 }`))
	if p14.level() != gpio.Low || p14.closes() != 1 || p18.level() != gpio.High || c.state().Pin != "GPIO918" {
		t.Errorf("moved pin: old %v (closed %d), new %v, state %+v", p14.level(), p14.closes(), p18.level(), c.state())
	}
	if fanCondition(conds) != nil || conds.LEDState() != led.Serving {
		t.Errorf("moved pin: conditions %+v", conds.List())
	}
	p14.Out(gpio.High) // someone else's now: Arka does not touch it
	c.feed(f(30))
	if p14.level() != gpio.High || p18.level() != gpio.Low {
		t.Errorf("readings after the move: old %v, new %v", p14.level(), p18.level())
	}

	// The fan removed: stopped, released, gone from the status page.
	c.apply(nil)
	c.feed(f(90))
	if p18.level() != gpio.Low || p18.closes() != 1 || c.state() != nil {
		t.Errorf("fan removed: level %v, closes %d, state %+v", p18.level(), p18.closes(), c.state())
	}
}

// TestFanWriteErrorDegraded: a pin whose writes fail while running shows on
// the status page (the fan state's error) and as a Degraded "fan"
// condition, which clears when a write works again.
func TestFanWriteErrorDegraded(t *testing.T) {
	p := registerPins(t, "GPIO921")[0]
	conds := led.NewConditions()
	conds.Started()
	c := &fanControl{log: quietLog, conds: conds}
	c.apply(fanConfig(t, `fan = { pin = "GPIO921" }`))
	hot := 80.0
	c.feed(&hot)
	if conds.LEDState() != led.Serving {
		t.Fatalf("working pin: %+v", conds.List())
	}
	p.setBroken(true)
	c.feed(&hot)
	cd := fanCondition(conds)
	if st := c.state(); st == nil || !strings.Contains(st.Error, "input/output error") {
		t.Errorf("status page: %+v", st)
	}
	if conds.LEDState() != led.Degraded || cd == nil || cd.Message != "fan pin GPIO921 cannot be driven: gpio: write /dev/gpiochip0: input/output error" {
		t.Errorf("failing pin: LED %v, condition %+v", conds.LEDState(), cd)
	}
	p.setBroken(false)
	c.feed(&hot)
	if st := c.state(); conds.LEDState() != led.Serving || st.Error != "" || !st.Running || p.level() != gpio.High {
		t.Errorf("pin works again: LED %v, state %+v", conds.LEDState(), st)
	}
}

// TestFanFollowsThermalTicker: the fan gets the thermal ticker's readings
// (board.Thermal.Run over a fixture root), as cmd/arka wires it.
func TestFanFollowsThermalTicker(t *testing.T) {
	pin := registerPins(t, "GPIO924")[0]
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
			fc := &fanControl{log: quietLog, conds: led.NewConditions()}
			fc.apply(fanConfig(t, `fan = { pin = "GPIO924", on = 65, off = 55 }`))
			defer fc.apply(nil)
			mid := 60.0
			fc.feed(&mid) // decided: stopped, so that "runs" below is the ticker's doing
			th := board.NewThermal(0, 0, quietLog)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { th.Run(ctx, root, fc.feed); close(done) }()
			deadline := time.Now().Add(5 * time.Second)
			for {
				st := fc.state()
				if pin.level() == c.want && (c.temp == "" || st.LastC != nil && *st.LastC != 60) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("pin %v, fan %+v", pin.level(), st)
				}
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			<-done
		})
	}
	(&fanControl{log: quietLog, conds: led.NewConditions()}).feed(nil) // no fan configured: nothing to feed, no panic
}

// ledFixture is a root with a fake ACT LED (kernel trigger mmc0).
func ledFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	act := filepath.Join(root, "sys", "class", "leds", "ACT")
	os.MkdirAll(act, 0o755)
	for f, v := range map[string]string{"trigger": "none timer heartbeat [mmc0]\n", "brightness": "0\n", "max_brightness": "1\n"} {
		if err := os.WriteFile(filepath.Join(act, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// trigger reads the fixture LED's trigger (a file being rewritten reads
// empty for an instant: read again).
func trigger(t *testing.T, root string) string {
	t.Helper()
	for range 100 {
		b, err := os.ReadFile(filepath.Join(root, "sys", "class", "leds", "ACT", "trigger"))
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			return s
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("trigger file stays empty")
	return ""
}

// TestReloadBoard: a reload applies [global] led (the LED given back to the
// kernel and taken again) and [global] fan (added, moved, refused,
// removed), through app.reload as SIGHUP runs it, on a fixture board root.
func TestReloadBoard(t *testing.T) {
	pins := registerPins(t, "GPIO930", "GPIO931")
	root := ledFixture(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "site.toml")
	addr := testkit.FreeAddr(t)
	write := func(global string) {
		t.Helper()
		src := "listen = [\"" + addr + "\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"static\", root = \"" + dir + "\" }\n[global]\n" + global
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func() ([]*config.Site, error) {
		sites, err := config.Load(file)
		if err != nil {
			return nil, err
		}
		return sites, config.CheckEnvironment(sites)
	}
	write("led = false\n")
	sites, err := load()
	if err != nil {
		t.Fatal(err)
	}
	var logs testkit.LogBuffer
	a := newApp(slog.New(slog.NewTextHandler(&logs, nil)), filepath.Join(dir, "state"), root, load, sites)
	a.startBoard()
	defer a.led.close()
	if err := a.start(sites); err != nil {
		t.Fatal(err)
	}
	defer a.shutdown()
	a.conds.Started()
	if got := trigger(t, root); got != "none timer heartbeat [mmc0]" || a.led.name() != "" {
		t.Fatalf("led = false at start: trigger %q, LED %q", got, a.led.name())
	}
	reload := func(global string) {
		t.Helper()
		write(global)
		if _, err := a.reload(); err != nil {
			t.Fatal(err)
		}
	}

	reload("led = true\nfan = { pin = \"GPIO930\" }\n")
	if got := trigger(t, root); got != "none" || a.led.name() != "ACT" || a.server().Snapshot().State.LED != "ACT" {
		t.Errorf("led = true on reload: trigger %q, LED %q", got, a.led.name())
	}
	if pins[0].level() != gpio.High || a.server().Snapshot().Fan == nil {
		t.Errorf("fan added on reload: level %v", pins[0].level())
	}

	reload("fan = { pin = \"GPIO931\" }\n")
	if pins[0].closes() != 1 || pins[0].level() != gpio.Low || pins[1].level() != gpio.High {
		t.Errorf("fan moved on reload: old %v closed %d, new %v", pins[0].level(), pins[0].closes(), pins[1].level())
	}
	if st := a.server().Snapshot().Fan; st == nil || st.Pin != "GPIO931" {
		t.Errorf("status page after the move: %+v", st)
	}

	reload("fan = { pin = \"NOPE7\" }\nled = false\n")
	if pins[1].closes() != 0 || pins[1].level() != gpio.High {
		t.Errorf("refused pin: the running fan was touched (level %v, closed %d)", pins[1].level(), pins[1].closes())
	}
	snap := a.server().Snapshot()
	if snap.State.State != led.Degraded || len(snap.State.Conditions) != 1 || !strings.HasPrefix(snap.State.Conditions[0].Message, file+":6:9: fan pin \"NOPE7\" does not exist") {
		t.Errorf("refused pin on the status page: %+v", snap.State)
	}
	if got := trigger(t, root); got != "mmc0" || snap.State.LED != "" {
		t.Errorf("led = false on reload: trigger %q, status LED %q", got, snap.State.LED)
	}

	reload("")
	if pins[1].closes() != 1 || pins[1].level() != gpio.Low || a.server().Snapshot().Fan != nil {
		t.Errorf("fan removed on reload: level %v, closed %d", pins[1].level(), pins[1].closes())
	}
	if snap := a.server().Snapshot(); snap.State.State != led.Serving || trigger(t, root) != "none" {
		t.Errorf("after the last reload: %+v, trigger %q", snap.State, trigger(t, root))
	}
	if strings.Contains(logs.String(), "restart") {
		t.Errorf("a [global] change still asks for a restart:\n%s", logs.String())
	}
}

// TestApplianceFeedsFan: with -appliance (the keeper applies the
// configuration) the thermal ticker feeds the fan too: a cool board stops it.
func TestApplianceFeedsFan(t *testing.T) {
	pin := registerPins(t, "GPIO940")[0]
	root := t.TempDir()
	zone := filepath.Join(root, "sys/class/thermal/thermal_zone0")
	os.MkdirAll(zone, 0o755)
	os.WriteFile(filepath.Join(zone, "type"), []byte("cpu-thermal\n"), 0o644)
	os.WriteFile(filepath.Join(zone, "temp"), []byte("40000\n"), 0o644)
	dir := t.TempDir()
	sitesDir := filepath.Join(dir, "sites")
	os.Mkdir(sitesDir, 0o755)
	src := "listen = [\"" + testkit.FreeAddr(t) + "\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"status\" }\n[global]\nfan = { pin = \"GPIO940\" }\n"
	os.WriteFile(filepath.Join(sitesDir, "site.toml"), []byte(src), 0o644)
	load := func() ([]*config.Site, error) { return config.Load(sitesDir) }
	sites, err := load()
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	a := newApp(quietLog, state, root, load, sites)
	a.keep = &keeper{conf: sitesDir, state: state, log: quietLog}
	a.startBoard()
	defer a.led.close()
	if err := a.start(sites); err != nil {
		t.Fatal(err)
	}
	defer a.shutdown()
	for end := time.Now().Add(5 * time.Second); pin.level() != gpio.Low; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("40 °C: the fan still runs (%+v)", a.fan.state())
		}
	}
	if st := a.server().Snapshot().Fan; st == nil || st.LastC == nil || *st.LastC != 40 {
		t.Errorf("status page fan: %+v", st)
	}
}

// TestFanMoveToBrokenPin: a reload moving the fan to a pin that exists but
// cannot be written keeps the old fan running (and following the
// temperature) with a Degraded "fan" condition; the new pin is released.
// Once the pin works, the same move goes through. A move to another name
// of the same pin does not release it.
func TestFanMoveToBrokenPin(t *testing.T) {
	pins := registerPins(t, "GPIO950", "GPIO951")
	p50, p51 := pins[0], pins[1]
	if err := gpioreg.RegisterAlias("P9_50", "GPIO950"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gpioreg.Unregister("P9_50") })
	conds := led.NewConditions()
	conds.Started()
	c := &fanControl{log: quietLog, conds: conds}
	f := func(v float64) *float64 { return &v }

	c.apply(fanConfig(t, `fan = { pin = "GPIO950" }`))
	c.feed(f(40))
	p51.setBroken(true)
	c.apply(fanConfig(t, `fan = { pin = "GPIO951", on = 60, off = 50 }`))
	if p50.closes() != 0 || c.state() == nil || c.state().Pin != "GPIO950" || p51.closes() != 1 {
		t.Fatalf("move to a broken pin: old closed %d, new closed %d, state %+v", p50.closes(), p51.closes(), c.state())
	}
	cd := fanCondition(conds)
	want := "/etc/arka/site.toml:6:9: fan pin GPIO951 cannot be driven: gpio: write /dev/gpiochip0: input/output error; the fan on GPIO950 keeps running (on 65 °C, off 55 °C)"
	if cd == nil || cd.State != led.Degraded || cd.Message != want {
		t.Fatalf("condition %+v\nwant %s", cd, want)
	}
	c.feed(f(80))
	if p50.level() != gpio.High {
		t.Error("the old fan no longer follows the temperature")
	}

	p51.setBroken(false)
	c.apply(fanConfig(t, `fan = { pin = "GPIO951", on = 60, off = 50 }`))
	if p50.closes() != 1 || p50.level() != gpio.Low || p51.level() != gpio.High || c.state().Pin != "GPIO951" || fanCondition(conds) != nil {
		t.Errorf("move once the pin works: old %v closed %d, new %v, state %+v, conditions %+v", p50.level(), p50.closes(), p51.level(), c.state(), conds.List())
	}

	c.apply(fanConfig(t, `fan = { pin = "GPIO950" }`))
	c.apply(fanConfig(t, `fan = { pin = "P9_50" }`))
	if p50.closes() != 1 || p50.level() != gpio.High || c.state().Pin != "P9_50" {
		t.Errorf("move to an alias of the same pin: level %v, closed %d, state %+v", p50.level(), p50.closes(), c.state())
	}
}

// TestStopBoardLeavesFanRunning: when Arka stops (or fails to start), the
// fan is left running, its pin released, and nothing drives it afterwards;
// the LED goes back to the kernel.
func TestStopBoardLeavesFanRunning(t *testing.T) {
	pin := registerPins(t, "GPIO955")[0]
	root := ledFixture(t)
	dir := t.TempDir()
	src := "listen = [\"" + testkit.FreeAddr(t) + "\"]\n[[routes]]\npath = \"/\"\nhandler = { type = \"status\" }\n[global]\nfan = { pin = \"GPIO955\" }\n"
	file := filepath.Join(dir, "site.toml")
	os.WriteFile(file, []byte(src), 0o644)
	load := func() ([]*config.Site, error) { return config.Load(file) }
	sites, err := load()
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(quietLog, filepath.Join(dir, "state"), root, load, sites)
	a.startBoard()
	cool := 30.0
	a.fan.feed(&cool)
	if pin.level() != gpio.Low || trigger(t, root) != "none" {
		t.Fatalf("30 °C: level %v, trigger %q", pin.level(), trigger(t, root))
	}
	a.stopBoard()
	if pin.level() != gpio.High || pin.closes() != 1 || trigger(t, root) != "mmc0" {
		t.Errorf("stopped: level %v, closed %d, trigger %q", pin.level(), pin.closes(), trigger(t, root))
	}
	a.fan.feed(&cool)
	a.applyBoard(config.GlobalOf(sites))
	a.stopBoard()
	if pin.level() != gpio.High || pin.closes() != 1 {
		t.Errorf("after stop: level %v, closed %d", pin.level(), pin.closes())
	}
}

// TestFanNoGPIOOnPi: a configured fan on a board detected as a Raspberry
// Pi that shows no GPIO is a Degraded "fan" condition with the reason; on a
// PC (no GPIO header) the same configuration is only a log line.
func TestFanNoGPIOOnPi(t *testing.T) {
	if len(gpioreg.All()) > 0 {
		t.Skip("this machine has GPIO pins")
	}
	for _, c := range []struct {
		name     string
		pi       bool
		degraded bool
	}{{"pi", true, true}, {"pc", false, false}} {
		t.Run(c.name, func(t *testing.T) {
			conds := led.NewConditions()
			conds.Started()
			var logs testkit.LogBuffer
			fc := &fanControl{log: slog.New(slog.NewTextHandler(&logs, nil)), conds: conds, gpioHeader: c.pi}
			fc.apply(fanConfig(t, `fan = { pin = "GPIO14" }`))
			cd := fanCondition(conds)
			if !c.degraded {
				if cd != nil || !strings.Contains(logs.String(), "fan not driven: this machine has no GPIO") {
					t.Errorf("PC: condition %+v, logs %s", cd, logs.String())
				}
				return
			}
			want := "/etc/arka/site.toml:6:9: fan pin \"GPIO14\" not driven: this Raspberry Pi shows Arka no GPIO (periph.io found no pins, and there is no /dev/gpiochip*): the fan does not run"
			if cd == nil || cd.State != led.Degraded || cd.Message != want || conds.LEDState() != led.Degraded {
				t.Errorf("Pi: condition %+v\nwant %s", cd, want)
			}
		})
	}
}

// TestLEDOffAfterCrash: an Arka killed while driving the LED leaves its
// trigger at "none" (the LED dark); the next start with led = false gives
// it back to the kernel's default trigger rather than leave it dark.
func TestLEDOffAfterCrash(t *testing.T) {
	for _, c := range []struct{ name, before, want string }{
		{"left by a crash", "[none] timer heartbeat mmc0\n", "mmc0"},
		{"the kernel's own", "none timer [heartbeat] mmc0\n", "none timer [heartbeat] mmc0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := ledFixture(t)
			os.WriteFile(filepath.Join(root, "sys/class/leds/ACT/trigger"), []byte(c.before), 0o644)
			lc := &ledControl{root: root, conds: led.NewConditions(), log: quietLog, activity: func() uint64 { return 0 }}
			lc.apply(false)
			defer lc.close()
			if got := trigger(t, root); got != c.want || lc.name() != "" {
				t.Errorf("led = false at start: trigger %q, want %q", got, c.want)
			}
		})
	}
}

// TestFanNoGPIOBoardKind: newApp tells a Raspberry Pi (a GPIO header: a
// configured fan that cannot be driven is degraded) from a PC by the
// detected board.
func TestFanNoGPIOBoardKind(t *testing.T) {
	if len(gpioreg.All()) > 0 {
		t.Skip("this machine has GPIO pins")
	}
	for _, c := range []struct {
		fixture  string
		degraded bool
	}{{"rpi3-b", true}, {"qemu-x86-64", false}} {
		t.Run(c.fixture, func(t *testing.T) {
			sites := []*config.Site{}
			a := newApp(quietLog, t.TempDir(), filepath.Join("..", "..", "board", "testdata", c.fixture), nil, sites)
			a.conds.Started()
			a.fan.apply(fanConfig(t, `fan = { pin = "GPIO14" }`))
			if got := fanCondition(a.conds) != nil; got != c.degraded {
				t.Errorf("board %s: degraded %v, want %v (%+v)", a.board.Model, got, c.degraded, a.conds.List())
			}
		})
	}
}
