// Command arkabench runs the benchmark published with Arka against nginx,
// Apache, Caddy and lighttpd: the same files, the same certificate, each
// server set up as a speed-minded administrator would, in alternating
// rounds. It installs nothing: it says what is missing and skips it.
//
//	arkabench [flags]                 full run (make bench)
//	arkabench -quick [flags]          one short round (make bench-quick)
//	arkabench -list                   list the tests
//
// Results go to tests/bench/results/<UTC time>/: results.md (tables, ratios
// to nginx), results.tsv (one line per run), chart.svg, raw/ (the load
// generators' output) and configs/ (every configuration used).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/arkaweb/arka/tests/bench/harness"
)

func main() {
	os.Exit(run())
}

func run() int {
	fl := flag.NewFlagSet("arkabench", flag.ContinueOnError)
	servers := fl.String("servers", "all", "comma-separated servers: arka, nginx, apache, caddy, lighttpd (or all)")
	tests := fl.String("tests", "all", "comma-separated tests or groups: all, static, proxy, php, a name, or a prefix* (see -list)")
	duration := fl.Duration("duration", 10*time.Second, "duration of each timed run (whole seconds)")
	rounds := fl.Int("rounds", 3, "rounds per test (the median is reported); each round runs every server once, in rotating order")
	conns := fl.Int("connections", 64, "concurrent connections")
	threads := fl.Int("threads", min(runtime.NumCPU(), 8), "load generator threads (h2load -t, wrk -t); default: the number of cores, at most 8")
	warmup := fl.Duration("warmup", time.Second, "untimed run per test and server before the first round (0 for none)")
	pause := fl.Duration("pause", 500*time.Millisecond, "pause before each run")
	timeout := fl.Duration("timeout", 2*time.Second, "client timeout: slower requests are counted as timeouts")
	php := fl.Int("php-workers", 32, "static php-fpm workers in each pool (php-a: Arka, php-b: the others)")
	arka := fl.String("arka", "", "arka binary (default: go build ./cmd/arka into the work directory)")
	results := fl.String("results", "tests/bench/results", "results root; each run writes a subdirectory")
	name := fl.String("name", "", "name of the run's results directory (default: UTC time stamp)")
	keep := fl.Bool("keep", false, "keep the temporary work directory (files, configurations, server logs)")
	quick := fl.Bool("quick", false, "quick check: 1 round of 1 s per test and server, no warm-up (flags given explicitly still apply)")
	list := fl.Bool("list", false, "list the tests and exit")
	upstream := fl.String("upstream", "", "internal: serve the proxy tests' upstream on this address")
	if err := fl.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *upstream != "" {
		if err := harness.ServeUpstream(*upstream); err != nil {
			fmt.Fprintln(os.Stderr, "arkabench upstream:", err)
			return 1
		}
		return 0
	}
	if *list {
		for _, t := range harness.AllTests {
			fmt.Printf("%-17s %-7s %s\n", t.Name, t.Tool, t.Title)
		}
		return 0
	}
	if *quick {
		set := map[string]bool{}
		fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["rounds"] {
			*rounds = 1
		}
		if !set["duration"] {
			*duration = time.Second
		}
		if !set["warmup"] {
			*warmup = 0
		}
		if !set["pause"] {
			*pause = 200 * time.Millisecond
		}
	}
	sv, err := harness.ParseServers(split(*servers))
	if err != nil {
		fmt.Fprintln(os.Stderr, "arkabench:", err)
		return 2
	}
	ts, err := harness.SelectTests(split(*tests))
	if err != nil {
		fmt.Fprintln(os.Stderr, "arkabench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	out, err := harness.Execute(ctx, harness.Options{
		Servers: sv, Tests: ts, Rounds: *rounds, Duration: *duration, Warmup: *warmup, Pause: *pause,
		Connections: *conns, Threads: *threads, Timeout: *timeout, PHPWorkers: *php,
		Arka: *arka, Results: *results, Name: *name, Keep: *keep, Log: os.Stdout,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "arkabench:", err)
		return 1
	}
	fmt.Printf("done in %v: %s\n", time.Since(start).Round(time.Second), out)
	return 0
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
