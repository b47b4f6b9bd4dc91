package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/status"
)

// Appliance mode (arka -appliance -c PATH), for Arka run by a supervisor
// that would restart it whenever it exits (the appliance's arka-init, a
// systemd unit): Arka never exits because of its configuration. It serves,
// in this order of preference:
//
//  1. the site files as written;
//  2. else the last site files that loaded (kept in STATE/last-good/);
//  3. else, when some site files load and others have mistakes, those that
//     load (status.ServingPartial): one site's mistake does not take the
//     device's other sites down, and each file with a mistake is stood in
//     for by its last good copy or by its names answering 503 (loadable);
//  4. else the fallback site: 503 and a page saying what is wrong on
//     -fallback-listen and -fallback-tls-listen, the status page at /status.
//
// A certificate or key that does not load keeps, on a reload, the
// certificate its site loaded before, and at start gives it a self-signed
// one; an address that cannot be bound is retried with backoff
// (server.Options.KeepServing). Every such problem is logged, shown on the
// status page and written to STATE/ready.json (status.ReadyFile); SIGHUP tries the site files
// again. Without -appliance, Arka keeps its behaviour for a person at a
// terminal: a mistake is printed and Arka exits with status 1.

// lastGood is the file in STATE/last-good/ with the last site files that
// loaded.
type lastGood struct {
	Saved time.Time     `json:"saved"`
	Path  string        `json:"path"` // the -c path they were read from, absolute
	Files []config.File `json:"files"`
}

// keeper runs the configuration in appliance mode.
type keeper struct {
	conf      string // -c
	state     string
	listen    []string // the fallback site's
	tlsListen []string
	srv       *server.Server
	php       *phpRunner
	conds     *led.Conditions // "config": Degraded while Arka is not ready
	log       *slog.Logger
	serving   string // status.Serving*; "" before the first load
	// sites are the site files served (as written or the last good ones);
	// nil while the fallback page serves or before the first load.
	sites []*config.Site
	// partial are the problem keys (partialProblem) set while serving
	// partially.
	partial []string

	readyMu   sync.Mutex
	lastReady []byte // the readiness last written, without its time; nil when none is on disk
	readyErr  string // why the readiness file could not be written, "" when it was
}

func (k *keeper) lastGoodFile() string { return filepath.Join(k.state, "last-good", "sites.json") }

// sitesForBudget returns the sites whose global settings size Arka before
// the server exists: the site files if they load, else the last good ones,
// else none (the defaults).
func (k *keeper) sitesForBudget(sites []*config.Site, err error) []*config.Site {
	if err == nil {
		return sites
	}
	if lg, err := k.readLastGood(); err == nil {
		if s, err := config.ParseFiles(lg.Files); err == nil {
			return s
		}
	}
	return nil
}

// apply makes sites the served configuration (php-fpm first), or changes
// nothing.
func (k *keeper) apply(sites []*config.Site) error {
	undo, err := k.php.apply(sites)
	if err != nil {
		return fmt.Errorf("php-fpm: %w", err)
	}
	if err := k.srv.Apply(sites); err != nil {
		undo()
		return err
	}
	k.php.retire(sites)
	return nil
}

// load serves the site files as written if they load; else it keeps what
// serves, or serves the last good configuration, or the site files without
// mistakes (loadable), or the fallback site. It
// fails only when not even the fallback site can be served. configErr is
// why the site files as written do not serve (nil when they do).
func (k *keeper) load() (configErr, err error) {
	defer k.writeReadiness()
	files, err := config.ReadFiles(k.conf)
	var sites []*config.Site
	if err == nil {
		sites, err = parse(files)
	}
	if err == nil {
		err = k.apply(sites)
	}
	if err == nil {
		k.setServing(status.ServingAsWritten)
		k.sites = sites
		k.srv.SetConfigError(nil)
		k.srv.SetProblem(lastGoodProblem, "")
		if err := k.saveLastGood(files); err != nil {
			k.log.Warn("cannot keep a copy of the configuration that loaded", "err", err)
		}
		return nil, nil
	}
	configErr = err
	k.srv.SetConfigError(err) // the status page's problems and the "site:NAME" conditions
	switch k.serving {
	case status.ServingAsWritten, status.ServingLastGood:
		return configErr, nil // the caller says so: a reload that failed
	}
	if k.serving == "" {
		printConfigError(err) // at start; a reload's caller prints its own
	}
	lg, lgErr := k.readLastGood()
	lgRead := lg // its site files may serve one by one (loadable)
	k.srv.SetProblem(lastGoodProblem, "")
	if lgErr == nil {
		var sites []*config.Site
		if sites, lgErr = parse(lg.Files); lgErr == nil {
			lgErr = k.apply(sites)
		}
		if lgErr == nil {
			k.setServing(status.ServingLastGood)
			k.sites = sites
			k.log.Error("the configuration did not load; serving the last one that did", "config", k.conf, "saved", lg.Saved.Format(time.RFC3339))
			return configErr, nil
		}
		k.log.Error("the last configuration that loaded does not load either", "file", k.lastGoodFile(), "err", errorLines(lgErr))
		k.srv.SetProblem(lastGoodProblem, fmt.Sprintf("the last configuration that loaded (saved %s, kept in %s) cannot be used either:\n%s",
			lg.Saved.Format(time.RFC3339), k.lastGoodFile(), errorLines(lgErr)))
	} else if !errors.Is(lgErr, os.ErrNotExist) {
		k.log.Error("cannot read the last configuration that loaded", "err", lgErr)
		k.srv.SetProblem(lastGoodProblem, "the last configuration that loaded cannot be used either: "+lgErr.Error())
	}
	// Partially: with the last good copies of the files with mistakes, then
	// without them (a copy can need what no longer works, php-fpm say).
	tries := []*lastGood{nil}
	if lgRead != nil {
		tries = []*lastGood{lgRead, nil}
	}
	for _, lg := range tries {
		sites, notes := loadable(files, configErr, lg)
		if sites == nil {
			break
		}
		if err := k.apply(sites); err != nil {
			k.log.Error("the site files without mistakes do not serve", "err", err)
			continue
		}
		k.setServing(status.ServingPartial)
		k.sites = sites
		k.log.Error("site files with mistakes; serving the others", "config", k.conf, "sites", len(sites))
		for _, f := range files {
			if note, ok := notes[f.Name]; ok {
				k.log.Error("site file with a mistake: "+strings.TrimPrefix(note, f.Name+": "), "file", f.Name)
				k.srv.SetProblem(partialProblem+f.Name, note)
				k.partial = append(k.partial, partialProblem+f.Name)
			}
		}
		return configErr, nil
	}
	if k.serving == status.ServingFallback {
		return configErr, nil
	}
	fb, err := server.FallbackSite(k.listen, k.tlsListen)
	if err == nil {
		err = k.apply([]*config.Site{fb})
	}
	if err != nil {
		return configErr, fmt.Errorf("the fallback site: %w", err)
	}
	k.setServing(status.ServingFallback)
	k.sites = nil
	if errors.Is(lgErr, os.ErrNotExist) {
		k.log.Error("the configuration did not load and none loaded before; serving the fallback page", "config", k.conf)
	} else {
		k.log.Error("the configuration did not load, nor does the last one that did; serving the fallback page", "config", k.conf)
	}
	return configErr, nil
}

// loadable returns the sites served partially (status.ServingPartial)
// when err (why files do not load together) names mistakes in some of
// them only and the others load together; else nil. Each file with a
// mistake is replaced, in this order of preference and only while the
// result still loads together:
//
//  1. by its copy in lg (the last site files that loaded; lg may be nil),
//     whose site then serves as it did;
//  2. by server.UnavailableFile of it as written, else of that copy: its
//     names, addresses and certificate answer 503 with Retry-After
//     (server.Unavailable), the site being down for now;
//  3. else it is left out: when it does not decode far enough to name
//     its hosts (a TOML syntax error), they are unknown, and requests for
//     them go where any unknown name goes.
//
// notes has one line per file with a mistake saying which it got, for the
// status page.
func loadable(files []config.File, err error, lg *lastGood) (sites []*config.Site, notes map[string]string) {
	var ce config.Errors
	if !errors.As(err, &ce) {
		return nil, nil
	}
	bad := map[string]bool{}
	for _, e := range ce {
		bad[e.File] = true
	}
	// use holds what serves for each file, in files' order (the order
	// Arka reads them in); a file with a mistake is absent until replaced.
	use := map[string]config.File{}
	for _, f := range files {
		if !bad[f.Name] {
			use[f.Name] = f
		}
	}
	if len(use) == 0 || len(use) == len(files) {
		return nil, nil
	}
	with := func(r config.File) []config.File {
		var out []config.File
		for _, f := range files {
			if u, ok := use[f.Name]; ok {
				out = append(out, u)
			} else if f.Name == r.Name {
				out = append(out, r)
			}
		}
		return out
	}
	if _, err := parse(with(config.File{})); err != nil {
		return nil, nil
	}
	copies := map[string]config.File{}
	if lg != nil {
		for _, f := range lg.Files {
			copies[f.Name] = f
		}
	}
	unavailable := map[string]bool{}
	notes = map[string]string{}
	for _, f := range files {
		if !bad[f.Name] {
			continue
		}
		c, hasCopy := copies[f.Name]
		if hasCopy && c.Data != f.Data {
			if _, err := parse(with(c)); err == nil {
				use[f.Name] = c
				notes[f.Name] = fmt.Sprintf("%s: serving the copy of this file that last loaded (saved %s) until it loads", f.Name, lg.Saved.Format(time.RFC3339))
				continue
			}
		}
		srcs := []config.File{f}
		if hasCopy {
			srcs = append(srcs, c)
		}
		// why f's names are not kept, from f as written.
		why := "its server names are unknown (the file does not decode far enough to name them), so requests for them go where any other name goes"
	tries:
		for i, src := range srcs {
			stand, err := server.UnavailableFile(src)
			if err != nil {
				continue
			}
			for _, sf := range stand {
				if _, err := parse(with(sf)); err != nil {
					if i == 0 {
						why = "its names cannot be kept for it (" + strings.SplitN(errorLines(err), "\n", 2)[0] + "), so requests for them go where any other name goes"
					}
					continue
				}
				use[f.Name] = sf
				unavailable[f.Name] = true
				if i == 0 {
					notes[f.Name] = f.Name + ": its names answer 503 (this site is down for now) until it loads"
				} else {
					notes[f.Name] = f.Name + ": the names of the copy of this file that last loaded answer 503 (this site is down for now) until it loads"
				}
				break tries
			}
		}
		if !unavailable[f.Name] {
			notes[f.Name] = f.Name + ": " + why + " until it loads"
		}
	}
	sites, err = parse(with(config.File{}))
	if err != nil {
		return nil, nil // not so: each replacement was checked with the others
	}
	for _, s := range sites {
		if unavailable[s.File] {
			server.Unavailable(s)
		}
	}
	return sites, notes
}

// lastGoodProblem is the server problem key saying why the last good
// configuration could not be used when the fallback page serves.
const lastGoodProblem = "last-good"

// partialProblem starts the server problem keys saying, per site file
// with a mistake, what serves for it while Arka serves partially
// (loadable's notes).
const partialProblem = "partial "

// setServing records mode and clears the partial problems of the previous
// mode.
func (k *keeper) setServing(mode string) {
	k.serving = mode
	k.srv.SetServing(mode)
	for _, key := range k.partial {
		k.srv.SetProblem(key, "")
	}
	k.partial = nil
}

// parse validates site files and checks what they need from the machine
// (config.CheckEnvironment), as arka's load does.
func parse(files []config.File) ([]*config.Site, error) {
	sites, err := config.ParseFiles(files)
	if err != nil {
		return nil, err
	}
	return sites, checkEnvironment(sites)
}

// errorLines is err as the lines printConfigError prints.
func errorLines(err error) string {
	var ce config.Errors
	if errors.As(err, &ce) {
		var s []string
		for _, e := range ce {
			s = append(s, e.Error())
		}
		return strings.Join(s, "\n")
	}
	return err.Error()
}

func (k *keeper) readLastGood() (*lastGood, error) {
	b, err := os.ReadFile(k.lastGoodFile())
	if err != nil {
		return nil, err
	}
	var lg lastGood
	if err := json.Unmarshal(b, &lg); err != nil {
		return nil, fmt.Errorf("%s: %v", k.lastGoodFile(), err)
	}
	if !samePath(lg.Path, k.conf) {
		// Site files from another -c: not this configuration's past.
		return nil, fmt.Errorf("%s holds the configuration of %s, not %s: %w", k.lastGoodFile(), lg.Path, k.conf, os.ErrNotExist)
	}
	return &lg, nil
}

// saveLastGood keeps files, unless they are what is kept already.
func (k *keeper) saveLastGood(files []config.File) error {
	if lg, err := k.readLastGood(); err == nil && sameFiles(lg.Files, files) {
		return nil
	}
	b, err := json.MarshalIndent(lastGood{Saved: time.Now().UTC(), Path: absPath(k.conf), Files: files}, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(k.lastGoodFile(), append(b, '\n'), true)
}

// absPath is p absolute and clean (p itself if the working directory is
// unknown).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// samePath reports whether a and b name the same -c path: "ap/sites",
// "./ap/sites/" and its absolute path do.
func samePath(a, b string) bool { return absPath(a) == absPath(b) }

func sameFiles(a, b []config.File) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writeReadiness writes the readiness file if it changed. When it cannot
// (a full or read-only state directory), it removes the file rather than
// leave one saying what is no longer so (arka-init reads a missing file as
// "not ready"), and logs the failure once per distinct error, not at every
// tick of watchReadiness.
func (k *keeper) writeReadiness() {
	k.readyMu.Lock()
	defer k.readyMu.Unlock()
	r := k.srv.Readiness()
	if k.conds != nil {
		if r.Ready {
			k.conds.Clear("config")
		} else {
			msg := "serving " + r.Config
			if len(r.Problems) > 0 {
				msg += ": " + r.Problems[0]
			}
			k.conds.Set("config", led.Degraded, msg)
		}
	}
	t := r.Time
	r.Time = time.Time{}
	cmp, _ := json.Marshal(r)
	if bytes.Equal(cmp, k.lastReady) {
		return
	}
	r.Time = t
	b, _ := json.MarshalIndent(r, "", "  ")
	file := filepath.Join(k.state, status.ReadyFile)
	if err := writeFileAtomic(file, append(b, '\n'), false); err != nil {
		if k.lastReady != nil || k.readyErr == "" {
			os.Remove(file)
			k.lastReady = nil
		}
		if err.Error() != k.readyErr {
			k.readyErr = err.Error()
			k.log.Warn("cannot write the readiness file; it is removed until it can be (logged again only if the error changes)", "err", err)
		}
		return
	}
	if k.readyErr != "" {
		k.readyErr = ""
		k.log.Info("readiness file written again", "file", file)
	}
	k.lastReady = cmp
}

// watchReadiness keeps the readiness file current (a listener bound later,
// for example).
func (k *keeper) watchReadiness(done <-chan struct{}) {
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	for {
		select {
		case <-done:
			return
		case <-tk.C:
			k.writeReadiness()
		}
	}
}

// writeFileAtomic replaces path with data (a temporary file renamed over
// it), synced to disk when durable.
func writeFileAtomic(path string, data []byte, durable bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
