package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Load is what one run of a load generator measured.
type Load struct {
	Duration  float64 // seconds of measurement, as the tool reports it
	Requests  int64   // responses received, any status
	Succeeded int64   // 2xx and 3xx responses
	Non2xx    int64   // 4xx and 5xx responses
	// Errors are failed requests and connections: h2load's "failed" and
	// "errored" (timeouts excluded), wrk's connect, read and write errors.
	Errors int64
	// Timeouts are requests that took longer than the client timeout. See
	// LoadOptions.Timeout for how each tool counts them.
	Timeouts int64
	P50, P99 float64 // milliseconds
	// Bytes is the traffic the tool read: h2load's body ("data") bytes,
	// wrk's total (headers included, from its rounded "MB read").
	Bytes     int64
	ClientCPU float64 // seconds of CPU the load generator used (rusage)
	Output    string  // the tool's own output, kept with the results
}

// RPS is successful responses per second.
func (l *Load) RPS() float64 {
	if l.Duration <= 0 {
		return 0
	}
	return float64(l.Succeeded) / l.Duration
}

// LoadOptions configure a load generator run.
type LoadOptions struct {
	URL            string
	Connections    int
	Threads        int
	Duration       time.Duration // whole seconds; at least 1 s
	AcceptEncoding string
	NewConn        bool
	// Timeout is the client timeout (the seed used 2 s). wrk: --timeout;
	// a response slower than this is counted in its "timeout" errors and
	// left out of its latency percentiles, and wrk also counts, every 2 s,
	// each connection whose request has been waiting longer. h2load has no
	// per-request timeout: the harness counts requests whose time in
	// h2load's --log-file exceeds Timeout, plus h2load's own "timeout"
	// count (connections closed by -T/-N, unused here).
	Timeout time.Duration
	LogDir  string // where h2load writes its per-request log (deleted after)
}

func seconds(d time.Duration) int {
	return max(1, int(math.Round(d.Seconds())))
}

// H2loadArgs are the arguments of an h2load run: HTTP/2 over TLS, one
// stream at a time per connection (-m 1), so that 64 connections mean 64
// requests in flight, as with wrk. -N (connection inactivity timeout) is
// the client timeout: with one stream per connection, a connection idle
// that long is a request waiting that long; h2load closes it and counts a
// timeout. Without it, h2load can wait forever at the end of a run for a
// server that does not close its connections (seen with lighttpd 1.4.69).
func H2loadArgs(o LoadOptions, logFile string) []string {
	a := []string{"-c", strconv.Itoa(o.Connections), "-m", "1", "-t", strconv.Itoa(min(o.Threads, o.Connections)),
		"-D", strconv.Itoa(seconds(o.Duration)), "-N", strconv.Itoa(seconds(o.Timeout)) + "s", "--log-file=" + logFile}
	if o.AcceptEncoding != "" {
		a = append(a, "-H", "accept-encoding: "+o.AcceptEncoding)
	}
	return append(a, o.URL)
}

// WrkArgs are the arguments of a wrk run (HTTP/1.1, with --latency for
// percentiles).
func WrkArgs(o LoadOptions) []string {
	a := []string{"-c", strconv.Itoa(o.Connections), "-t", strconv.Itoa(min(o.Threads, o.Connections)),
		"-d", strconv.Itoa(seconds(o.Duration)) + "s", "--latency",
		"--timeout", strconv.Itoa(seconds(o.Timeout)) + "s"}
	if o.AcceptEncoding != "" {
		a = append(a, "-H", "Accept-Encoding: "+o.AcceptEncoding)
	}
	if o.NewConn {
		a = append(a, "-H", "Connection: close")
	}
	return append(a, o.URL)
}

// RunLoad runs the tool and parses what it printed.
func RunLoad(ctx context.Context, tool string, o LoadOptions) (*Load, error) {
	var args []string
	var logFile string
	switch tool {
	case H2load:
		f, err := os.CreateTemp(o.LogDir, "h2load-*.log")
		if err != nil {
			return nil, err
		}
		f.Close()
		logFile = f.Name()
		defer os.Remove(logFile)
		args = H2loadArgs(o, logFile)
	case Wrk:
		args = WrkArgs(o)
	default:
		return nil, fmt.Errorf("unknown load generator %q", tool)
	}
	// A run that hangs past its duration is a bug somewhere: bound it.
	ctx, cancel := context.WithTimeout(ctx, o.Duration+o.Timeout+60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := "$ " + tool + " " + shellJoin(args) + "\n" + out.String()
	var cpu float64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu = tv(ru.Utime) + tv(ru.Stime)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", tool, err, text)
	}
	var l *Load
	switch tool {
	case H2load:
		l, err = ParseH2load(out.String())
		if err == nil && l.Requests > 0 {
			var f *os.File
			f, err = os.Open(logFile)
			if err == nil {
				err = l.addH2loadLog(f, o.Timeout)
				f.Close()
			}
		}
	case Wrk:
		l, err = ParseWrk(out.String())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", tool, err, text)
	}
	l.ClientCPU, l.Output = cpu, text
	return l, nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"\\$*?;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

var (
	h2Finished = regexp.MustCompile(`(?m)^finished in ([0-9.]+)(m?s), ([0-9.]+) req/s`)
	h2Requests = regexp.MustCompile(`(?m)^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout`)
	h2Status   = regexp.MustCompile(`(?m)^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx`)
	h2Traffic  = regexp.MustCompile(`(?m)^traffic: .*?\((\d+)\) total, .*?\((\d+)\) headers .*?, .*?\((\d+)\) data`)
)

// ParseH2load parses h2load's summary (nghttp2 1.4x-1.6x). Percentiles come
// from its --log-file (see addH2loadLog): h2load itself prints only min,
// max, mean and sd.
func ParseH2load(out string) (*Load, error) {
	m := h2Finished.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("h2load output: no \"finished in\" line")
	}
	d, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "ms" {
		d /= 1000
	}
	r := h2Requests.FindStringSubmatch(out)
	s := h2Status.FindStringSubmatch(out)
	if r == nil || s == nil {
		return nil, fmt.Errorf("h2load output: no \"requests:\" or \"status codes:\" line")
	}
	n := func(v string) int64 { x, _ := strconv.ParseInt(v, 10, 64); return x }
	l := &Load{
		Duration:  d,
		Requests:  n(r[3]),
		Succeeded: n(s[1]) + n(s[2]),
		Non2xx:    n(s[3]) + n(s[4]),
		Timeouts:  n(r[7]),
	}
	// h2load: "failed" = HTTP-level failures + "errored"; "errored"
	// (network errors, RST_STREAM) includes "timeout".
	l.Errors = max(0, n(r[6])-l.Timeouts)
	if t := h2Traffic.FindStringSubmatch(out); t != nil {
		l.Bytes = n(t[3])
	}
	return l, nil
}

// addH2loadLog reads h2load's per-request log (tab-separated: start time
// in µs since the epoch, status code, µs until the end of the response) for
// p50 and p99 over every completed request, and counts requests slower than
// timeout as timeouts.
func (l *Load) addH2loadLog(r io.Reader, timeout time.Duration) error {
	var d []float64
	limit := float64(timeout.Microseconds())
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 3 {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
		if err != nil {
			continue
		}
		d = append(d, v)
		if timeout > 0 && v > limit {
			l.Timeouts++
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(d) == 0 {
		return fmt.Errorf("h2load log: no requests")
	}
	slices.Sort(d)
	l.P50 = percentile(d, 50) / 1000
	l.P99 = percentile(d, 99) / 1000
	return nil
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

var (
	wrkLatency  = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s|m|h)\s*$`)
	wrkRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in ([0-9.]+)(us|ms|s|m|h), ([0-9.]+)(B|KB|MB|GB|TB) read`)
	wrkSocket   = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx   = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses: (\d+)`)
)

var timeUnits = map[string]float64{"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
var byteUnits = map[string]float64{"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}

// ParseWrk parses wrk 4.x output run with --latency.
func ParseWrk(out string) (*Load, error) {
	r := wrkRequests.FindStringSubmatch(out)
	if r == nil {
		return nil, fmt.Errorf("wrk output: no \"requests in\" line")
	}
	n := func(v string) int64 { x, _ := strconv.ParseInt(v, 10, 64); return x }
	f := func(v string) float64 { x, _ := strconv.ParseFloat(v, 64); return x }
	l := &Load{Requests: n(r[1]), Duration: f(r[2]) * timeUnits[r[3]], Bytes: int64(f(r[4]) * byteUnits[r[5]])}
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		l.Non2xx = n(m[1])
	}
	l.Succeeded = l.Requests - l.Non2xx
	if m := wrkSocket.FindStringSubmatch(out); m != nil {
		l.Errors = n(m[1]) + n(m[2]) + n(m[3])
		l.Timeouts = n(m[4])
	}
	for _, m := range wrkLatency.FindAllStringSubmatch(out, -1) {
		v := f(m[2]) * timeUnits[m[3]] * 1000
		if m[1] == "50" {
			l.P50 = v
		} else {
			l.P99 = v
		}
	}
	if l.Requests > 0 && l.P50 == 0 {
		return nil, fmt.Errorf("wrk output: no latency distribution (run with --latency)")
	}
	return l, nil
}
