package harness

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// serverColor gives each server one color in every chart.
var serverColor = map[Server]string{
	Arka:     "#d9480f",
	Nginx:    "#2b8a3e",
	Apache:   "#862e9c",
	Caddy:    "#1c7ed6",
	Lighttpd: "#868e96",
}

// Chart draws two panels side by side, one bar per server and test: CPU
// seconds per 1000 requests, and p99 latency. The axes are logarithmic
// (the tests span three orders of magnitude), each bar is labeled with its
// value, and lower is better in both.
func Chart(servers []Server, tests []*Test, sums []*Summary, env *Env) []byte {
	const (
		labelW = 190
		panelW = 400
		gapW   = 40
		barH   = 10
		grpGap = 10
		top    = 78
	)
	n := len(servers)
	grpH := n*barH + grpGap
	height := top + len(tests)*grpH + 40
	width := labelW + 2*panelW + gapW + 20
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="11">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="#fff"/>` + "\n")
	w(`<text x="10" y="20" font-size="15" font-weight="bold">Arka benchmark: CPU per request and p99 latency (lower is better; logarithmic scales)</text>` + "\n")
	w(`<text x="10" y="38" fill="#444">%s · %s, %d cores · %s</text>`+"\n", env.Date.Format("2006-01-02"), html.EscapeString(env.CPUModel), env.Cores, "median over rounds")
	// Legend.
	x := 10
	for _, s := range servers {
		w(`<rect x="%d" y="48" width="12" height="12" fill="%s"/><text x="%d" y="58">%s</text>`+"\n", x, serverColor[s], x+16, s)
		x += 24 + 7*len(s) + 10
	}
	panels := []struct {
		title string
		val   func(*Summary) float64
		unit  string
	}{
		{"CPU seconds per 1000 requests (server + php-fpm)", func(s *Summary) float64 { return s.CPUPer1000 }, "s"},
		{"p99 latency, ms", func(s *Summary) float64 { return s.P99 }, "ms"},
	}
	for pi, p := range panels {
		x0 := labelW + pi*(panelW+gapW)
		lo, hi := math.Inf(1), 0.0
		for _, sm := range sums {
			if v := p.val(sm); measured(sm) && v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if hi == 0 {
			continue
		}
		// One step below the smallest value, so that its bar shows.
		dlo, dhi := math.Floor(math.Log10(lo/2)), math.Ceil(math.Log10(hi))
		if dhi <= dlo {
			dhi = dlo + 1
		}
		scale := func(v float64) float64 { return (math.Log10(v) - dlo) / (dhi - dlo) * float64(panelW-60) }
		w(`<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0, top-8, p.title)
		for d := dlo; d <= dhi; d++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, d)
				if math.Log10(v) > dhi+1e-9 {
					break
				}
				gx := float64(x0) + scale(v)
				col := "#eee"
				if m == 1 {
					col = "#ccc"
					w(`<text x="%.1f" y="%d" text-anchor="middle" fill="#666">%s</text>`+"\n", gx, height-22, tick(v))
				}
				w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", gx, top, gx, height-34, col)
			}
		}
		for ti, t := range tests {
			y0 := top + ti*grpH
			if pi == 0 {
				w(`<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-8, y0+n*barH/2+4, html.EscapeString(t.Name))
			}
			for si, s := range servers {
				y := y0 + si*barH
				sm := find(sums, t, s)
				if !measured(sm) {
					if sm != nil && sm.Skipped != "" {
						w(`<text x="%d" y="%d" fill="#999" font-size="9">%s: skipped</text>`+"\n", x0+2, y+barH-2, s)
					}
					continue
				}
				v := p.val(sm)
				if v <= 0 {
					continue
				}
				bw := math.Max(1, scale(v))
				w(`<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %s %s</title></rect>`+"\n",
					x0, y, bw, barH-1, serverColor[s], s, t.Name, num(v), p.unit)
				w(`<text x="%.1f" y="%d" font-size="9" fill="#333">%s</text>`+"\n", float64(x0)+bw+3, y+barH-2, num(v))
			}
		}
	}
	w("</svg>\n")
	return []byte(b.String())
}

func tick(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%g", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", v), "0"), ".")
}

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
