package status

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/board/led"
)

// maxPageBytes bounds the HTML page (uncompressed), whatever the snapshot
// holds: the route table and the conditions are cut to fit. It is no
// protocol limit but a budget with a reason: a fresh TCP connection's
// initial window (RFC 6928: 10 segments, about 14.6 KB) then carries the
// page with its response headers and TLS framing in one round trip, which
// is what makes it quick on a Pi Zero 2 W on Wi-Fi; the page reloads
// every 10 s while open.
const maxPageBytes = 10 << 10

// maxRouteRows bounds the route table so the page stays under maxPageBytes;
// JSON and Prometheus carry every route.
const maxRouteRows = 12

// sparkWidth is the number of points drawn: the 360 samples are averaged in
// buckets of 3 (30 s each), which keeps an hour under 1 KB of SVG per chart.
const sparkWidth = 120

// sparkline draws vals (oldest first, nil = missing) as an inline SVG path.
// mark, when in range, is drawn as a dashed horizontal line (the thermal limit).
func sparkline(vals []*float64, floorSpan float64, mark *float64, color string) template.HTML {
	const h = 28
	n := len(vals)
	if n == 0 {
		return template.HTML(`<svg class="sp" viewBox="0 0 120 28" aria-hidden="true"></svg>`)
	}
	per := max(1, (HistoryLen+sparkWidth-1)/sparkWidth)
	pts := make([]float64, 0, sparkWidth)
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < n; i += per {
		sum, cnt := 0.0, 0
		for j := i; j < min(i+per, n); j++ {
			if vals[j] != nil {
				sum += *vals[j]
				cnt++
			}
		}
		v := math.NaN()
		if cnt > 0 {
			v = sum / float64(cnt)
			lo, hi = min(lo, v), max(hi, v)
		}
		pts = append(pts, v)
	}
	if math.IsInf(lo, 1) {
		return template.HTML(`<svg class="sp" viewBox="0 0 120 28" aria-hidden="true"></svg>`)
	}
	if mark != nil && *mark > lo && *mark < hi+floorSpan {
		hi = max(hi, *mark)
	}
	if hi-lo < floorSpan {
		mid := (hi + lo) / 2
		lo, hi = mid-floorSpan/2, mid+floorSpan/2
		if lo < 0 && mid >= 0 {
			lo, hi = 0, floorSpan
		}
	}
	y := func(v float64) int { return int(math.Round(h - 2 - (v-lo)/(hi-lo)*(h-4))) }
	// The points there are span the whole width (in the first hour there
	// are fewer than sparkWidth; drawn one unit apart they would be a
	// sliver at the right edge); the newest is at the right edge.
	step := 0.0
	if len(pts) > 1 {
		step = float64(sparkWidth) / float64(len(pts)-1)
	}
	x := func(i int) float64 {
		if len(pts) == 1 {
			return sparkWidth
		}
		return float64(i) * step
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="sp" viewBox="0 0 %d %d" preserveAspectRatio="none" aria-hidden="true">`, sparkWidth, h)
	if mark != nil && *mark >= lo && *mark <= hi {
		fmt.Fprintf(&sb, `<path d="M0 %dH%d" stroke="#d33" stroke-dasharray="2 2" stroke-width=".6"/>`, y(*mark), sparkWidth)
	}
	sb.WriteString(`<path fill="none" stroke="` + color + `" stroke-width="1.2" vector-effect="non-scaling-stroke" d="`)
	// An absolute moveto starts each run of points, then one relative
	// lineto with every step as "dx dy" (a minus sign separates by
	// itself): about 4 bytes a point instead of 6 for "L57 17", which
	// keeps the three charts at about 1.5 KB of the page's budget.
	pen, run := false, 0 // run: points drawn since the last moveto
	px, py := 0, 0
	for i, v := range pts {
		if math.IsNaN(v) {
			pen = false
			continue
		}
		cx, cy := int(math.Round(x(i))), y(v)
		if !pen {
			fmt.Fprintf(&sb, "M%d %d", cx, cy)
			pen, run, px, py = true, 0, cx, cy
			continue
		}
		if run == 0 {
			sb.WriteByte('l')
		} else {
			sb.WriteByte(' ')
		}
		sb.WriteString(strconv.Itoa(cx - px))
		if cy >= py {
			sb.WriteByte(' ')
		}
		sb.WriteString(strconv.Itoa(cy - py))
		run, px, py = run+1, cx, cy
	}
	sb.WriteString(`"/></svg>`)
	return template.HTML(sb.String())
}

func since(d time.Duration) string {
	d = d.Round(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	if days > 0 {
		return fmt.Sprintf("%dd %dh", days, d/time.Hour)
	}
	if d >= time.Hour {
		return fmt.Sprintf("%dh %dm", d/time.Hour, (d%time.Hour)/time.Minute)
	}
	return fmt.Sprintf("%dm %ds", d/time.Minute, (d%time.Minute)/time.Second)
}

func ms(sec float64) string {
	switch {
	case sec <= 0:
		return "–"
	case sec < 0.001:
		return fmt.Sprintf("%.0f µs", sec*1e6)
	case sec < 1:
		return fmt.Sprintf("%.1f ms", sec*1e3)
	}
	return fmt.Sprintf("%.2f s", sec)
}

var funcs = template.FuncMap{
	"bytes":  func(v any) string { return formatAnyBytes(v) },
	"since":  since,
	"ms":     ms,
	"pct":    func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"f1":     func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"f2":     func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"conds":  conds,
	"ghz":    func(hz uint64) string { return fmt.Sprintf("%.2f GHz", float64(hz)/1e9) },
	"frac":   func(a, b int64) string { return fmt.Sprintf("%.0f", 100*float64(a)/float64(max(b, 1))) },
	"flags":  func(t board.Throttle) string { return strings.Join(t.Flags(), ", ") },
	"sub":    func(a, b time.Time) time.Duration { return a.Sub(b) },
	"spTemp": func(v *HistoryView, limit float64) template.HTML { return sparkline(v.TempC, 10, &limit, "#e07020") },
	"spLoad": func(v *HistoryView) template.HTML { return sparkline(v.Load1, 1, nil, "#3070d0") },
	"spReq":  func(v *HistoryView) template.HTML { return sparkline(v.ReqPerSec, 1, nil, "#20a060") },
	"routes": func(r []RouteStats) []RouteStats { return r[:min(len(r), maxRouteRows)] },
	"more":   func(r []RouteStats) int { return max(0, len(r)-maxRouteRows) },
}

func formatAnyBytes(v any) string {
	switch n := v.(type) {
	case int64:
		return board.FormatBytes(n)
	case uint64:
		return board.FormatBytes(n)
	case *uint64:
		if n == nil {
			return "–"
		}
		return board.FormatBytes(*n)
	case int:
		return board.FormatBytes(n)
	}
	return "?"
}

// conds keeps the page small: at most 3 conditions, messages cut at 200
// bytes (?format=json has them all, whole).
func conds(cs []led.Condition) []led.Condition {
	out := make([]led.Condition, 0, min(len(cs), 3))
	for _, c := range cs[:min(len(cs), 3)] {
		if len(c.Message) > 200 {
			c.Message = strings.ToValidUTF8(c.Message[:200], "") + "…"
		}
		out = append(out, c)
	}
	return out
}

// The page: no scripts, no external assets; a meta refresh reloads it.
var page = template.Must(template.New("status").Funcs(funcs).Parse(strings.TrimSpace(`
<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>Arka · {{.S.Board.Model}}</title>
<style>
:root{--bg:#f6f7f9;--fg:#1b1f24;--mu:#667;--cd:#fff;--ln:#e3e6ea}
@media(prefers-color-scheme:dark){:root{--bg:#15181c;--fg:#e6e8eb;--mu:#99a;--cd:#1e2227;--ln:#2c3138}}
*{box-sizing:border-box}body{margin:0;padding:12px;font:14px/1.4 system-ui,sans-serif;background:var(--bg);color:var(--fg)}
h1{font-size:18px;margin:0}h2{font-size:13px;margin:0 0 6px;color:var(--mu);text-transform:uppercase;letter-spacing:.04em}
.mu{color:var(--mu)}.g{display:grid;gap:10px;grid-template-columns:repeat(auto-fit,minmax(210px,1fr));margin:10px 0}
.c{background:var(--cd);border:1px solid var(--ln);border-radius:8px;padding:10px;overflow-x:auto}
.v{font-size:24px;font-weight:600}.sp{width:100%;height:34px;display:block;margin-top:4px}
.hot{background:#c0392b;color:#fff;padding:8px 10px;border-radius:8px;margin-top:10px}.busy{background:#3070d0}
.warn{color:#c0392b}.ok{color:#1e9e5a}table{border-collapse:collapse;width:100%;font-size:13px}
td,th{padding:3px 6px;border-bottom:1px solid var(--ln);text-align:right;white-space:nowrap}td:first-child,th:first-child{text-align:left}
.bar{height:6px;background:var(--ln);border-radius:3px}.bar i{display:block;height:6px;background:#3070d0;border-radius:3px}
.w{grid-template-columns:repeat(auto-fit,minmax(min(100%,400px),1fr))}
.sc{overflow-x:auto}
@media(max-width:700px){.sc::before{content:"scroll sideways for more →";color:var(--mu)}}
</style></head><body>
{{with .S}}<h1>{{.Board.Model}}</h1>
<div class="mu">Arka {{.Version}} · {{.Board.Kind}}{{if .Board.SoC}} · {{.Board.SoC}}{{end}} · {{.Board.Cores}} cores · {{bytes .Board.RAMBytes}} · up {{since (sub .Time .StartedAt)}} · <b>{{.State.State}}</b>{{with .State.LED}} (LED {{.}}){{end}}</div>
{{if .State.Conditions}}<div class="hot{{if eq .State.State.String "updating" "booting"}} busy{{end}}">{{range conds .State.Conditions}}<div><b>{{.State}}</b> · {{.Name}}: {{.Message}}</div>{{end}}{{if gt (len .State.Conditions) 3}}<div>{{len .State.Conditions}} in all: ?format=json</div>{{end}}</div>{{end}}
{{if .Problems}}<div class="hot"><b>{{if eq .Serving "last-good"}}Serving the last configuration that loaded{{else if eq .Serving "partial"}}Site files with mistakes: serving the others{{else if eq .Serving "fallback"}}No configuration loaded: serving the fallback page{{else}}Problems{{end}}</b>{{range .Problems}}<div><code>{{.}}</code></div>{{end}}</div>{{end}}
{{if .Thermal.Hot}}<div class="hot">Too hot: optional CPU work is paused (no on-the-fly brotli, lower compression levels) until {{f1 .Thermal.ResumeC}} °C.</div>{{end}}
<div class="g">
<div class="c"><h2>Temperature</h2><div class="v">{{with .Sensors.TempC}}{{f1 .}} °C{{else}}<span class="mu">n/a</span>{{end}}</div>
<div class="mu">limit {{f1 .Thermal.LimitC}} °C{{with .Sensors.CPUFreqHz}} · {{ghz .}}{{end}}</div>
{{with .Fan}}<div>fan {{.Pin}} {{if .Running}}<b>running</b>{{else}}stopped{{end}} <span class="mu">(on {{f1 .OnC}}, off {{f1 .OffC}} °C)</span>{{with .Error}} <span class="warn">{{.}}</span>{{end}}</div>{{end}}
{{range .Sensors.Fans}}<div>fan {{.Type}} {{.Level}}/{{.MaxLevel}}{{with .RPM}} · {{.}} rpm{{end}}</div>{{end}}
{{with .Sensors.Throttled}}{{if .Flags}}<div class="warn">{{flags .}}</div>{{else}}<div class="ok">no throttling, power OK</div>{{end}}{{end}}
{{with .History}}{{spTemp . $.S.Thermal.LimitC}}{{end}}</div>
<div class="c"><h2>Load</h2><div class="v">{{with .Sensors.Load}}{{f2 .Load1}}{{else}}<span class="mu">n/a</span>{{end}}</div>
<div class="mu">of {{.Board.Cores}} cores{{with .Sensors.Load}} · {{f2 .Load5}} · {{f2 .Load15}} (5, 15 min){{end}}</div>{{with .History}}{{spLoad .}}{{end}}</div>
<div class="c"><h2>Requests</h2><div class="v">{{f1 .TotalPerSecond}}/s</div><div class="mu">{{.TotalRequests}} total</div>{{with .History}}{{spReq .}}{{end}}</div>
<div class="c"><h2>Memory</h2><div class="v">{{bytes .Memory.RSSBytes}}</div><div class="mu">arka in RAM (RSS) · Go heap {{bytes .Memory.HeapAllocBytes}} (address space) · limit {{bytes .Memory.LimitBytes}}</div>
<div class="mu">system {{bytes .Sensors.MemAvail}} free of {{bytes .Sensors.MemTotal}}{{with .Sensors.DiskFree}} · disk {{bytes .}} free{{end}}</div></div>
</div>
{{with .Appliance}}<div class="g w"><div class="c"><h2>Appliance {{.Hostname}}</h2><table>
<tr><td>Site</td><td>{{with .Deploy}}{{if .Generation}}generation {{.Generation}}, deployed {{.Deployed.UTC.Format "2006-01-02 15:04"}} UTC from {{.From}}, {{.Files}} files, {{bytes .Bytes}}{{if .Previous}} · rollback to {{.Previous}}{{end}}{{else}}baked into the image{{end}}{{end}}</td></tr>
{{with .Deploy.LastError}}<tr><td>Last deploy</td><td class="warn" style="white-space:normal">{{.}} <span class="mu">({{$.S.Appliance.Deploy.LastErrorAt.UTC.Format "2006-01-02 15:04"}} UTC; the site above kept serving)</span></td></tr>{{end}}
<tr><td>Settings</td><td style="white-space:normal">{{with .Settings}}{{if not .Found}}no settings.txt: defaults{{else if .Errors}}<span class="warn">{{len .Errors}} mistake(s), those settings keep their defaults:</span>{{range .Errors}}<br><code>{{.}}</code>{{end}}{{else}}<span class="ok">settings.txt OK</span>{{end}}{{if .Restored}} · kept this device's own across an update{{end}}{{end}}</td></tr>
<tr><td>Wi-Fi</td><td style="white-space:normal">{{.Settings.WiFi}}{{with .WiFi}}{{with .SignalDBm}} · signal {{f1 .}} dBm{{end}}{{range .Addresses}} · {{.}}{{end}}{{end}}</td></tr>
</table></div></div>{{end}}
{{if .Routes}}<div class="c"><h2>Routes</h2><div class="sc"><table><tr><th>Site · route</th><th>req/s</th><th>total</th><th>2xx</th><th>3xx</th><th>4xx</th><th>5xx</th><th>p50</th><th>p99</th></tr>
{{range routes .Routes}}<tr><td>{{.Site}} <b>{{.Route}}</b> <span class="mu">{{.Handler}}</span></td><td>{{f1 .PerSecond}}</td><td>{{.Requests}}</td><td>{{index .Status 1}}</td><td>{{index .Status 2}}</td><td>{{index .Status 3}}</td><td{{if index .Status 4}} class="warn"{{end}}>{{index .Status 4}}</td><td>{{ms .P50Seconds}}</td><td>{{ms .P99Seconds}}</td></tr>
{{end}}</table></div>{{with more .Routes}}<div class="mu">{{.}} more routes in ?format=json</div>{{end}}</div>{{end}}
<div class="g w">
{{if .Caches}}<div class="c"><h2>Caches</h2><table><tr><th>Cache</th><th>entries</th><th>bytes / budget</th><th>hits</th></tr>
{{range .Caches}}<tr><td>{{.Name}}</td><td>{{.Entries}}</td><td>{{bytes .Bytes}} / {{bytes .BudgetBytes}}<div class="bar"><i style="width:{{frac .Bytes .BudgetBytes}}%"></i></div></td><td>{{pct .HitRatio}}</td></tr>
{{end}}</table></div>{{end}}
{{if .FastCGI}}<div class="c"><h2>FastCGI</h2><table><tr><th>Pool</th><th>busy</th><th>idle</th><th>queued</th><th>rejected</th></tr>
{{range .FastCGI}}<tr><td>{{.Address}}</td><td>{{.Busy}}/{{.MaxConns}}</td><td>{{.Idle}}</td><td>{{.Queued}}/{{.QueueSize}}</td><td{{if .Rejected}} class="warn"{{end}}>{{.Rejected}}</td></tr>
{{end}}</table></div>{{end}}
{{if .Upstreams}}<div class="c"><h2>Upstreams</h2><table><tr><th>Upstream</th><th>health</th><th>active</th><th>fail</th></tr>
{{range .Upstreams}}<tr><td>{{.Address}}</td><td>{{if .Healthy}}<span class="ok">up</span>{{else}}<span class="warn">down</span>{{end}}</td><td>{{.ActiveConns}}</td><td>{{.Failures}}</td></tr>
{{end}}</table></div>{{end}}
{{if .ClockWaiting}}<div class="hot">The system clock is not synchronised yet: no certificate is ordered or judged until NTP sets it.</div>{{end}}
{{if .Certificates}}<div class="c"><h2>Certificates</h2><table><tr><th>Name</th><th>state</th><th>issuer</th><th>valid until</th><th>next attempt</th></tr>
{{range .Certificates}}<tr><td>{{.Name}}</td><td>{{if eq .State "valid"}}<span class="ok">valid</span>{{else}}<span class="warn">{{.State}}</span>{{end}}</td><td>{{.Issuer}}</td><td>{{if not .NotAfter.IsZero}}{{.NotAfter.UTC.Format "2006-01-02 15:04"}}{{end}}</td><td>{{if not .NextAttempt.IsZero}}{{.NextAttempt.UTC.Format "2006-01-02 15:04"}}{{end}}</td></tr>
{{if .LastError}}<tr><td colspan="5" class="warn" style="text-align:left;white-space:normal">{{.LastError}}</td></tr>{{end}}{{end}}</table></div>{{end}}
{{if .PHPFPM}}<div class="c"><h2>php-fpm</h2><table><tr><th>Pool</th><th>active</th><th>idle</th><th>queue</th><th>max hit</th><th>slow</th></tr>
{{range .PHPFPM}}<tr><td>{{.Pool}}</td><td>{{.ActiveProcesses}}/{{.MaxChildren}}</td><td>{{.IdleProcesses}}</td><td>{{.ListenQueue}}</td><td>{{.MaxChildrenReached}}</td><td>{{.SlowRequests}}</td></tr>
{{end}}</table></div>{{end}}
</div>
<div class="mu">{{.Time.UTC.Format "2006-01-02 15:04:05"}} UTC · <a href="?format=json">JSON</a> · <a href="?format=prometheus">Prometheus</a></div>{{end}}
</body></html>
`)))

func renderHTML(w io.Writer, s *Snapshot, refresh int) error {
	return page.Execute(w, struct {
		S       *Snapshot
		Refresh int
	}{s, refresh})
}
