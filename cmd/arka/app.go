package main

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
)

// app is the one owner of what an arka process runs: the board budget,
// thermal control, php-fpm and the server, with the [global] settings
// they were started with. Start, reload and shutdown go through it, in
// that order of parts.
type app struct {
	log   *slog.Logger
	state string
	root  string // "/" but for tests: where board files and sensors are read
	load  func() ([]*config.Site, error)

	board   board.Board
	global  config.Global // the [global] settings in effect
	budget  board.Budget
	thermal *board.Thermal
	php     *phpRunner
	// conds is what the appliance is doing and why: the activity LED and
	// the status page show it (package board/led says how to raise one).
	conds *led.Conditions
	// fan and led drive the board's GPIO fan and activity LED from [global]
	// fan and led (boardctl.go), from startBoard on.
	fan        *fanControl
	led        *ledControl
	boardTaken bool           // startBoard ran: reloads apply [global] fan and led
	opts       server.Options // the server's, until server() creates it
	srv        *server.Server

	stopThermal context.CancelFunc
	// keep, in appliance mode (-appliance), applies the configurations
	// instead of start (see appliance.go).
	keep *keeper
}

// newApp sets up the parts for sites (the first configuration) without
// starting anything.
func newApp(log *slog.Logger, state, root string, load func() ([]*config.Site, error), sites []*config.Site) *app {
	brd, err := board.Detect(root)
	if err != nil {
		log.Warn("board detection failed; using generic budgets", "err", err)
	}
	a := &app{log: log, state: state, root: root, load: load, board: brd, global: config.GlobalOf(sites)}
	a.budget = budgetFor(brd, a.global)
	a.thermal = board.NewThermal(a.global.Thermal.Limit, a.global.Thermal.Hysteresis, log)
	a.php = &phpRunner{log: log, budget: a.budget, state: state}
	a.conds = led.NewConditions()
	a.fan = &fanControl{log: log, conds: a.conds, gpioHeader: brd.IsRaspberryPi()}
	a.led = &ledControl{root: root, conds: a.conds, log: log}
	a.opts = server.Options{StateDir: state, Logger: log, Board: brd, Budget: a.budget,
		Thermal: a.thermal, PHP: a.php, MaxConns: maxConns(a.budget), Conditions: a.conds, BoardRoot: root,
		FanState: a.fan.state, LEDName: a.led.name}
	return a
}

// startBoard takes the board's fan and activity LED as [global] says (the
// server must exist: the LED shows its requests). From then on reloads
// apply [global] fan and led (applyGlobal). Only the server that holds the
// state lock calls it, never arka -t.
func (a *app) startBoard() {
	a.led.activity = a.server().Requests
	a.boardTaken = true
	a.applyBoard(a.global)
}

// stopBoard hands the board back when Arka stops or fails to start: the
// fan left running with its pin released, the LED given back to the
// kernel's default trigger. Later applies do nothing; it may be called
// more than once.
func (a *app) stopBoard() {
	a.fan.close()
	a.led.close()
}

// applyBoard applies [global] fan and led (boardctl.go).
func (a *app) applyBoard(g config.Global) {
	a.fan.apply(g.Fan)
	a.led.apply(g.LED == nil || *g.LED)
}

// server returns the server, creating it from opts the first time.
func (a *app) server() *server.Server {
	if a.srv == nil {
		a.srv = server.New(a.opts)
	}
	return a.srv
}

// check is `arka -t`: the configuration as the server would build it, with
// php-fpm's address and size, without starting or binding anything.
func (a *app) check(sites []*config.Site) error {
	if err := a.php.prepareCheck(sites); err != nil {
		return err
	}
	if err := a.server().Check(sites); err != nil {
		return err
	}
	return checkFan(sites)
}

// start applies the budget to the runtime, starts php-fpm, the server and
// thermal control.
func (a *app) start(sites []*config.Site) error {
	applyRuntime(a.budget, a.log)
	if a.keep != nil {
		a.keep.srv, a.keep.php, a.keep.conds = a.server(), a.php, a.conds
		if _, err := a.keep.load(); err != nil {
			a.php.stop()
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		go a.keep.watchReadiness(ctx.Done())
		go a.thermal.Run(ctx, a.root, a.fan.feed)
		a.stopThermal = cancel
		return nil
	}
	if _, err := a.php.apply(sites); err != nil {
		return fmt.Errorf("php-fpm: %w", err)
	}
	if err := a.server().Apply(sites); err != nil {
		a.php.stop()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.stopThermal = cancel
	go a.thermal.Run(ctx, a.root, a.fan.feed)
	return nil
}

// reload reads the configuration again and applies it as a whole, or not
// at all (the previous one keeps serving). Of [global], thermal limits,
// php, the fan and the LED are applied (a fan pin this board does not have
// is refused, the old fan keeps running: boardctl.go); a changed budget is
// reported and kept as it was until the next start (GOMAXPROCS, the memory
// limit and the cache sizes are fixed for the life of the process).
func (a *app) reload() ([]*config.Site, error) {
	sites, err := a.load()
	if err != nil {
		return nil, err
	}
	undo, err := a.php.apply(sites)
	if err != nil {
		return nil, err
	}
	if err := a.server().Apply(sites); err != nil {
		undo()
		return nil, err
	}
	a.php.retire(sites)
	a.applyGlobal(config.GlobalOf(sites))
	return sites, nil
}

// applyGlobal applies what of g can change while running, and logs what
// cannot.
func (a *app) applyGlobal(g config.Global) {
	if g.Thermal != a.global.Thermal {
		a.thermal.SetLimits(g.Thermal.Limit, g.Thermal.Hysteresis)
		st := a.thermal.State()
		a.log.Info("[global.thermal] applied", "limit_c", st.LimitC, "resume_c", st.ResumeC)
		a.global.Thermal = g.Thermal
	}
	a.global.PHP = g.PHP // applied by php.apply
	if a.boardTaken {
		a.applyBoard(g)
		a.global.Fan, a.global.LED = g.Fan, g.LED
	}
	if changed := changedKeys(a.global.Budget, g.Budget); len(changed) > 0 {
		a.log.Warn("[global.budget] changed, but the budget is fixed while arka runs: the change takes effect at the next start",
			"keys", strings.Join(changed, ", "))
	}
}

// changedKeys lists the TOML keys whose values differ between a and b.
func changedKeys(a, b config.BudgetConfig) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("toml"), ",")
			out = append(out, name)
		}
	}
	return out
}

// shutdown stops the server (in-flight requests finish, up to 10 s), then
// php-fpm, whose connections the server has closed, then thermal control.
func (a *app) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := a.server().Shutdown(ctx)
	cancel()
	if err != nil {
		a.log.Warn("shutdown did not finish cleanly", "err", err)
	}
	a.php.stop()
	if a.stopThermal != nil {
		a.stopThermal()
	}
}
