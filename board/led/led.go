// Package led shows the appliance's state on the board's activity LED (the
// Raspberry Pi's green ACT LED) through the kernel's LED class
// (/sys/class/leds/NAME: trigger, brightness, max_brightness), so a person
// next to a headless board can tell whether it is booting, serving, updating
// or in trouble.
//
// Three parts:
//
//   - Conditions is the state source: a set of named conditions ("config",
//     "update", "deploy", ...) that subsystems raise and clear. The status
//     page lists the same conditions, so the LED and the page never disagree.
//   - LED is one kernel LED class device, found under a root directory (so
//     tests use fixture trees): Take switches its trigger to "none" so Arka
//     drives the brightness, Release hands it back to the kernel's default
//     trigger (from the device tree, else the trigger it had when taken).
//   - Driver blinks the LED with the pattern of the state Conditions reports
//     (see Pattern), until its context ends; then it releases the LED.
//
// Condition names in use, so that each has one owner: "arka" (Booting until
// the first configuration serves; cmd/arka), "config" (Degraded while the
// last reload failed; cmd/arka), "update" (Updating, or RolledBack after a
// failed update, from the update agent's /perm/arka/update-status.json;
// cmd/arka), "fan" (Degraded
// when the configured fan pin does not exist, a new pin was refused on
// reload, or the pin's writes fail; cmd/arka), "settings" (Degraded for
// mistakes in the boot partition's settings file, from arka-init's
// appliance status; cmd/arka),
// "deploying" (Updating while arka-init receives a deploy, from the same
// status; cmd/arka), "cert:NAME" (Degraded while obtaining or renewing the
// ACME certificate NAME fails; package server, from the status snapshot),
// "site:NAME" (Degraded for one site file that did not load at the last
// start or reload, or whose certificate did not load; package server,
// SetConfigError, NAME is the file's base name). In -appliance mode
// "config" is also Degraded while the last good configuration or the
// fallback page serves. The cmd/arka server holds
// one Conditions (server.Options.Conditions); raise conditions on it from
// the code that knows, and clear them when the problem is gone.
//
// Why not periph.io's sysfs.LED: it only writes brightness (it cannot set the
// trigger, so the kernel's mmc0/heartbeat trigger would keep overriding it,
// and it cannot give the LED back), and it discovers LEDs from the fixed
// /sys/class/leds at driver registration, so it cannot read a fixture root.
//
// Boards without an LED class device named ACT or led0 (x86 machines, QEMU
// guests) have no LED: Find returns ErrNoLED and nothing is driven.
package led

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Names are the LED class names of the activity LED, in order of preference:
// "ACT" on current Raspberry Pi and mainline kernels, "led0" on older
// Raspberry Pi kernels.
var Names = []string{"ACT", "led0"}

// ErrNoLED means the board has no activity LED in the kernel's LED class.
var ErrNoLED = errors.New("no activity LED (sys/class/leds/ACT or led0)")

// Arka's own triggers: a trigger found in one of these when Arka starts was
// left by an Arka that did not stop cleanly, not chosen by the kernel.
var ownTriggers = map[string]bool{"none": true}

// LED is one kernel LED class device. Its methods are safe for concurrent use.
type LED struct {
	Name string // LED class name, "ACT" or "led0"
	Dir  string // its directory, ROOT/sys/class/leds/NAME

	max            int    // max_brightness (1 for a GPIO LED, 255 for others)
	defaultTrigger string // trigger Release restores

	mu    sync.Mutex
	taken bool
	on    bool
}

// Find returns the activity LED under root ("/" in production), or ErrNoLED.
// The default trigger Release restores is the LED's "linux,default-trigger"
// in the device tree (ROOT/proc/device-tree/leds/*/ with a matching label),
// else the trigger the LED has now, unless that is one Arka sets itself
// ("none", left behind by a crash), in which case "mmc0" (the Raspberry Pi
// kernels' default for ACT) is used.
func Find(root string) (*LED, error) {
	if root == "" {
		root = "/"
	}
	for _, name := range Names {
		dir := filepath.Join(root, "sys", "class", "leds", name)
		if _, err := os.Stat(filepath.Join(dir, "brightness")); err != nil {
			continue
		}
		l := &LED{Name: name, Dir: dir, max: 1}
		if s, err := readTrim(filepath.Join(dir, "max_brightness")); err == nil {
			if n, err := strconv.Atoi(s); err == nil && n > 0 {
				l.max = n
			}
		}
		cur, _ := l.Trigger()
		l.defaultTrigger = dtDefaultTrigger(root, name)
		switch {
		case l.defaultTrigger != "":
		case cur != "" && !ownTriggers[cur]:
			l.defaultTrigger = cur
		default:
			l.defaultTrigger = "mmc0"
		}
		return l, nil
	}
	return nil, ErrNoLED
}

// DefaultTrigger is the trigger Release restores.
func (l *LED) DefaultTrigger() string { return l.defaultTrigger }

// Trigger returns the LED's current trigger: the bracketed word of its
// trigger file ("none rc-feedback [mmc0] timer ..." -> "mmc0").
func (l *LED) Trigger() (string, error) {
	s, err := readTrim(filepath.Join(l.Dir, "trigger"))
	if err != nil {
		return "", err
	}
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") {
			return strings.Trim(w, "[]"), nil
		}
	}
	// A file with one word and no brackets (a fixture, or a kernel with a
	// single trigger) names the current trigger.
	if f := strings.Fields(s); len(f) == 1 {
		return f[0], nil
	}
	return "", fmt.Errorf("%s/trigger: no current trigger in %q", l.Dir, s)
}

// Take sets the trigger to "none", so that only Arka changes the brightness,
// and turns the LED off.
func (l *LED) Take() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := write(filepath.Join(l.Dir, "trigger"), "none"); err != nil {
		return err
	}
	l.taken = true
	l.on = true // force the write below
	return l.setLocked(false)
}

// Set turns the LED on (max_brightness) or off (0). Writes are skipped when
// the LED already is in that state.
func (l *LED) Set(on bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.setLocked(on)
}

func (l *LED) setLocked(on bool) error {
	if on == l.on {
		return nil
	}
	v := "0"
	if on {
		v = strconv.Itoa(l.max)
	}
	if err := write(filepath.Join(l.Dir, "brightness"), v); err != nil {
		return err
	}
	l.on = on
	return nil
}

// Release hands the LED back to the kernel: it writes the default trigger
// (DefaultTrigger). Calling it on an LED that was not taken does nothing.
func (l *LED) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.taken {
		return nil
	}
	l.taken = false
	return write(filepath.Join(l.Dir, "trigger"), l.defaultTrigger)
}

// Restore gives the LED back to the kernel's default trigger when its
// trigger is one only Arka sets ("none": an Arka that was killed while it
// drove the LED left it dark), for a start that does not drive the LED
// ([global] led = false). It reports whether it wrote the trigger; a
// trigger anything else chose is left alone.
func (l *LED) Restore() (bool, error) {
	cur, err := l.Trigger()
	if err != nil || !ownTriggers[cur] {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return true, write(filepath.Join(l.Dir, "trigger"), l.defaultTrigger)
}

// dtDefaultTrigger finds the device-tree node of the LED labelled name under
// ROOT/proc/device-tree/leds and returns its linux,default-trigger, or "".
// A node without a label is matched by its name ("led-act" or "act" for ACT).
func dtDefaultTrigger(root, name string) string {
	dir := filepath.Join(root, "proc", "device-tree", "leds")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		node := filepath.Join(dir, e.Name())
		label, err := readTrim(filepath.Join(node, "label"))
		if err != nil {
			label = strings.TrimPrefix(e.Name(), "led-")
		}
		if !strings.EqualFold(label, name) {
			continue
		}
		t, err := readTrim(filepath.Join(node, "linux,default-trigger"))
		if err == nil && t != "" {
			return t
		}
	}
	return ""
}

// readTrim reads a sysfs or device-tree file: surrounding space and the NUL
// terminator of device-tree strings removed.
func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(bytes.TrimRight(b, "\x00"))), nil
}

// write writes one value to a sysfs attribute. sysfs takes the whole value
// in one write(2); O_TRUNC keeps fixture files (regular files) holding only
// the last value.
func write(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("led: %s: %w", path, err)
		}
		return fmt.Errorf("led: %w", err)
	}
	_, err = f.WriteString(v + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("led: write %q to %s: %w", v, path, err)
	}
	return nil
}
