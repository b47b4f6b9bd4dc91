package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Options configure a benchmark run.
type Options struct {
	Servers     []Server
	Tests       []*Test
	Rounds      int           // at least 1; the seed's method needs 2 or more
	Duration    time.Duration // per run (whole seconds)
	Warmup      time.Duration // per test and server before round 1; 0 = none
	Pause       time.Duration // between runs, to let the machine settle
	Connections int
	Threads     int           // load generator threads
	Timeout     time.Duration // client timeout, counted as "timeouts"
	PHPWorkers  int           // static php-fpm workers per pool

	Arka    string // arka binary; empty = build ./cmd/arka with go build
	Results string // results root (tests/bench/results); a run writes Results/<stamp>
	Name    string // run directory name; default: UTC time stamp
	Keep    bool   // keep the temporary work directory
	Log     io.Writer
}

// Run is one benchmark run's state.
type Run struct {
	o        Options
	log      io.Writer
	work     string // temporary directory
	out      string // results directory of this run
	layout   *Layout
	content  *Content
	tools    map[string]*Tool
	servers  []Server
	tests    []*Test
	procs    map[string]*Proc // servers, their php-fpm pools (PHPPool), "upstream"
	arkaBin  string
	arkaSupp map[string]string // handler type -> "" (supported) or why not
	skips    map[Server]map[string]string
	notes    []string // said in the output and in results.md
	checks   map[string]Check
	rows     []*Row
	visits   []Visit // the one-visitor latencies (visitor.go)
	env      *Env
}

// Execute runs the whole benchmark: checks, files, configurations,
// servers, verification, timed rounds, reports. It returns the results
// directory.
func Execute(ctx context.Context, o Options) (string, error) {
	if o.Log == nil {
		o.Log = os.Stdout
	}
	if o.Rounds < 1 || o.Connections < 1 || o.Threads < 1 || o.Duration < time.Second || o.PHPWorkers < 1 {
		return "", errors.New("rounds, connections, threads and php workers must be at least 1, duration at least 1s")
	}
	r := &Run{o: o, log: o.Log, procs: map[string]*Proc{}, skips: map[Server]map[string]string{}, checks: map[string]Check{}, arkaSupp: map[string]string{}}
	defer r.cleanup()
	steps := []struct {
		name string
		f    func(context.Context) error
	}{
		{"checking tools", r.checkTools},
		{"generating files", r.prepare},
		{"checking arka", r.probeArka},
		{"writing configurations", r.writeConfigs},
		{"starting servers", r.startAll},
		{"verifying every URL", r.verify},
		{"measuring", r.measure},
		{"one visitor: requests one after another over HTTPS", r.visitors},
		{"writing results", r.report},
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return r.out, err
		}
		r.say("== %s", s.name)
		if err := s.f(ctx); err != nil {
			if len(r.rows) > 0 && s.name != "writing results" {
				// Keep what was measured: the report says it is partial.
				r.note("INCOMPLETE RUN: %s stopped early: %s", s.name, oneLine(err.Error()))
				if rerr := r.report(context.WithoutCancel(ctx)); rerr != nil {
					r.say("  writing the partial results: %v", rerr)
				}
			}
			return r.out, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return r.out, nil
}

func (r *Run) say(format string, args ...any) {
	fmt.Fprintf(r.log, format+"\n", args...)
}

// note is said now and repeated in results.md.
func (r *Run) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.notes = append(r.notes, s)
	r.say("NOTE: %s", s)
}

func (r *Run) skip(s Server, test, why string) {
	if r.skips[s] == nil {
		r.skips[s] = map[string]string{}
	}
	r.skips[s][test] = why
}

func (r *Run) skipped(s Server, test string) (string, bool) {
	why, ok := r.skips[s][test]
	return why, ok
}

func (r *Run) checkTools(ctx context.Context) error {
	r.tools = map[string]*Tool{}
	var missing []*Tool
	for _, t := range Tools() {
		r.tools[t.Name] = t
		if t.Find() {
			r.say("  found %-9s %s", t.Name, t.Path)
			continue
		}
		r.say("  MISSING %-7s (%s)", t.Name, strings.Join(t.Missing, ", "))
		missing = append(missing, t)
	}
	if len(missing) > 0 {
		r.say("  To install what is missing (nothing is installed for you):\n    %s", InstallLine(missing))
	}
	for _, t := range missing {
		if t.Required {
			return fmt.Errorf("%s is required: %s", t.Name, InstallLine([]*Tool{t}))
		}
	}
	for _, s := range r.o.Servers {
		if s != Arka && len(r.tools[string(s)].Missing) > 0 {
			r.note("%s is not installed: its tests are skipped (%s)", s, InstallLine([]*Tool{r.tools[string(s)]}))
			continue
		}
		r.servers = append(r.servers, s)
	}
	r.tests = r.o.Tests
	if len(r.tools["php-fpm"].Missing) > 0 {
		var kept []*Test
		for _, t := range r.tests {
			if !t.PHP() {
				kept = append(kept, t)
			}
		}
		if len(kept) < len(r.tests) {
			r.note("php-fpm is not installed: the PHP tests are skipped for every server")
		}
		r.tests = kept
	}
	if len(r.servers) == 0 || len(r.tests) == 0 {
		return errors.New("nothing left to measure")
	}
	return nil
}

func (r *Run) prepare(ctx context.Context) error {
	var err error
	r.work, err = os.MkdirTemp("", "arkabench-")
	if err != nil {
		return err
	}
	// Workers of nginx, Apache and php-fpm may run as another user (see
	// Layout.RunAs): everything they read must be world-readable.
	if err := os.Chmod(r.work, 0o755); err != nil {
		return err
	}
	stamp := r.o.Name
	if stamp == "" {
		stamp = time.Now().UTC().Format("20060102-150405")
	}
	r.out = filepath.Join(r.o.Results, stamp)
	if err := os.MkdirAll(filepath.Join(r.out, "raw"), 0o755); err != nil {
		return err
	}
	r.say("  work directory %s, results %s", r.work, r.out)

	ports, err := FreePorts(2*len(AllServers) + 1)
	if err != nil {
		return err
	}
	l, err := NewLayout(r.work, ports, r.o.PHPWorkers, runtime.NumCPU())
	if err != nil {
		return err
	}
	if l.RunAs != "" {
		r.note("running as root: nginx, Apache, lighttpd and php-fpm workers run as %s:%s (Arka and Caddy as root)", l.RunAs, l.RunGroup)
	}
	r.layout = l
	start := time.Now()
	r.content = NewContent()
	if err := r.content.WriteWWW(l.WWW); err != nil {
		return err
	}
	if err := WriteCert(l.Cert, l.Key); err != nil {
		return err
	}
	r.say("  files: page %d B (br %d), script %d B (br %d, gz %d, zst %d), binary %d B, PHP page %d B; %.1fs",
		len(r.content.Page), len(r.content.Sibling(PagePath, "br")), len(r.content.Script),
		len(r.content.Sibling(ScriptPath, "br")), len(r.content.Sibling(ScriptPath, "gzip")), len(r.content.Sibling(ScriptPath, "zstd")),
		len(r.content.Binary), len(r.content.PHPPage), time.Since(start).Seconds())
	r.env = collectEnv(ctx, r)
	return nil
}

// probeArka finds (or builds) the arka binary and asks `arka -t` which
// handler types it implements; tests needing the others are skipped for
// Arka, and said so.
func (r *Run) probeArka(ctx context.Context) error {
	if !slices.Contains(r.servers, Arka) {
		return nil
	}
	bin := r.o.Arka
	if bin == "" {
		bin = filepath.Join(r.work, "arka")
		r.say("  building arka: go build -o %s ./cmd/arka", bin)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/arka")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/arka (run from the repository root, or pass -arka): %v\n%s", err, out)
		}
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	r.arkaBin = abs
	r.env.Versions["arka"] = Version(ctx, r.arkaBin, "-version")
	probeDir := filepath.Join(r.work, "probe")
	if err := os.MkdirAll(probeDir, 0o755); err != nil {
		return err
	}
	for _, typ := range ArkaHandlerTypes {
		f := filepath.Join(probeDir, typ+".toml")
		if err := os.WriteFile(f, ArkaProbeSite(r.layout, typ, r.layout.Ports[Arka].HTTP), 0o644); err != nil {
			return err
		}
		out, err := exec.CommandContext(ctx, r.arkaBin, "-t", "-c", f).CombinedOutput()
		if err == nil {
			r.arkaSupp[typ] = ""
			r.say("  arka -t: %s handlers: supported", typ)
			continue
		}
		why := strings.TrimSpace(string(out))
		if i := strings.Index(why, "not implemented yet"); i >= 0 {
			why = typ + " handler not implemented yet in this arka"
		} else {
			why = fmt.Sprintf("`arka -t` rejects a %s route: %s", typ, oneLine(why))
		}
		r.arkaSupp[typ] = why
	}
	if why := r.arkaSupp["static"]; why != "" {
		return fmt.Errorf("arka cannot serve static files: %s", why)
	}
	for _, t := range r.tests {
		if why := r.arkaSupp[t.Handler]; why != "" {
			r.skip(Arka, t.Name, why)
		}
	}
	for _, typ := range ArkaHandlerTypes {
		if why := r.arkaSupp[typ]; why != "" {
			var names []string
			for _, t := range r.tests {
				if t.Handler == typ {
					names = append(names, t.Name)
				}
			}
			if len(names) > 0 {
				r.note("Arka SKIPPED %s: %s", strings.Join(names, ", "), why)
			}
		}
	}
	return nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func (r *Run) arkaTypes() []string {
	var types []string
	for _, t := range ArkaHandlerTypes {
		if r.arkaSupp[t] == "" {
			types = append(types, t)
		}
	}
	return types
}

func (r *Run) writeConfigs(ctx context.Context) error {
	dir := filepath.Join(r.out, "configs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range Configs(r.layout) {
		data := c.Data
		if c.Name == "arka.toml" {
			data = ArkaSite(r.layout, r.arkaTypes())
		}
		for _, d := range []string{r.work, dir} {
			if err := os.WriteFile(filepath.Join(d, c.Name), data, 0o644); err != nil {
				return err
			}
		}
	}
	if slices.Contains(r.servers, Arka) {
		out, err := exec.CommandContext(ctx, r.arkaBin, "-t", "-c", filepath.Join(r.work, "arka.toml")).CombinedOutput()
		if err != nil {
			return fmt.Errorf("arka -t on the benchmark's site file: %v\n%s", err, out)
		}
	}
	return nil
}

func (r *Run) needs(pred func(*Test) bool) bool {
	return slices.ContainsFunc(r.tests, pred)
}

func (r *Run) startAll(ctx context.Context) error {
	l := r.layout
	tcp := func(p int) string { return fmt.Sprintf("tcp:127.0.0.1:%d", p) }
	start := func(name, dir string, env, ready []string, bin string, args ...string) error {
		p, err := Start(name, dir, env, ready, bin, args...)
		if err != nil {
			return err
		}
		r.procs[name] = p
		if err := p.WaitReady(20 * time.Second); err != nil {
			return err
		}
		r.say("  %-9s pid %d", name, p.Pid())
		return nil
	}
	if r.needs((*Test).Proxy) {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", l.Upstream.HTTP)
		if err := start("upstream", l.Dir("upstream"), nil, []string{"tcp:" + addr}, self, "-upstream", addr); err != nil {
			return err
		}
	}
	php := r.tools["php-fpm"].Path
	if r.needs((*Test).PHP) {
		for _, s := range r.servers {
			if s == Arka && r.arkaSupp["fastcgi"] != "" {
				continue
			}
			pool := PHPPool(s)
			if err := start(pool, l.Dir(pool), nil, []string{"unix:" + l.PHPSocket(s)}, php, "-F", "-y", filepath.Join(r.work, pool+".conf")); err != nil {
				return err
			}
		}
	}
	for _, s := range r.servers {
		p := l.Ports[s]
		ready := []string{tcp(p.HTTP), tcp(p.HTTPS)}
		dir := l.Dir(string(s))
		var err error
		switch s {
		case Arka:
			err = start(string(s), dir, nil, ready, r.arkaBin, "-c", filepath.Join(r.work, "arka.toml"), "-state", filepath.Join(dir, "state"))
		case Nginx:
			err = start(string(s), dir, nil, ready, r.tools["nginx"].Path, "-p", dir+"/", "-e", filepath.Join(dir, "error.log"),
				"-c", filepath.Join(r.work, "nginx.conf"), "-g", "daemon off;")
		case Apache:
			err = start(string(s), dir, nil, ready, r.tools["apache"].Path, "-f", filepath.Join(r.work, "apache2.conf"), "-DFOREGROUND")
		case Caddy:
			env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, "data"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
			err = start(string(s), dir, env, ready, r.tools["caddy"].Path, "run", "--config", filepath.Join(r.work, "Caddyfile"), "--adapter", "caddyfile")
		case Lighttpd:
			if e := os.MkdirAll(filepath.Join(dir, "deflate-cache"), 0o777); e != nil {
				return e
			}
			if l.RunAs != "" {
				// The cache is written by lighttpd after it drops to RunAs.
				_ = os.Chmod(filepath.Join(dir, "deflate-cache"), 0o777)
				_ = os.Chmod(dir, 0o777)
			}
			err = start(string(s), dir, nil, ready, r.tools["lighttpd"].Path, "-D", "-f", filepath.Join(r.work, "lighttpd.conf"))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *Run) url(s Server, t *Test) string {
	p := r.layout.Ports[s]
	if t.TLS {
		return fmt.Sprintf("https://127.0.0.1:%d%s", p.HTTPS, t.Path)
	}
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.HTTP, t.Path)
}

func (r *Run) verify(ctx context.Context) error {
	cl, err := NewClients(r.layout.Cert)
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed []string
	for _, t := range r.tests {
		for _, s := range r.servers {
			if _, ok := r.skipped(s, t.Name); ok {
				continue
			}
			// Twice: the second answer is the one a timed run gets once
			// caches (open_file_cache, lighttpd's deflate cache, Arka's
			// compressed variants) are warm.
			var ck Check
			var err error
			for range 2 {
				if ck, err = cl.Verify(ctx, r.content, t, r.url(s, t)); err != nil {
					break
				}
			}
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s %s (%s): %v", s, t.Name, r.url(s, t), err))
				continue
			}
			r.checks[string(s)+" "+t.Name] = ck
			coding := ck.Coding
			if coding == "" {
				coding = "identity"
			} else if ck.Copy {
				coding += " (precompressed copy)"
			}
			r.say("  ok %-8s %-17s %s %d B %s", s, t.Name, ck.Proto, ck.Bytes, coding)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d URL(s) did not answer as expected; nothing was timed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

// Row is one timed run of one test against one server.
type Row struct {
	Test     *Test
	Server   Server
	Round    int // 1-based
	Position int // 1-based position in the round's order
	Start    time.Time
	Wall     float64 // seconds the load generator ran
	Load     *Load
	// CPU seconds over the run: the server's process tree (with its
	// php-fpm pool for PHP tests), the upstream (proxy tests), and the
	// whole machine (in cores: CPU seconds per wall second).
	ServerCPU, UpstreamCPU float64
	MachineCores           float64
	PeakRSS                int64 // bytes, see procfs.go
	Check                  Check
	// Failed says why the load generator gave no figures (it failed or
	// hung); such runs are reported, and left out of the medians.
	Failed string
}

// CPUPer1000 is the server's CPU seconds per 1000 successful responses.
func (w *Row) CPUPer1000() float64 {
	if w.Load.Succeeded == 0 {
		return 0
	}
	return w.ServerCPU / float64(w.Load.Succeeded) * 1000
}

// ServerCores, ClientCores and OtherCores are CPU seconds per wall second
// of the server tree, the load generator, and everything else on the
// machine (other programs, the upstream, the harness).
func (w *Row) ServerCores() float64 { return w.ServerCPU / w.Wall }
func (w *Row) ClientCores() float64 { return w.Load.ClientCPU / w.Wall }
func (w *Row) OtherCores() float64 {
	return max(0, w.MachineCores-w.ServerCores()-w.ClientCores()-w.UpstreamCPU/w.Wall)
}

func (r *Run) roots(s Server, t *Test) []int {
	roots := []int{r.procs[string(s)].Pid()}
	if t.PHP() {
		roots = append(roots, r.procs[PHPPool(s)].Pid())
	}
	return roots
}

func (r *Run) loadOptions(s Server, t *Test, d time.Duration) LoadOptions {
	return LoadOptions{URL: r.url(s, t), Connections: r.o.Connections, Threads: r.o.Threads, Duration: d,
		AcceptEncoding: t.AcceptEncoding, NewConn: t.NewConn, Timeout: r.o.Timeout, LogDir: r.work}
}

// measure runs every test: for each test, Rounds rounds, each round over
// the servers in an order rotated by one from the round before (and from
// the test before), so that no server always runs first or right after
// another one.
func (r *Run) measure(ctx context.Context) error {
	total := 0
	for _, t := range r.tests {
		for _, s := range r.servers {
			if _, ok := r.skipped(s, t.Name); !ok {
				total += r.o.Rounds
			}
		}
	}
	est := time.Duration(total) * (r.o.Duration + r.o.Pause + 300*time.Millisecond)
	est += time.Duration(total/r.o.Rounds) * r.o.Warmup
	r.say("  %d runs of %v, %d connections, %d client threads, timeout %v: about %v",
		total, r.o.Duration, r.o.Connections, r.o.Threads, r.o.Timeout, est.Round(time.Second))
	n := 0
	for ti, t := range r.tests {
		if r.o.Warmup > 0 {
			for _, s := range r.servers {
				if _, ok := r.skipped(s, t.Name); ok {
					continue
				}
				if _, err := RunLoad(ctx, t.Tool, r.loadOptions(s, t, r.o.Warmup)); err != nil {
					return fmt.Errorf("warm-up %s %s: %v", s, t.Name, err)
				}
			}
		}
		for round := 1; round <= r.o.Rounds; round++ {
			order := rotate(r.servers, ti+round-1)
			pos := 0
			for _, s := range order {
				if why, ok := r.skipped(s, t.Name); ok {
					if round == 1 {
						r.say("  SKIP %-17s %-8s %s", t.Name, s, why)
					}
					continue
				}
				pos++
				n++
				if err := ctx.Err(); err != nil {
					return err
				}
				if p := r.procs[string(s)]; p.Exited() {
					return fmt.Errorf("%s has exited:\n%s", s, p.Tail(20))
				}
				time.Sleep(r.o.Pause)
				row, err := r.runOne(ctx, s, t, round, pos)
				if err != nil {
					return err
				}
				r.rows = append(r.rows, row)
				if row.Failed != "" {
					r.note("%s %s round %d: the run FAILED, no figures: %s", s, t.Name, round, row.Failed)
					continue
				}
				l := row.Load
				r.say("  [%3d/%d] %-17s r%d %-8s %9.0f req/s  p50 %7.2f ms  p99 %8.2f ms  err %d  t/o %d  cpu %.4f s/1000  rss %5.1f MB  cores: server %.2f client %.2f other %.2f",
					n, total, t.Name, round, s, l.RPS(), l.P50, l.P99, l.Errors+l.Non2xx, l.Timeouts, row.CPUPer1000(),
					float64(row.PeakRSS)/(1<<20), row.ServerCores(), row.ClientCores(), row.OtherCores())
				if l.Non2xx > 0 {
					r.note("%s %s round %d: %d responses were not 2xx/3xx", s, t.Name, round, l.Non2xx)
				}
			}
		}
	}
	return nil
}

func rotate[T any](s []T, k int) []T {
	if len(s) == 0 {
		return nil
	}
	k %= len(s)
	return append(slices.Clone(s[k:]), s[:k]...)
}

func (r *Run) runOne(ctx context.Context, s Server, t *Test, round, pos int) (*Row, error) {
	roots := r.roots(s, t)
	pids, before := Tree(roots...)
	ResetPeakRSS(pids)
	var upPid int
	var upBefore int64
	if t.Proxy() {
		upPid = r.procs["upstream"].Pid()
		_, upBefore = Tree(upPid)
	}
	m0 := ReadMachineCPU()
	start := time.Now()
	l, err := RunLoad(ctx, t.Tool, r.loadOptions(s, t, r.o.Duration))
	wall := time.Since(start).Seconds()
	m1 := ReadMachineCPU()
	pidsAfter, after := Tree(roots...)
	row := &Row{Test: t, Server: s, Round: round, Position: pos, Start: start, Wall: wall, Load: l,
		ServerCPU: float64(after-before) / clockTicks, Check: r.checks[string(s)+" "+t.Name]}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		first, rest, _ := strings.Cut(err.Error(), "\n")
		row.Failed, row.Load = first, &Load{Output: rest}
		raw := filepath.Join(r.out, "raw", fmt.Sprintf("%s.%s.r%d.txt", t.Name, s, round))
		return row, os.WriteFile(raw, []byte(err.Error()), 0o644)
	}
	if l.Succeeded == 0 {
		row.Failed = fmt.Sprintf("no response completed successfully in the run (%d responses, %d errors, %d timeouts; %d bytes received)", l.Requests, l.Errors, l.Timeouts, l.Bytes)
	} else if t.Tool == H2load && row.Check.Bytes > 0 {
		// h2load counts body bytes, those of the responses still in
		// flight at the end included: under load, the answers should be
		// the size verification saw.
		lo := row.Check.Bytes * l.Requests
		hi := row.Check.Bytes * (l.Requests + int64(r.o.Connections))
		if l.Bytes < lo*95/100 || l.Bytes > hi*105/100 {
			r.note("%s %s round %d: %d body bytes for %d responses under load; verification saw %d per response",
				s, t.Name, round, l.Bytes, l.Requests, row.Check.Bytes)
		}
	}
	row.PeakRSS = PeakRSS(pidsAfter)
	if upPid != 0 {
		_, upAfter := Tree(upPid)
		row.UpstreamCPU = float64(upAfter-upBefore) / clockTicks
	}
	row.MachineCores = float64(m1.Busy-m0.Busy) / clockTicks / wall
	raw := filepath.Join(r.out, "raw", fmt.Sprintf("%s.%s.r%d.txt", t.Name, s, round))
	if err := os.WriteFile(raw, []byte(l.Output), 0o644); err != nil {
		return nil, err
	}
	return row, nil
}

func (r *Run) cleanup() {
	// Servers first, then their pools and the upstream.
	var order []string
	for _, s := range AllServers {
		order = append(order, string(s))
	}
	for _, s := range AllServers {
		order = append(order, PHPPool(s))
	}
	for _, name := range append(order, "upstream") {
		if p := r.procs[name]; p != nil {
			if err := p.Stop(); err != nil {
				r.say("  %v", err)
			}
		}
	}
	// The servers' own logs go with the results (they are small: access
	// logs are off).
	if r.out != "" {
		for name, p := range r.procs {
			logs, _ := filepath.Glob(filepath.Join(p.Dir, "*.log"))
			for _, f := range logs {
				if data, err := os.ReadFile(f); err == nil && len(data) > 0 {
					dst := filepath.Join(r.out, "logs", name+"."+filepath.Base(f))
					_ = os.MkdirAll(filepath.Dir(dst), 0o755)
					_ = os.WriteFile(dst, data, 0o644)
				}
			}
		}
	}
	if r.work != "" {
		if r.o.Keep {
			r.say("  kept the work directory %s", r.work)
		} else {
			os.RemoveAll(r.work)
		}
	}
}
