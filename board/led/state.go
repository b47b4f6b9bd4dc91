package led

import (
	"sort"
	"sync"
	"time"
)

// State is what the LED shows. When several conditions hold, the one with the
// highest priority wins: Updating, then Degraded, then RolledBack, then
// Booting; Serving is shown when nothing else holds.
type State uint8

// States, in increasing priority.
const (
	Serving    State = iota // listening and answering: steady on, a short dark flicker per second with requests
	Booting                 // arka is starting: fast even blink, 4 per second
	RolledBack              // a failed update was rolled back; the old build serves: three flashes, pause
	Degraded                // a site failed to load, a certificate error, the fallback configuration: two flashes, pause
	Updating                // an update or deploy is in progress (trial boot included): slow even blink, 1 per second
)

var stateNames = [...]string{Serving: "serving", Booting: "booting", RolledBack: "rolled-back", Degraded: "degraded", Updating: "updating"}

// String returns the state's name: "serving", "booting", "rolled-back",
// "degraded" or "updating".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// MarshalText implements encoding.TextMarshaler (JSON shows the name).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Step is one part of a blink pattern: the LED on or off for a duration.
type Step struct {
	On  bool
	For time.Duration
}

// Pattern returns one cycle of the blink pattern of s; the Driver repeats it.
// The patterns differ in rhythm and in whether the LED is mostly on or mostly
// dark, so they can be told apart without counting precisely:
//
//	serving      on ........................ (steady; 60 ms dark flicker once a second while requests arrive)
//	booting      on 125 ms, off 125 ms       (fast even blink)
//	updating     on 500 ms, off 500 ms       (slow even blink)
//	degraded     2 x (on 150, off 250), then off 1.5 s
//	rolled-back  3 x (on 150, off 250), then off 1.5 s
func Pattern(s State) []Step {
	on, off := func(ms int) Step { return Step{true, time.Duration(ms) * time.Millisecond} },
		func(ms int) Step { return Step{false, time.Duration(ms) * time.Millisecond} }
	switch s {
	case Booting:
		return []Step{on(125), off(125)}
	case Updating:
		return []Step{on(500), off(500)}
	case Degraded:
		return []Step{on(150), off(250), on(150), off(1500)}
	case RolledBack:
		return []Step{on(150), off(250), on(150), off(250), on(150), off(1500)}
	}
	return []Step{on(1000)}
}

// ActivityFlicker is how long the serving pattern goes dark once a second
// while requests arrive.
const ActivityFlicker = 60 * time.Millisecond

// Condition is one reason for the LED's state, as the status page lists it.
type Condition struct {
	Name    string    `json:"name"`    // who raised it: "config", "update", "deploying", "fan", ...
	State   State     `json:"state"`   // what it makes the LED show
	Message string    `json:"message"` // what happened, for people: "reload failed: site.toml:3:1: ..."
	Since   time.Time `json:"since"`   // when it was raised (or its state last changed)
}

// Source tells the Driver what to show.
type Source interface {
	// LEDState returns the state to show now.
	LEDState() State
	// Changed is closed when the state may have changed; the Driver then
	// calls LEDState and Changed again.
	Changed() <-chan struct{}
}

// Conditions is the state source of the LED and the problem list of the status
// page: named conditions that subsystems raise (Set) and clear (Clear). It is
// safe for concurrent use; the zero value is not usable, call NewConditions.
//
// The hook for a subsystem is two calls, with a name of its own:
//
//	conds.Set("deploying", led.Updating, "receiving sites from 192.168.1.20")
//	defer conds.Clear("deploying")
//
// Degraded and RolledBack conditions stay until cleared; Booting is a
// condition too ("arka", set by NewConditions, cleared by Started).
type Conditions struct {
	mu      sync.Mutex
	m       map[string]Condition
	changed chan struct{}
	now     func() time.Time
}

// NewConditions returns a Conditions holding one Booting condition named
// "arka", until Started.
func NewConditions() *Conditions {
	c := &Conditions{m: map[string]Condition{}, changed: make(chan struct{}), now: time.Now}
	c.Set("arka", Booting, "starting")
	return c
}

// Started clears the "arka" Booting condition: the server is serving.
func (c *Conditions) Started() { c.Clear("arka") }

// Set raises or updates the condition name. Setting the same state and
// message again changes nothing (Since is kept).
func (c *Conditions) Set(name string, s State, message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[name]; ok && old.State == s && old.Message == message {
		return
	}
	c.m[name] = Condition{Name: name, State: s, Message: message, Since: c.now()}
	c.notifyLocked()
}

// Clear removes the condition name, if it is set.
func (c *Conditions) Clear(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[name]; !ok {
		return
	}
	delete(c.m, name)
	c.notifyLocked()
}

func (c *Conditions) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Changed implements Source.
func (c *Conditions) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// LEDState implements Source: the highest-priority condition's state, or
// Serving when none is set.
func (c *Conditions) LEDState() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Serving
	for _, cd := range c.m {
		s = max(s, cd.State)
	}
	return s
}

// List returns the conditions, highest priority first, then by name.
func (c *Conditions) List() []Condition {
	c.mu.Lock()
	out := make([]Condition, 0, len(c.m))
	for _, cd := range c.m {
		out = append(out, cd)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].State != out[j].State {
			return out[i].State > out[j].State
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Status is the LED part of the status page.
type Status struct {
	State      State       `json:"state"`      // what the LED shows (or would show, without an LED)
	LED        string      `json:"led"`        // LED class name driven, "" when the board has none
	Conditions []Condition `json:"conditions"` // why, highest priority first; empty when serving normally
}

// StatusOf returns the status-page view of c, with the LED's name ("" when
// there is none).
func StatusOf(c *Conditions, ledName string) Status {
	return Status{State: c.LEDState(), LED: ledName, Conditions: c.List()}
}
