package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/arkaweb/arka/appliance/deploy"
	"github.com/arkaweb/arka/appliance/device/ota"
	"github.com/arkaweb/arka/appliance/device/supervise"
	"github.com/arkaweb/arka/appliance/initcfg"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/status"
)

// activeLink names the directory Arka reads its sites from
// (-c /tmp/arka/active/sites): the deployed generation (/perm/arka/site),
// or the site baked into the image. A deploy repoints it and has Arka
// reload; relative paths in site files (root = "../www") resolve through
// it.
const activeLink = "/tmp/arka/active"

const arkaPath = "/user/arka"

// startDeploy serves the deploy API (appliance/deploy) on gokrazy's web UI
// and returns the sites directory Arka gets: through activeLink, pointed
// at the deployed generation if there is one (it wins over the baked
// site), else at fallback's parent (the directory holding sites/). The
// status page's file follows every change (appliance_linux.go).
func startDeploy(fallback, state string, sets *settingsState) (sitesArg, real string) {
	pw := ota.GokrazyPassword() // what gokrazy read at boot
	store := &deploy.Store{
		Dir:  permArka,
		Logf: log.Printf,
		Check: func(ctx context.Context, dir string) ([]string, error) {
			return checkSite(ctx, dir, state)
		},
	}
	baked := filepath.Dir(fallback)
	store.Activate = func(dir string) error {
		if dir == "" {
			dir = baked
		}
		if err := pointActive(dir); err != nil {
			return err
		}
		if err := reloadArka(pw, state); err != nil {
			return err
		}
		// The new site's files have the old ones' paths (through
		// activeLink): Arka's file cache trusts what it knew about them
		// for server.FileCacheValid. Past that, every request sees the new
		// files, so the deploy is answered then.
		time.Sleep(server.FileCacheValid + 100*time.Millisecond)
		return nil
	}
	store.OnChange = func() { writeApplianceStatus(sets, store) }
	writeApplianceStatus(sets, store)
	root := baked
	if d := store.SiteDir(); d != "" {
		root = d
	}
	if err := pointActive(root); err != nil {
		log.Printf("deploy: %v; Arka reads %s directly and deploys need a restart", err, root)
		return filepath.Join(root, "sites"), filepath.Join(root, "sites")
	}
	store.Register(http.DefaultServeMux)
	if g := store.State().Current; g != nil {
		log.Printf("deploy: serving generation %d (deployed %s from %s)", g.ID, g.Deployed.Format(time.RFC3339), g.From)
	}
	return filepath.Join(activeLink, "sites"), filepath.Join(root, "sites")
}

// pointActive makes activeLink name dir, atomically.
func pointActive(dir string) error {
	if err := os.MkdirAll(filepath.Dir(activeLink), 0o755); err != nil {
		return err
	}
	tmp := activeLink + ".new"
	os.Remove(tmp)
	if err := os.Symlink(dir, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, activeLink)
}

// checkSite runs `arka -t` on dir/sites, as Arka itself would check it.
// It runs the Arka binary itself (initcfg.ArkaBinary): /user/arka is the
// supervisor, which would run the check again and again as a service.
func checkSite(ctx context.Context, dir, state string) ([]string, error) {
	bin := initcfg.ArkaBinary
	if _, err := os.Stat(bin); err != nil {
		bin = arkaPath // an image from before the supervisor
	}
	cmd := exec.CommandContext(ctx, bin, "-t", "-c", filepath.Join(dir, "sites"), "-state", state,
		"-reserved-ports", reservedPorts(portDirs))
	cmd.Env = os.Environ()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, err
	}
	if err == nil {
		return nil, nil
	}
	var mistakes []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l == "" || strings.HasPrefix(l, "arka: configuration ") {
			continue
		}
		mistakes = append(mistakes, l)
	}
	if len(mistakes) == 0 {
		mistakes = []string{fmt.Sprintf("arka -t failed: %v", err)}
	}
	return mistakes, nil
}

// portDirs are where gokrazy reads http-port.txt and https-port.txt, the
// first that has the file winning.
var portDirs = []string{"/perm", "/etc", "/"}

// devicePort reads the port in the first dirs/name that has one, else def.
func devicePort(dirs []string, name string, def int) int {
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, name))
		if err != nil {
			continue
		}
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p < 65536 {
			return p
		}
	}
	return def
}

// reservedPorts is `arka -reserved-ports` for the deploy check: the ports
// of gokrazy's web UI (it listens on the private addresses) and of the
// HTTPS web UI and update/deploy API (serveHTTPS). A site listening on one
// would pass the check and then not bind, or take the API away.
func reservedPorts(dirs []string) string {
	return fmt.Sprintf("%d=the device's web UI (gokrazy),%d=the device's update/deploy API",
		devicePort(dirs, "http-port.txt", 80), devicePort(dirs, "https-port.txt", 8443))
}

// reloadArka sends SIGHUP to Arka and waits for its verdict in its log
// ("configuration reloaded" or "reload failed", gokrazy's log stream),
// then reads its readiness (state/ready.json, written before the verdict
// line): problems the reload brought (an address the new site cannot
// bind) make a *deploy.NotReadyError. When Arka is not running, or was
// crash-looping before and gave no verdict, the error wraps
// deploy.ErrNotRunning: the site is read when it starts.
func reloadArka(pw, state string) error {
	pid, err := arkaPID()
	if err != nil {
		return err
	}
	before := readinessOf(state, pid)
	looping, _ := crashLoop()
	// noVerdict is the error when Arka gives none: a crash-looping Arka
	// that exits meanwhile reads the new site at its next start.
	noVerdict := func(why string) error {
		if looping != "" {
			return fmt.Errorf("%w: it is crash-looping (%s) and %s", deploy.ErrNotRunning, looping, why)
		}
		return errors.New(why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lines := make(chan string, 64)
	go streamLog(ctx, pw, arkaPath, lines)
	// Lines already in the ring buffer arrive first: let them pass.
	quiet := time.NewTimer(500 * time.Millisecond)
drain:
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return errors.New("cannot read the log of /user/arka to see the reload's verdict")
			}
			quiet.Reset(200 * time.Millisecond)
		case <-quiet.C:
			break drain
		}
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); errors.Is(err, syscall.ESRCH) {
		// Stopped a moment ago (gokrazy still names its last pid): the
		// site is read when it starts, as for a stopped Arka.
		return fmt.Errorf("%w: it exited (pid %d no longer runs)", deploy.ErrNotRunning, pid)
	} else if err != nil {
		return noVerdict(fmt.Sprintf("signalling Arka (pid %d): %v", pid, err))
	}
	alive := time.NewTicker(500 * time.Millisecond)
	defer alive.Stop()
	for {
		select {
		case <-alive.C:
			if syscall.Kill(pid, 0) != nil {
				return noVerdict("it exited during the reload")
			}
		case l, ok := <-lines:
			if !ok {
				return noVerdict("the log stream of /user/arka ended before the reload finished")
			}
			switch {
			case strings.Contains(l, "configuration reloaded"):
				after := readinessOf(state, pid)
				if after == nil {
					// Not written by this Arka (an older Arka, or an
					// unwritable state directory): the log's verdict stands.
					return nil
				}
				if p := newProblems(before, after); len(p) > 0 {
					return &deploy.NotReadyError{Problems: p}
				}
				return nil
			case strings.Contains(l, "reload failed"):
				return fmt.Errorf("the server refused the new configuration: %s", strings.Join(append([]string{l}, following(lines, 300*time.Millisecond)...), "; "))
			}
		case <-ctx.Done():
			return noVerdict("no reload verdict in the server's log within 30 s")
		}
	}
}

// readinessOf is Arka's readiness report if the process pid wrote it,
// else nil.
func readinessOf(state string, pid int) *status.Readiness {
	r, err := readReadiness(state)
	if err != nil || r.PID != pid {
		return nil
	}
	return r
}

// newProblems are the problems in after (Arka's readiness after a reload)
// that before (the same process's, before it; nil: unknown) did not have,
// with paths through activeLink made relative to the site directory
// ("sites/x.toml:2:11: …", as the deploy check's mistakes). Nil when after
// is ready or brought nothing new.
func newProblems(before, after *status.Readiness) []string {
	if after == nil || after.Ready {
		return nil
	}
	had := map[string]bool{}
	if before != nil {
		for _, p := range before.Problems {
			had[p] = true
		}
	}
	var out []string
	for _, p := range after.Problems {
		if !had[p] {
			out = append(out, strings.ReplaceAll(p, activeLink+"/", ""))
		}
	}
	if len(out) == 0 && after.Config != status.ServingAsWritten && (before == nil || before.Config != after.Config) {
		out = append(out, "the server serves "+after.Config+", not the new site as written")
	}
	return out
}

// following collects the lines that arrive within d (the mistakes Arka
// prints after "reload failed").
func following(lines <-chan string, d time.Duration) []string {
	var out []string
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-t.C:
			return out
		}
	}
}

// streamLog sends the lines of a program's stderr (gokrazy's log ring
// buffer, over its Unix socket) to lines until ctx ends.
func streamLog(ctx context.Context, pw, path string, lines chan<- string) {
	defer close(lines)
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", ota.GokrazySocket)
		},
	}}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://gokrazy/log?stream=stderr&path="+url.QueryEscape(path), nil)
	req.Header.Set("Accept", "text/event-stream")
	if pw != "" {
		req.SetBasicAuth("gokrazy", pw)
	}
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		select {
		case lines <- strings.TrimPrefix(sc.Text(), "data: "):
		case <-ctx.Done():
			return
		}
	}
}

// findProcess returns the pid of the running program at path (a child of
// this init).
func findProcess(path string) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != path {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		if i := bytes.LastIndexByte(stat, ')'); i > 0 {
			f := strings.Fields(string(stat[i+1:]))
			if len(f) > 1 && f[1] == strconv.Itoa(self) {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("%s is not running", path)
}

// arkaPID is the running Arka's process: the one its supervisor (/user/arka,
// appliance/device/supervise) started, else a direct child of init run as
// /user/arka (an image from before the supervisor). When there is none the
// error wraps deploy.ErrNotRunning.
func arkaPID() (int, error) {
	if st := arkaState(); st != nil {
		return runningArka(st, initcfg.ArkaBinary)
	}
	pid, err := findProcess(arkaPath)
	if err != nil {
		return 0, fmt.Errorf("%w (%v)", deploy.ErrNotRunning, err)
	}
	return pid, nil
}

// runningArka is the process the supervisor's state st names, if it is
// alive and runs bin; else an error wrapping deploy.ErrNotRunning that says
// why (stopped, waiting to restart after an exit, gone).
func runningArka(st *supervise.State, bin string) (int, error) {
	if st.PID == 0 {
		switch {
		case !st.NextStart.IsZero() && st.LastExit != nil:
			return 0, fmt.Errorf("%w: it exited (%s) and restarts in %s", deploy.ErrNotRunning, st.LastExit,
				max(time.Until(st.NextStart), 0).Round(time.Second))
		case st.LastExit != nil:
			return 0, fmt.Errorf("%w: it was stopped (%s)", deploy.ErrNotRunning, st.LastExit)
		}
		return 0, fmt.Errorf("%w: it has not started", deploy.ErrNotRunning)
	}
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(st.PID), "exe"))
	exe = strings.TrimSuffix(exe, " (deleted)")
	if real, rerr := filepath.EvalSymlinks(bin); rerr == nil && exe == real {
		exe = bin // the kernel names the binary with symbolic links resolved
	}
	if err != nil || exe != bin {
		return 0, fmt.Errorf("%w: its process %d is gone", deploy.ErrNotRunning, st.PID)
	}
	return st.PID, nil
}
