package enginetest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// reporter is a testing.TB that keeps what CheckLeaks reports.
type reporter struct {
	testing.TB
	errors []string
}

func (r *reporter) Helper()      {}
func (r *reporter) Failed() bool { return false }
func (r *reporter) Errorf(f string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(f, args...))
}

// A goroutine of Arka's code still running after the check's grace is
// reported with its stack; one that ends within it, or that runs only a
// shared fixture under tests/, is not.
func TestCheckLeaks(t *testing.T) {
	defer func(g time.Duration) { grace = g }(grace)
	grace = 200 * time.Millisecond

	before := Goroutines()
	stop := make(chan struct{})
	go func() { <-stop }() // this package's code: Arka's
	r := &reporter{TB: t}
	CheckLeaks(r, before)
	close(stop)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "1 goroutine(s) still running") || !strings.Contains(r.errors[0], "enginetest.TestCheckLeaks") {
		t.Errorf("a leaked goroutine: reported %q", r.errors)
	}

	before = Goroutines()
	done := make(chan struct{})
	go func() { time.Sleep(50 * time.Millisecond); close(done) }() // a straggler
	r = &reporter{TB: t}
	CheckLeaks(r, before)
	if len(r.errors) != 0 {
		t.Errorf("a goroutine that ended within the grace: reported %q", r.errors)
	}
	<-done

	fixture := "goroutine 7 [chan receive]:\ngithub.com/arkaweb/arka/tests/fpmtest.(*FPM).start.func1()\n\t/src/tests/fpmtest/fpmtest.go:197 +0x25\ncreated by github.com/arkaweb/arka/tests/fpmtest.(*FPM).start in goroutine 5"
	arka := "goroutine 8 [IO wait]:\ngithub.com/arkaweb/arka/server/internal/h1.(*conn).serve(0x1)\n\t/src/server/internal/h1/conn.go:10 +0x25"
	if runsArka(fixture) || !runsArka(arka) {
		t.Errorf("runsArka: fixture %v, engine %v", runsArka(fixture), runsArka(arka))
	}
}

// Serve answers over all three clients with the protocol each expects
// (Client.Do checks resp.Proto), and leaves nothing running.
func TestServe(t *testing.T) {
	e := Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	var names []string
	e.Each(t, func(t *testing.T, c *Client) {
		names = append(names, c.Name)
		if _, body := c.Get(t, "/"); string(body) != c.Proto {
			t.Errorf("handler saw %s, want %s", body, c.Proto)
		}
	})
	if strings.Join(names, " ") != "h1 h1+tls h2" {
		t.Errorf("clients %v", names)
	}
}
