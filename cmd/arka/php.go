package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/arkaweb/arka/appliance/device/phpfpm"
	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/status"
)

// phpRunner is the php-fpm Arka runs for fastcgi routes with address
// "php": started when the sites have a php table and a route uses it,
// restarted with new settings on a reload that changes them, stopped on
// shutdown. It implements server.PHP.
type phpRunner struct {
	log    *slog.Logger
	budget board.Budget
	state  string

	mu  sync.Mutex
	sup *phpfpm.Supervisor
	cfg phpfpm.Config
	// check: the address and size a configuration would get, for
	// `arka -t`, without starting anything.
	check *phpfpm.Config
}

// Address implements server.PHP.
func (p *phpRunner) Address() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.sup != nil:
		return p.sup.Address()
	case p.check != nil:
		return "unix:" + filepath.Join(p.check.Dir, "run", "php-fpm.sock")
	}
	return ""
}

// MaxChildren implements server.PHP.
func (p *phpRunner) MaxChildren() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.sup != nil:
		return p.sup.MaxChildren()
	case p.check != nil:
		return p.check.MaxChildren
	}
	return 0
}

// Status implements server.PHP: php-fpm's own view of its pool (one
// entry), or none while php-fpm is not running or not answering.
func (p *phpRunner) Status() []status.PHPFPMPool {
	p.mu.Lock()
	sup := p.sup
	p.mu.Unlock()
	if sup == nil {
		return nil
	}
	pl, err := sup.Pool()
	if err != nil {
		return nil
	}
	return []status.PHPFPMPool{{
		Pool: pl.Name, ActiveProcesses: pl.ActiveProcesses, IdleProcesses: pl.IdleProcesses,
		ListenQueue: pl.ListenQueue, MaxChildren: sup.MaxChildren(),
		MaxChildrenReached: pl.MaxChildrenReached, SlowRequests: pl.SlowRequests,
	}}
}

// usesPHP reports whether a fastcgi route of the sites uses Arka's php-fpm.
func usesPHP(sites []*config.Site) bool {
	for _, s := range sites {
		for _, r := range s.Routes {
			if f, ok := r.Handler.(*config.FastCGI); ok && f.UsesPHP() {
				return true
			}
		}
	}
	return false
}

// wanted returns the php-fpm configuration the sites ask for, or nil.
func (p *phpRunner) wanted(sites []*config.Site) (*phpfpm.Config, error) {
	set := config.PHPOf(sites)
	if set == nil {
		return nil, nil
	}
	if !usesPHP(sites) {
		p.log.Info("php-fpm not started: no fastcgi route uses address \"php\"", "php", set.Where())
		return nil, nil
	}
	c, err := phpfpm.FromSettings(set, p.budget, p.state)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", set.Where(), err)
	}
	return &c, nil
}

// prepareCheck makes Address and MaxChildren answer for sites without
// starting php-fpm (arka -t).
func (p *phpRunner) prepareCheck(sites []*config.Site) error {
	c, err := p.wanted(sites)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.check = c
	p.mu.Unlock()
	return nil
}

// apply starts, restarts or stops php-fpm for sites before the server
// applies them. It returns an undo function that puts back what ran
// before, for when the server then refuses the sites.
func (p *phpRunner) apply(sites []*config.Site) (undo func(), err error) {
	want, err := p.wanted(sites)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	old, oldCfg := p.sup, p.cfg
	p.mu.Unlock()
	nothing := func() {}
	switch {
	case want == nil && old == nil:
		return nothing, nil
	case want != nil && old != nil && old.Same(*want):
		return nothing, nil
	case want == nil:
		// Stopped after the server stops using it: see retire.
		return nothing, nil
	}
	if old != nil {
		p.log.Info("php settings changed: restarting php-fpm")
		p.stop()
	}
	if err := p.start(*want); err != nil {
		if old != nil {
			if rerr := p.start(oldCfg); rerr != nil {
				p.log.Error("php-fpm with the previous settings did not start either", "err", rerr)
			}
		}
		return nil, err
	}
	return func() {
		p.stop()
		if old != nil {
			if err := p.start(oldCfg); err != nil {
				p.log.Error("php-fpm with the previous settings did not start again", "err", err)
			}
		}
	}, nil
}

// retire stops php-fpm once the served sites no longer use it.
func (p *phpRunner) retire(sites []*config.Site) {
	if config.PHPOf(sites) == nil || !usesPHP(sites) {
		p.stop()
	}
}

func (p *phpRunner) start(c phpfpm.Config) error {
	sup, err := phpfpm.New(c, p.log)
	if err != nil {
		return err
	}
	if err := sup.Start(); err != nil {
		sup.Stop(context.Background())
		return err
	}
	p.mu.Lock()
	p.sup, p.cfg = sup, c
	p.mu.Unlock()
	return nil
}

// stop stops php-fpm, if it runs.
func (p *phpRunner) stop() {
	p.mu.Lock()
	sup := p.sup
	p.sup = nil
	p.mu.Unlock()
	if sup != nil {
		sup.Stop(context.Background())
	}
}
