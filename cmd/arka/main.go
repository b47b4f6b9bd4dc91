// Command arka is the Arka web server.
//
//	arka                  serve the embedded demo site (http://127.0.0.1:8080, https://127.0.0.1:8443)
//	arka -c PATH          serve a site file, or a directory of *.toml site files
//	arka -t -c PATH       check the configuration and exit (0 when valid)
//	arka -appliance -c PATH   never exit because of the configuration (see appliance.go)
//	arka -version         print the version
//	arka hash-password    print a bcrypt hash of a password for basic_auth
//
// Signals: SIGHUP re-reads the configuration (the old one keeps serving if
// the new one has a mistake); SIGUSR1 reopens access logs; SIGTERM and
// SIGINT shut down gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "hash-password" {
		return hashPassword(args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	fl := flag.NewFlagSet("arka", flag.ContinueOnError)
	confPath := fl.String("c", "", "site file, or directory of *.toml site files (default: the embedded demo site)")
	check := fl.Bool("t", false, "check the configuration and exit")
	version := fl.Bool("version", false, "print the version and exit")
	appliance := fl.Bool("appliance", false, "run under a supervisor: never exit because of the configuration; serve the last configuration that loaded, or a page saying what is wrong (needs -c)")
	fbListen := fl.String("fallback-listen", ":80", "with -appliance: comma-separated plain HTTP addresses of the page shown when no configuration loads")
	fbTLSListen := fl.String("fallback-tls-listen", ":443", "with -appliance: comma-separated HTTPS addresses of that page (self-signed certificate)")
	reservedPorts := fl.String("reserved-ports", "", "comma-separated PORT=WHAT: ports the machine keeps for itself, refused in any site's listen (an appliance's deploy check: \"8080=the device's web UI,8443=the device's update/deploy API\")")
	stateDir := fl.String("state", "", "state directory for generated certificates and the demo site (default $ARKA_STATE, else $XDG_STATE_HOME/arka or ~/.local/state/arka)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "arka: unexpected argument %q (use -c PATH for a configuration)\n", fl.Arg(0))
		return 2
	}
	if *version {
		fmt.Println("arka", server.Version)
		return 0
	}
	reserved, err := config.ParseReservedPorts(*reservedPorts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "arka: -reserved-ports: %v\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	state := resolveState(*stateDir)

	// Loading is pure validation of the site files; the environment check
	// (roots, log files, php-fpm) is the step after it, at start, on
	// reload and for -t.
	demoState := state
	if *check && *confPath == "" {
		// A check writes nothing under the state directory: the demo
		// site it checks is unpacked into a directory removed after.
		tmp, err := os.MkdirTemp("", "arka-check-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "arka:", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		demoState = tmp
	}
	load := func() ([]*config.Site, error) {
		var sites []*config.Site
		var err error
		if *confPath == "" {
			sites, err = demoSite(demoState)
		} else {
			sites, err = config.Load(*confPath)
		}
		if err != nil {
			return nil, err
		}
		if err := config.CheckReserved(sites, reserved); err != nil {
			return nil, err
		}
		return sites, checkEnvironment(sites)
	}
	name := *confPath
	if name == "" {
		name = "the embedded demo site"
	}

	sites, err := load()
	var keep *keeper
	if *appliance && !*check {
		if *confPath == "" {
			fmt.Fprintln(os.Stderr, "arka: -appliance needs -c PATH")
			return 2
		}
		keep = &keeper{conf: *confPath, state: state, log: logger, listen: splitList(*fbListen), tlsListen: splitList(*fbTLSListen)}
		sites, err = keep.sitesForBudget(sites, err), nil
	}
	if err != nil {
		printConfigError(err)
		if *check {
			fmt.Fprintf(os.Stderr, "arka: configuration %s test failed\n", name)
		}
		return 1
	}
	root := boardRoot()
	a := newApp(logger, state, root, load, sites)
	a.opts.KeepServing = keep != nil
	a.keep = keep
	conds := a.conds
	if *check {
		// A check writes nothing (as nginx -t): no spool directory is made
		// under the state directory, since no request body is read.
		a.opts.SpoolDir = os.TempDir()
		if err := a.check(sites); err != nil {
			printConfigError(err)
			fmt.Fprintf(os.Stderr, "arka: configuration %s test failed\n", name)
			return 1
		}
		for _, w := range config.Warnings(sites) {
			fmt.Fprintln(os.Stderr, w)
		}
		printCertPlan(os.Stderr, sites)
		fmt.Fprintf(os.Stderr, "arka: configuration %s test is successful (%d site(s))\n", name, len(sites))
		return 0
	}
	for _, w := range config.Warnings(sites) {
		logger.Warn(w)
	}
	lock, err := lockState(state)
	var busy *busyError
	switch {
	case errors.As(err, &busy):
		fmt.Fprintln(os.Stderr, "arka:", err)
		return 1
	case err != nil:
		logger.Warn("cannot lock the state directory; not guarding against a second server on it", "err", err)
	default:
		defer lock.Close()
	}
	// The board's LED and fan are touched only by the server that holds the
	// state lock, never by arka -t.
	srv := a.server()
	a.startBoard()
	defer a.stopBoard() // every return below leaves the fan running and gives the LED back
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go watchUpdateStatus(watchCtx, root, conds, logger)
	if path := os.Getenv("ARKA_CPUPROFILE"); path != "" {
		// A debugging aid: a CPU profile of the whole run, written on exit.
		if stop, err := startCPUProfile(path); err != nil {
			logger.Error("cpu profile", "err", err)
		} else {
			defer stop()
		}
	}
	if path := os.Getenv("ARKA_MEMPROFILE"); path != "" {
		// A debugging aid: a heap profile, written on exit.
		defer func() {
			if err := writeHeapProfile(path); err != nil {
				logger.Error("heap profile", "err", err)
			}
		}()
	}
	// Signals are taken before the first listener opens: a SIGHUP sent as
	// soon as the port answers (a deploy, a test) is a reload once serving
	// starts, never the default action, which ends the process.
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	if err := a.start(sites); err != nil {
		printConfigError(err)
		return 1
	}
	conds.Started()
	logger.Info("arka started", "version", server.Version, "config", name, "state", state,
		"board", a.board.Model, "cores", a.board.Cores, "led", a.led.describe(), "gomaxprocs", a.budget.GOMAXPROCS,
		"memory_limit", board.FormatBytes(a.budget.MemoryLimitBytes), "gc_heap_floor", board.FormatBytes(a.budget.GCHeapFloorBytes),
		"listen", listenList(srv))
	fmt.Fprintf(os.Stderr, "arka: serving %s (Ctrl-C or SIGTERM stops, SIGHUP reloads)\n", strings.Join(srv.URLs(), " "))

	for s := range sig {
		switch s {
		case syscall.SIGHUP:
			if keep != nil {
				// The same verdict lines as without -appliance (arka-init's
				// deploy reads them): "reload failed" and the mistakes, or
				// "configuration reloaded".
				configErr, err := keep.load()
				if err != nil {
					logger.Error("no configuration can be served", "err", err)
				}
				if keep.sites != nil {
					// The site files as written, or the last good ones: their
					// [global] (the fallback page has none; what runs stays).
					a.applyGlobal(config.GlobalOf(keep.sites))
				}
				if configErr != nil {
					logger.Error("reload failed; the previous configuration keeps serving", "config", name, "serving", keep.serving)
					printConfigError(configErr)
					continue
				}
				srv.ReopenLogs()
				logger.Info("configuration reloaded", "config", name, "serving", keep.serving, "listen", listenList(srv))
				continue
			}
			_, err := a.reload()
			srv.SetConfigError(err) // the status page's problems and the "site:NAME" conditions
			if err != nil {
				logger.Error("reload failed; the previous configuration keeps serving", "config", name)
				printConfigError(err)
				conds.Set("config", led.Degraded, "reload failed, the previous configuration keeps serving: "+firstLine(err))
				continue
			}
			conds.Clear("config")
			srv.ReopenLogs()
			logger.Info("configuration reloaded", "config", name, "listen", listenList(srv))
		case syscall.SIGUSR1:
			srv.ReopenLogs()
		default:
			logger.Info("shutting down", "signal", s.String())
			a.shutdown()
			a.stopBoard()
			logger.Info("stopped")
			return 0
		}
	}
	return 0
}

// firstLine is the first line of err's message (config.Errors have one per
// mistake), with the count of the others, for the status page.
func firstLine(err error) string {
	var ce config.Errors
	if errors.As(err, &ce) && len(ce) > 0 {
		if len(ce) > 1 {
			return fmt.Sprintf("%s (and %d more)", ce[0].Error(), len(ce)-1)
		}
		return ce[0].Error()
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// printConfigError prints config.Errors one per line, "file:line:col: msg".
func printConfigError(err error) {
	var ce config.Errors
	if errors.As(err, &ce) {
		for _, e := range ce {
			fmt.Fprintln(os.Stderr, e.Error())
		}
		return
	}
	fmt.Fprintln(os.Stderr, "arka:", err)
}

func listenList(s *server.Server) []string {
	var out []string
	for a, ad := range s.Addrs() {
		out = append(out, a+"="+ad.String())
	}
	return out
}

// resolveState picks the state directory: the flag, $ARKA_STATE,
// $XDG_STATE_HOME/arka, ~/.local/state/arka, else /var/lib/arka.
func resolveState(flagVal string) string {
	if flagVal != "" {
		return flagVal
	}
	if v := os.Getenv("ARKA_STATE"); v != "" {
		return v
	}
	if v := os.Getenv("XDG_STATE_HOME"); v != "" {
		return filepath.Join(v, "arka")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" && h != "/" {
		return filepath.Join(h, ".local", "state", "arka")
	}
	return "/var/lib/arka"
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
