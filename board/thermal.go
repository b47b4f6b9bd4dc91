package board

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ThermalInterval is how often Run reads the SoC temperature.
const ThermalInterval = 10 * time.Second

// DefaultHotC is the default temperature above which Arka sheds optional CPU work:
// a Raspberry Pi's firmware starts soft-throttling at 80 °C.
const DefaultHotC = 80.0

// DefaultHysteresisC is how far below the limit the temperature must fall before
// optional work resumes, so a board hovering at the limit does not flap.
const DefaultHysteresisC = 5.0

// Thermal decides when the board is too hot for optional CPU work. Above the limit
// (DefaultHotC, 80 °C, unless configured) Hot reports true: the encoder then stops
// brotli-compressing new files on the fly (gzip or identity instead) and lowers
// compression levels, and the status page says so. It stays hot until the
// temperature falls to limit - hysteresis or below. Hot is lock-free and safe to
// call on every request; Update is called by Run (every ThermalInterval).
type Thermal struct {
	limitC, resumeC float64
	log             *slog.Logger
	hot             atomic.Bool

	mu          sync.Mutex
	since       time.Time
	lastC       float64
	haveTemp    bool
	transitions uint64
}

// NewThermal returns a governor that turns hot above limitC and cool again at
// limitC-hysteresisC or below. limitC <= 0 means DefaultHotC, hysteresisC <= 0
// means DefaultHysteresisC. Transitions are logged on log (nil: slog.Default()).
func NewThermal(limitC, hysteresisC float64, log *slog.Logger) *Thermal {
	if limitC <= 0 {
		limitC = DefaultHotC
	}
	if hysteresisC <= 0 {
		hysteresisC = DefaultHysteresisC
	}
	if log == nil {
		log = slog.Default()
	}
	return &Thermal{limitC: limitC, resumeC: limitC - hysteresisC, log: log}
}

// SetLimits changes the limit and hysteresis (same defaults as NewThermal),
// for a reload; the current state is kept until the next reading.
func (t *Thermal) SetLimits(limitC, hysteresisC float64) {
	if limitC <= 0 {
		limitC = DefaultHotC
	}
	if hysteresisC <= 0 {
		hysteresisC = DefaultHysteresisC
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limitC, t.resumeC = limitC, limitC-hysteresisC
}

// Run feeds the governor the SoC temperature read under root ("" or "/"
// in production; see ReadSensors) every ThermalInterval until ctx ends. On
// a board without a temperature sensor it stays cool. Each function in also
// gets the same reading (°C, nil when the temperature cannot be read), so
// that everything that follows the temperature (the fan, package board/fan)
// sees one set of readings.
func (t *Thermal) Run(ctx context.Context, root string, also ...func(tempC *float64)) {
	if root == "" {
		root = defaultRootPath
	}
	fsys := os.DirFS(root)
	tk := time.NewTicker(ThermalInterval)
	defer tk.Stop()
	for {
		c := ReadSensorsFS(fsys).TempC
		if c != nil {
			t.Update(*c)
		}
		for _, f := range also {
			f(c)
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

// Hot reports whether optional CPU work should be skipped now.
func (t *Thermal) Hot() bool { return t.hot.Load() }

// Level picks a compression level: normal when cool, reduced when hot.
func (t *Thermal) Level(normal, reduced int) int {
	if t.Hot() {
		return reduced
	}
	return normal
}

// Update feeds one temperature reading (°C) and returns the new state. Readings
// strictly above the limit turn the governor hot; readings at or below the resume
// threshold turn it cool; anything in between keeps the current state.
func (t *Thermal) Update(tempC float64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastC, t.haveTemp = tempC, true
	hot := t.hot.Load()
	switch {
	case !hot && tempC > t.limitC:
		t.hot.Store(true)
		t.since = time.Now()
		t.transitions++
		t.log.Warn("board too hot: optional CPU work paused (no on-the-fly brotli, lower compression levels)",
			"temp_c", tempC, "limit_c", t.limitC, "resume_c", t.resumeC)
		return true
	case hot && tempC <= t.resumeC:
		t.hot.Store(false)
		t.since = time.Now()
		t.transitions++
		t.log.Info("board cooled down: optional CPU work resumed", "temp_c", tempC, "resume_c", t.resumeC)
		return false
	}
	return hot
}

// ThermalState is a snapshot of the governor for the status page.
type ThermalState struct {
	Hot         bool      `json:"hot"`
	LimitC      float64   `json:"limit_c"`
	ResumeC     float64   `json:"resume_c"`
	LastC       *float64  `json:"last_c"` // nil before the first reading
	Since       time.Time `json:"since"`  // last transition; zero if none
	Transitions uint64    `json:"transitions"`
}

// State returns the governor's current state.
func (t *Thermal) State() ThermalState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := ThermalState{Hot: t.hot.Load(), LimitC: t.limitC, ResumeC: t.resumeC, Since: t.since, Transitions: t.transitions}
	if t.haveTemp {
		c := t.lastC
		st.LastC = &c
	}
	return st
}
