package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Summary is the figures of one test and server over its rounds: medians
// of the per-round figures (with two rounds, their mean), the sum of
// errors and timeouts, the largest peak memory.
type Summary struct {
	Test   *Test
	Server Server
	Rounds int
	RPS    float64
	P50    float64 // ms
	P99    float64 // ms
	Errors int64   // errors + non-2xx responses
	// Timeouts are requests slower than the client timeout.
	Timeouts    int64
	CPUPer1000  float64 // CPU seconds of the server tree per 1000 responses
	PeakRSS     int64
	ServerCores float64 // cores
	ClientCores float64 // cores
	OtherCores  float64 // cores
	Check       Check
	Failed      int    // runs without figures (see Row.Failed)
	Skipped     string // why not measured, when it was not
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Summarize groups rows by test and server.
func Summarize(rows []*Row, tests []*Test, servers []Server, skips map[Server]map[string]string) []*Summary {
	var out []*Summary
	for _, t := range tests {
		for _, s := range servers {
			sm := &Summary{Test: t, Server: s}
			if why, ok := skips[s][t.Name]; ok {
				sm.Skipped = why
				out = append(out, sm)
				continue
			}
			var rps, p50, p99, cpu, sc, cc, oc []float64
			for _, w := range rows {
				if w.Test != t || w.Server != s {
					continue
				}
				if w.Failed != "" {
					sm.Failed++
					continue
				}
				sm.Rounds++
				rps = append(rps, w.Load.RPS())
				p50 = append(p50, w.Load.P50)
				p99 = append(p99, w.Load.P99)
				cpu = append(cpu, w.CPUPer1000())
				sc = append(sc, w.ServerCores())
				cc = append(cc, w.ClientCores())
				oc = append(oc, w.OtherCores())
				sm.Errors += w.Load.Errors + w.Load.Non2xx
				sm.Timeouts += w.Load.Timeouts
				sm.PeakRSS = max(sm.PeakRSS, w.PeakRSS)
				sm.Check = w.Check
			}
			if sm.Rounds == 0 {
				if sm.Failed > 0 {
					sm.Skipped = "every run failed (see the notes)"
					out = append(out, sm)
				}
				continue
			}
			sm.RPS, sm.P50, sm.P99, sm.CPUPer1000 = median(rps), median(p50), median(p99), median(cpu)
			sm.ServerCores, sm.ClientCores, sm.OtherCores = median(sc), median(cc), median(oc)
			out = append(out, sm)
		}
	}
	return out
}

// TSVHeader names the columns of results.tsv, one row per timed run.
var TSVHeader = []string{
	"test", "server", "round", "position", "start_utc", "tool", "protocol", "duration_s",
	"requests", "succeeded", "non_2xx", "errors", "timeouts", "req_per_s", "p50_ms", "p99_ms",
	"server_cpu_s", "cpu_s_per_1000_req", "peak_rss_bytes", "server_cores", "client_cpu_s", "client_cores",
	"upstream_cpu_s", "machine_cores", "other_cores", "wall_s", "body_bytes", "content_coding", "precompressed_copy", "tool_bytes",
	"failed",
}

// TSV renders rows as tab-separated values with a header line.
func TSV(rows []*Row) []byte {
	var b strings.Builder
	b.WriteString(strings.Join(TSVHeader, "\t") + "\n")
	for _, w := range rows {
		l := w.Load
		f := []string{
			w.Test.Name, string(w.Server), fmt.Sprint(w.Round), fmt.Sprint(w.Position), w.Start.UTC().Format(time.RFC3339),
			w.Test.Tool, w.Test.Protocol(), fmt.Sprintf("%.3f", l.Duration),
			fmt.Sprint(l.Requests), fmt.Sprint(l.Succeeded), fmt.Sprint(l.Non2xx), fmt.Sprint(l.Errors), fmt.Sprint(l.Timeouts),
			fmt.Sprintf("%.1f", l.RPS()), fmt.Sprintf("%.3f", l.P50), fmt.Sprintf("%.3f", l.P99),
			fmt.Sprintf("%.2f", w.ServerCPU), fmt.Sprintf("%.5f", w.CPUPer1000()), fmt.Sprint(w.PeakRSS),
			fmt.Sprintf("%.3f", w.ServerCores()), fmt.Sprintf("%.2f", l.ClientCPU), fmt.Sprintf("%.3f", w.ClientCores()),
			fmt.Sprintf("%.2f", w.UpstreamCPU), fmt.Sprintf("%.3f", w.MachineCores), fmt.Sprintf("%.3f", w.OtherCores()),
			fmt.Sprintf("%.3f", w.Wall), fmt.Sprint(w.Check.Bytes), w.Check.Coding, fmt.Sprint(w.Check.Copy), fmt.Sprint(l.Bytes),
			strings.ReplaceAll(w.Failed, "\t", " "),
		}
		b.WriteString(strings.Join(f, "\t") + "\n")
	}
	return []byte(b.String())
}

// ratio formats a/b as "1.23×", or "–" when either is missing.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func find(sums []*Summary, t *Test, s Server) *Summary {
	for _, sm := range sums {
		if sm.Test == t && sm.Server == s {
			return sm
		}
	}
	return nil
}

func measured(sm *Summary) bool { return sm != nil && sm.Skipped == "" && sm.Rounds > 0 }

func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func coding(c Check) string {
	if c.Coding == "" {
		return "identity"
	}
	if c.Copy {
		return c.Coding + " (copy)"
	}
	return c.Coding
}

// Markdown renders the summary tables of a run.
func Markdown(env *Env, o Options, servers []Server, tests []*Test, sums []*Summary, visits []Visit, notes []string) []byte {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Arka benchmark, %s\n\n", env.Date.Format("2006-01-02 15:04 UTC"))
	w("Machine: %s, %d cores, %d MB RAM, Linux %s. The servers and the load generators share these cores.\n", env.CPUModel, env.Cores, env.MemoryMB, env.Kernel)
	w("Load average (1, 5, 15 min) at the start: %s; at the end: %s.\n\n", env.LoadStart, env.LoadEnd)
	w("Method: %d connections, %d s per run, %d round(s) per test and server, the servers' order rotating from round to round; %d client threads; client timeout %v. ",
		o.Connections, int(o.Duration.Seconds()), o.Rounds, o.Threads, o.Timeout)
	w("Each figure is the median over the rounds (with two rounds, their mean); errors and timeouts are summed. ")
	w("php-fpm: one pool of %d static workers per server (php-a for Arka, php-b-<server> for the others).\n\n", o.PHPWorkers)
	w("Versions: ")
	var vs []string
	for _, k := range []string{"arka", "nginx", "apache", "caddy", "lighttpd", "php-fpm", "h2load", "wrk"} {
		if v := env.Versions[k]; v != "" {
			vs = append(vs, fmt.Sprintf("%s: `%s`", k, v))
		}
	}
	w("%s; Go %s", strings.Join(vs, "; "), env.GoVersion)
	if env.Commit != "" {
		w("; repository at `%s`", env.Commit)
	}
	w(".\n\n")
	if len(notes) > 0 {
		w("Notes:\n\n")
		for _, n := range notes {
			w("- %s\n", n)
		}
		w("\n")
	}

	if slices.Contains(servers, Arka) && slices.Contains(servers, Nginx) {
		b.WriteString(claimsMarkdown(tests, sums))
		b.WriteString("\n")
	}
	b.WriteString(visitorMarkdown(servers, visits))
	b.WriteString("\n")

	w("## Arka against nginx\n\n")
	w("Ratios above 1× mean more requests per second or more CPU per request than nginx.\n\n")
	w("| test | nginx req/s | Arka req/s | × nginx | CPU/req × nginx | nginx p99 ms | Arka p99 ms | errors + timeouts (nginx / Arka) |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range tests {
		a, n := find(sums, t, Arka), find(sums, t, Nginx)
		if a == nil || n == nil {
			continue
		}
		if !measured(a) {
			w("| %s | %s | skipped: %s | | | | | |\n", t.Name, rpsOrDash(n), a.Skipped)
			continue
		}
		if !measured(n) {
			continue
		}
		w("| %s | %.0f | %.0f | %s | %s | %s | %s | %d / %d |\n", t.Name, n.RPS, a.RPS, ratio(a.RPS, n.RPS),
			ratio(a.CPUPer1000, n.CPUPer1000), ms(n.P99), ms(a.P99), n.Errors+n.Timeouts, a.Errors+a.Timeouts)
	}

	if slices.ContainsFunc(tests, (*Test).PHP) {
		w("\n## PHP at saturation\n\n")
		w("%d connections against a pool of %d php-fpm workers. The FastCGI work's aim (issue 4): no timeouts, and p99 under three times p50. ", o.Connections, o.PHPWorkers)
		w("wrk leaves requests slower than the timeout out of its percentiles, so a run with timeouts has a p99 that looks better than it was.\n\n")
		w("| test | server | req/s | p50 ms | p99 ms | p99 / p50 | timeouts | errors | aim met |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n")
		for _, t := range tests {
			if !t.PHP() {
				continue
			}
			for _, s := range servers {
				sm := find(sums, t, s)
				if !measured(sm) {
					continue
				}
				ratio := 0.0
				if sm.P50 > 0 {
					ratio = sm.P99 / sm.P50
				}
				met := "yes"
				if sm.Timeouts > 0 || ratio >= 3 || sm.Errors > 0 {
					met = "no"
				}
				w("| %s | %s | %.0f | %s | %s | %.1f | %d | %d | %s |\n", t.Name, s, sm.RPS, ms(sm.P50), ms(sm.P99), ratio, sm.Timeouts, sm.Errors, met)
			}
		}
	}

	w("\n## Ratios to nginx, every server\n\n")
	w("Requests per second / CPU per request, each divided by nginx's.\n\n")
	w("| test |")
	var others []Server
	for _, s := range servers {
		if s != Nginx {
			others = append(others, s)
			w(" %s req/s | %s CPU/req |", s, s)
		}
	}
	w("\n|---|")
	for range others {
		w("---:|---:|")
	}
	w("\n")
	for _, t := range tests {
		n := find(sums, t, Nginx)
		w("| %s |", t.Name)
		for _, s := range others {
			sm := find(sums, t, s)
			if !measured(sm) || !measured(n) {
				w(" – | – |")
				continue
			}
			w(" %s | %s |", ratio(sm.RPS, n.RPS), ratio(sm.CPUPer1000, n.CPUPer1000))
		}
		w("\n")
	}

	w("\n")
	b.WriteString(rssMarkdown(servers, tests, sums))
	w("\n## Figures\n\n")
	w("CPU is the server's whole process tree (nginx and Apache workers; the php-fpm pool for PHP tests) from /proc, over the load generator's whole run. ")
	w("Peak RSS is the sum of each process's peak (VmHWM, reset before the run). ")
	w("Cores are CPU seconds per second of the run: the server's, the load generator's, and everything else on the machine (other programs, the proxy tests' upstream); ")
	w("when server + client reach the machine's %d cores, the load generator, not the server, may have set the pace.\n\n", env.Cores)
	w("| test | server | req/s | × nginx | p50 ms | p99 ms | errors | timeouts | CPU s/1000 req | × nginx | body bytes | coding | peak RSS MB | server cores | client cores | other cores |\n")
	w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n")
	for _, t := range tests {
		n := find(sums, t, Nginx)
		for _, s := range servers {
			sm := find(sums, t, s)
			if sm == nil {
				continue
			}
			if !measured(sm) {
				w("| %s | %s | skipped: %s |||||||||||||\n", t.Name, s, sm.Skipped)
				continue
			}
			rr, cr := "", ""
			if measured(n) {
				rr, cr = ratio(sm.RPS, n.RPS), ratio(sm.CPUPer1000, n.CPUPer1000)
			}
			w("| %s | %s | %.0f | %s | %s | %s | %d | %d | %.4f | %s | %d | %s | %.1f | %.2f | %.2f | %.2f |\n",
				t.Name, s, sm.RPS, rr, ms(sm.P50), ms(sm.P99), sm.Errors, sm.Timeouts, sm.CPUPer1000, cr,
				sm.Check.Bytes, coding(sm.Check), float64(sm.PeakRSS)/(1<<20), sm.ServerCores, sm.ClientCores, sm.OtherCores)
		}
	}
	w("\n## Tests\n\n| test | what | tool | URL path | Accept-Encoding |\n|---|---|---|---|---|\n")
	for _, t := range tests {
		ae := t.AcceptEncoding
		if t.NewConn {
			ae += " (Connection: close)"
		}
		w("| %s | %s | %s | `%s` | %s |\n", t.Name, t.Title, t.Tool, t.Path, ae)
	}
	w("\nh2load runs with `-m 1` (one request at a time per connection, as wrk), `-N` set to the client timeout, and `--log-file` for per-request times, from which p50 and p99 are computed (h2load prints only min, max, mean and sd). ")
	w("wrk runs with `--latency` and `--timeout`. ")
	w("For newconn-tls, wrk sends `Connection: close` and opens a new connection for each request, resuming the previous connection's TLS session where the server allows it: these are abbreviated handshakes, as returning visitors make.\n")
	w("\nRaw figures: `results.tsv` (one line per run); the load generators' own output: `raw/`; the configurations used: `configs/`; chart: `chart.svg`.\n")
	return []byte(b.String())
}

func rpsOrDash(sm *Summary) string {
	if !measured(sm) {
		return "–"
	}
	return fmt.Sprintf("%.0f", sm.RPS)
}

func (r *Run) report(ctx context.Context) error {
	r.env.LoadEnd = LoadAvg()
	sums := Summarize(r.rows, r.tests, r.servers, r.skips)
	files := map[string][]byte{
		"results.tsv": TSV(r.rows),
		"results.md":  Markdown(r.env, r.o, r.servers, r.tests, sums, r.visits, r.notes),
		"chart.svg":   Chart(r.servers, r.tests, sums, r.env),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(r.out, name), data, 0o644); err != nil {
			return err
		}
	}
	// results/latest points at the newest run.
	latest := filepath.Join(r.o.Results, "latest")
	if fi, err := os.Lstat(latest); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		os.Remove(latest)
	}
	_ = os.Symlink(filepath.Base(r.out), latest)
	r.say("  %s\n  %s\n  %s", filepath.Join(r.out, "results.md"), filepath.Join(r.out, "results.tsv"), filepath.Join(r.out, "chart.svg"))
	return nil
}
