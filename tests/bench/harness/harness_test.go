package harness

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

const wrkOut = `Running 2s test @ https://127.0.0.1:44167/app/tiny.php
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    11.36ms   38.29ms 324.77ms   94.78%
    Req/Sec     5.37k     1.31k    6.49k    94.29%
  Latency Distribution
     50%  567.00us
     75%    4.23ms
     90%    8.77ms
     99%    1.02s
  18978 requests in 2.03s, 3.95MB read
  Socket errors: connect 1, read 2, write 3, timeout 101
  Non-2xx or 3xx responses: 7
Requests/sec:   9335.49
Transfer/sec:      1.94MB
`

func TestParseWrk(t *testing.T) {
	l, err := ParseWrk(wrkOut)
	if err != nil {
		t.Fatal(err)
	}
	want := Load{Duration: 2.03, Requests: 18978, Succeeded: 18971, Non2xx: 7, Errors: 6, Timeouts: 101, P50: 0.567, P99: 1020, Bytes: mb(3.95)}
	if !near(l.Duration, want.Duration) || l.Requests != want.Requests || l.Succeeded != want.Succeeded || l.Non2xx != want.Non2xx ||
		l.Errors != want.Errors || l.Timeouts != want.Timeouts || !near(l.P50, want.P50) || !near(l.P99, want.P99) || l.Bytes != want.Bytes {
		t.Errorf("got %+v\nwant %+v", *l, want)
	}
	if _, err := ParseWrk("unable to connect to 127.0.0.1:1 Connection refused\n"); err == nil {
		t.Error("no error for output without figures")
	}
	if _, err := ParseWrk("  100 requests in 1.00s, 1.00KB read\n"); err == nil {
		t.Error("no error for output without --latency percentiles")
	}
}

const h2loadOut = `starting benchmark...
spawning thread #0: 32 total client(s). Timing-based test with 0s of warm-up time and 2s of main duration for measurements.
Main benchmark duration is over for thread #0. Stopping all clients.

finished in 2.03s, 7290.50 req/s, 9.48MB/s
requests: 14581 total, 14645 started, 14581 done, 14570 succeeded, 11 failed, 4 errored, 1 timeout
status codes: 14570 2xx, 0 3xx, 5 4xx, 2 5xx
traffic: 18.95MB (19871354) total, 136.09KB (139357) headers (space savings 95.38%), 18.56MB (19465635) data
                     min         max         mean         sd        +/- sd
time for request:       99us     48.19ms      7.34ms      4.44ms    80.02%
`

func TestParseH2load(t *testing.T) {
	l, err := ParseH2load(h2loadOut)
	if err != nil {
		t.Fatal(err)
	}
	if !near(l.Duration, 2.03) || l.Requests != 14581 || l.Succeeded != 14570 || l.Non2xx != 7 || l.Errors != 3 || l.Timeouts != 1 || l.Bytes != 19465635 {
		t.Errorf("got %+v", *l)
	}
	// Per-request log: start (µs since the epoch), status, duration (µs).
	var log strings.Builder
	for i := 1; i <= 1000; i++ {
		d := i * 100 // 0.1 ms .. 100 ms
		if i > 998 {
			d = 2_500_000 // two requests slower than 2 s
		}
		log.WriteString("1700000000000000\t200\t")
		log.WriteString(strings.Repeat(" ", i%2)) // h2load pads nothing; be lenient
		log.WriteString(itoa(d) + "\n")
	}
	if err := l.addH2loadLog(strings.NewReader(log.String()), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if !near(l.P50, 50) || !near(l.P99, 99) || l.Timeouts != 3 {
		t.Errorf("p50 %v ms, p99 %v ms, timeouts %d; want 50, 99, 3", l.P50, l.P99, l.Timeouts)
	}
	if _, err := ParseH2load("connect: Connection refused\n"); err == nil {
		t.Error("no error for output without figures")
	}
}

func itoa(n int) string {
	var b []byte
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestLoadArgs(t *testing.T) {
	o := LoadOptions{URL: "https://127.0.0.1:1/x", Connections: 64, Threads: 2, Duration: 10 * time.Second, Timeout: 2 * time.Second,
		AcceptEncoding: BrowserAcceptEncoding, NewConn: true}
	got := strings.Join(WrkArgs(o), " ")
	want := "-c 64 -t 2 -d 10s --latency --timeout 2s -H Accept-Encoding: gzip, deflate, br, zstd -H Connection: close https://127.0.0.1:1/x"
	if got != want {
		t.Errorf("wrk args:\n got %s\nwant %s", got, want)
	}
	got = strings.Join(H2loadArgs(o, "/tmp/log"), " ")
	want = "-c 64 -m 1 -t 2 -D 10 -N 2s --log-file=/tmp/log -H accept-encoding: gzip, deflate, br, zstd https://127.0.0.1:1/x"
	if got != want {
		t.Errorf("h2load args:\n got %s\nwant %s", got, want)
	}
}

func TestParseProcStat(t *testing.T) {
	// comm with spaces and parentheses; utime 11, stime 22, cutime 33, cstime 44.
	st, err := parseProcStat([]byte("1234 (php-fpm: pool (x)) S 99 1234 1234 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0 5 1000 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st.pid != 1234 || st.ppid != 99 || st.ticks != 110 {
		t.Errorf("got %+v", st)
	}
	m := parseMachineCPU([]byte("cpu  100 5 50 1000 20 1 2 3 7 0\ncpu0 1 2 3\n"))
	if m.Total != 1181 || m.Busy != 161 {
		t.Errorf("machine cpu %+v, want total 1181 busy 161", m)
	}
}

func TestTreeOfThisProcess(t *testing.T) {
	pids, ticks := Tree(os.Getpid())
	if len(pids) != 1 || ticks < 0 {
		t.Errorf("Tree(self) = %v, %d", pids, ticks)
	}
}

func TestSelect(t *testing.T) {
	ts, err := SelectTests([]string{"php", "small-*", "1mb-h2"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Name)
	}
	want := []string{"small-h2", "small-h1", "small-br-h2", "small-br-h1", "1mb-h2", "php-tiny", "php-page", "php-page-br"}
	if !slices.Equal(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
	if _, err := SelectTests([]string{"nope"}); err == nil {
		t.Error("no error for an unknown test")
	}
	sv, err := ParseServers([]string{"nginx", "arka"})
	if err != nil || !slices.Equal(sv, []Server{Arka, Nginx}) {
		t.Errorf("ParseServers = %v, %v", sv, err)
	}
	if _, err := ParseServers([]string{"iis"}); err == nil {
		t.Error("no error for an unknown server")
	}
	if got := rotate([]int{1, 2, 3}, 4); !slices.Equal(got, []int{2, 3, 1}) {
		t.Errorf("rotate = %v", got)
	}
}

func TestContentIsDeterministic(t *testing.T) {
	a, b := NewContent(), NewContent()
	if string(a.Script) != string(b.Script) || string(a.Binary) != string(b.Binary) {
		t.Fatal("content differs between two generations")
	}
	if len(a.Script) != 285*1024 || len(a.Binary) != 1<<20 {
		t.Errorf("script %d bytes, binary %d bytes", len(a.Script), len(a.Binary))
	}
	if n := len(a.Page); n < 1000 || n > 2048 {
		t.Errorf("page is %d bytes, want 1-2 KB", n)
	}
	if n := len(a.PHPPage); n < 23*1024 || n > 27*1024 {
		t.Errorf("PHP page is %d bytes, want about 25 KB", n)
	}
	if n := len(a.Big); n < 30*1024 || n > 31*1024 {
		t.Errorf("upstream page is %d bytes, want about 30 KB", n)
	}
}

func mb(v float64) int64 { return int64(v * (1 << 20)) }
