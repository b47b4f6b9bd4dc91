package harness

import (
	"fmt"
	"strings"
)

// Claim is one statement of the seed's performance page (its summary, "In
// short", detailed under "Against nginx") as goals against nginx, checked
// on the tests that measure it.
type Claim struct {
	Seed  string   // the claim, as the seed words it
	Tests []string // tests measuring it
	// Goals, as ratios to nginx's figure; 0 means the seed claims nothing.
	MinRPS float64 // Arka's requests per second / nginx's, at least
	MaxCPU float64 // Arka's CPU per request / nginx's, at most
	// PHPAim adds the FastCGI aim: no timeouts, p99 under 3 × p50.
	PHPAim bool
}

// SeedClaims are the seed's claims against nginx (see
// ../shared/seeds/000_*.txt: "In short" and "Against nginx"). "The same
// speed" is read as at least nginx's requests per second.
var SeedClaims = []Claim{
	{Seed: "static: same speed, 32% less CPU for a small page", Tests: []string{"small-h2", "small-h1"}, MinRPS: 1, MaxCPU: 0.68},
	{Seed: "static: same speed, 27% less CPU for the page compressed", Tests: []string{"small-br-h2", "small-br-h1"}, MinRPS: 1, MaxCPU: 0.73},
	{Seed: "static: same speed, 42% less CPU for the compressed script", Tests: []string{"script-br-h2"}, MinRPS: 1, MaxCPU: 0.58},
	{Seed: "static: same speed, 37% less CPU for a 1 MB file", Tests: []string{"1mb-h2"}, MinRPS: 1, MaxCPU: 0.63},
	{Seed: "new HTTPS connection per request: nginx ~5% more requests, Arka 43% less CPU", Tests: []string{"newconn-tls"}, MinRPS: 0.95, MaxCPU: 0.57},
	{Seed: "proxy over HTTPS, small answers: 3% faster, 10% less CPU", Tests: []string{"proxy-small-tls"}, MinRPS: 1.03, MaxCPU: 0.90},
	{Seed: "proxy over HTTPS, 30 KB pages: 10% faster, 26% less CPU", Tests: []string{"proxy-30k-tls"}, MinRPS: 1.10, MaxCPU: 0.74},
	{Seed: "proxy over HTTP/2: 10% faster, about the same CPU", Tests: []string{"proxy-30k-h2"}, MinRPS: 1.10, MaxCPU: 1.00},
	{Seed: "proxy without HTTPS: nginx 5% faster with 8% less CPU", Tests: []string{"proxy-small-http", "proxy-30k-http"}, MinRPS: 0.95, MaxCPU: 1.09},
	{Seed: "PHP, kept php-fpm connections: same speed, 9% less CPU, none failed", Tests: []string{"php-tiny", "php-page"}, MinRPS: 1, MaxCPU: 0.91, PHPAim: true},
	{Seed: "PHP page compressed for browsers: 15% faster, 62% less CPU", Tests: []string{"php-page-br"}, MinRPS: 1.15, MaxCPU: 0.38, PHPAim: true},
}

// claimsMarkdown renders "seed claim / measured here": for every claim and
// test, the goal and what this run measured against nginx, and whether the
// goal was met.
func claimsMarkdown(tests []*Test, sums []*Summary) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Seed claim / measured here\n\n")
	w("Every claim of the seed's summary against nginx, as goals (ratios to nginx: req/s at least, CPU per request at most) and this run's medians. ")
	w("PHP claims add the FastCGI aim: no timeouts, p99 under 3 × p50. Tests not run here are left out.\n\n")
	w("| seed claim | test | req/s × nginx: goal | measured | CPU/req × nginx: goal | measured | met |\n")
	w("|---|---|---:|---:|---:|---:|---|\n")
	byName := map[string]*Test{}
	for _, t := range tests {
		byName[t.Name] = t
	}
	for _, c := range SeedClaims {
		for _, name := range c.Tests {
			t := byName[name]
			if t == nil {
				continue
			}
			a, n := find(sums, t, Arka), find(sums, t, Nginx)
			if !measured(a) || !measured(n) {
				w("| %s | %s | %s | – | %s | – | not measured |\n", c.Seed, name, goal("≥", c.MinRPS), goal("≤", c.MaxCPU))
				continue
			}
			rps, cpu := a.RPS/n.RPS, 0.0
			if n.CPUPer1000 > 0 {
				cpu = a.CPUPer1000 / n.CPUPer1000
			}
			var missed []string
			if c.MinRPS > 0 && rps < c.MinRPS {
				missed = append(missed, "req/s")
			}
			if c.MaxCPU > 0 && (cpu == 0 || cpu > c.MaxCPU) {
				missed = append(missed, "CPU")
			}
			if c.PHPAim && (a.Timeouts > 0 || a.P50 <= 0 || a.P99 >= 3*a.P50) {
				missed = append(missed, fmt.Sprintf("p99/p50 %.1f, %d timeouts", a.P99/max(a.P50, 1e-9), a.Timeouts))
			}
			met := "yes"
			if len(missed) > 0 {
				met = "no: " + strings.Join(missed, ", ")
			}
			w("| %s | %s | %s | %.2f× | %s | %.2f× | %s |\n", c.Seed, name, goal("≥", c.MinRPS), rps, goal("≤", c.MaxCPU), cpu, met)
		}
	}
	return b.String()
}

func goal(op string, v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%s %.2f×", op, v)
}

// rssMarkdown renders the peak RSS of every server in every test (the
// largest over the rounds), with Arka's ratio to nginx's and the issue's
// aim for static and proxy tests (at most 1.5 × nginx's).
func rssMarkdown(servers []Server, tests []*Test, sums []*Summary) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Peak memory\n\n")
	w("Peak RSS in MB per test: the sum of each process's peak (VmHWM, reset before each run), the largest over the rounds; PHP tests include the php-fpm pool. ")
	w("The aim for Arka on static and proxy tests: at most 1.5 × nginx's. ")
	w("The servers run through all tests, so a peak can include memory a server freed in the test before and has not yet returned to the system (Go returns it over some seconds).\n\n| test |")
	for _, s := range servers {
		w(" %s |", s)
	}
	w(" Arka × nginx |\n|---|")
	for range servers {
		w("---:|")
	}
	w("---:|\n")
	for _, t := range tests {
		w("| %s |", t.Name)
		for _, s := range servers {
			if sm := find(sums, t, s); measured(sm) {
				w(" %.1f |", float64(sm.PeakRSS)/(1<<20))
			} else {
				w(" – |")
			}
		}
		a, n := find(sums, t, Arka), find(sums, t, Nginx)
		if measured(a) && measured(n) && n.PeakRSS > 0 {
			r := float64(a.PeakRSS) / float64(n.PeakRSS)
			mark := ""
			if !t.PHP() && r > 1.5 {
				mark = " (over 1.5×)"
			}
			w(" %.2f×%s |", r, mark)
		} else {
			w(" – |")
		}
		w("\n")
	}
	return b.String()
}

// visitorMarkdown renders the one-visitor latencies beside the seed's.
func visitorMarkdown(servers []Server, visits []Visit) string {
	if len(visits) == 0 {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## One visitor\n\n")
	w("The seed's \"What a visitor notices\": one HTTP/2 connection over TLS, requests one after another with a browser's Accept-Encoding, Go's client; median (p90) in ms.\n\n")
	w("| request | seed |")
	for _, s := range servers {
		w(" %s |", s)
	}
	w("\n|---|---|")
	for range servers {
		w("---:|")
	}
	w("\n")
	for _, p := range VisitorPages {
		var row []string
		found := false
		for _, s := range servers {
			cell := "–"
			for _, v := range visits {
				if v.Server == s && v.Page.Path == p.Path {
					found = true
					if v.Err != "" {
						cell = "failed"
					} else {
						cell = fmt.Sprintf("%.3f (%.3f)", v.P50, v.P90)
						if v.Coding != "" {
							cell += " " + v.Coding
						}
					}
				}
			}
			row = append(row, cell)
		}
		if found {
			w("| %s | %s | %s |\n", p.Name, p.Seed, strings.Join(row, " | "))
		}
	}
	return b.String()
}
