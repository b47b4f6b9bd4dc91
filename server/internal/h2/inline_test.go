package h2_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// goroutinesWith counts the goroutines whose stack contains s.
func goroutinesWith(s string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, s) {
			n++
		}
	}
	return n
}

// waitGoroutines waits up to d for the count of goroutines with s in
// their stack to be want, and returns the last count.
func waitGoroutines(s string, want int, d time.Duration) int {
	end := time.Now().Add(d)
	for {
		n := goroutinesWith(s)
		if n == want || time.Now().After(end) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// helperStack marks a goroutine that reading was lent to (inline.go).
const helperStack = "created by github.com/arkaweb/arka/server/internal/h2.(*conn).lend"

// A request that is the connection's only stream and has no body runs its
// handler on the goroutine that read it (runInline), not on a worker.
func TestInlineRuns(t *testing.T) {
	where := make(chan string, 1)
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64<<10)
		where <- string(buf[:runtime.Stack(buf, false)])
		io.WriteString(w, "ok")
	}))
	c, fr := rawConn(t, addr)
	writeHeaders(fr, 1, true, reqFields("GET", "/")...)
	if ev := readUntil(t, fr, c.SetReadDeadline, 5*time.Second, func(ev *frameEvent) bool { return ev.status[1] != "" }); ev.status[1] != "200" {
		t.Fatalf("status %q", ev.status[1])
	}
	if s := <-where; !strings.Contains(s, "runInline") {
		t.Errorf("the only stream's handler ran elsewhere than on the reader:\n%s", s)
	}
}

// A helper that reading was lent to lives no longer than the handler it
// was lent for: when the handler returns, its wait for the client's next
// frame is cut short and reading goes back to the serving goroutine,
// although the client stays connected and silent. The connection then
// serves on, inline again after the backoff.
func TestInlineHelperRecalled(t *testing.T) {
	release := make(chan struct{})
	addr, srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			<-release // far longer than inlineWait: the watchdog lends reading
		}
		io.WriteString(w, "ok")
	}))
	c, fr := rawConn(t, addr)
	writeHeaders(fr, 1, true, reqFields("GET", "/wait")...)
	if n := waitGoroutines(helperStack, 1, 5*time.Second); n != 1 {
		t.Fatalf("%d helpers read while the inline handler waits, want 1", n)
	}
	close(release)
	if ev := readUntil(t, fr, c.SetReadDeadline, 5*time.Second, func(ev *frameEvent) bool { return ev.status[1] != "" }); ev.status[1] != "200" {
		t.Fatalf("status %q", ev.status[1])
	}
	if n := waitGoroutines(helperStack, 0, 2*time.Second); n != 0 {
		t.Fatalf("%d helpers still read the idle connection after the handler returned, want 0", n)
	}
	for id := uint32(3); id < 3+2*40; id += 2 {
		writeHeaders(fr, id, true, reqFields("GET", "/")...)
		if ev := readUntil(t, fr, c.SetReadDeadline, 5*time.Second, func(ev *frameEvent) bool { return ev.status[id] != "" }); ev.status[id] != "200" {
			t.Fatalf("stream %d after the recall: %+v", id, ev)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Close()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// Shutdown while an inline handler waits with reading lent, its client
// connected: Shutdown gives up at its context's end and closes the
// connection; the handler's context ends, and no goroutine of the
// connection (serving, helper, writer) is left.
func TestInlineShutdownWhileLent(t *testing.T) {
	started := make(chan struct{}, 1)
	addr, srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	}))
	const conn = "github.com/arkaweb/arka/server/internal/h2.(*conn)"
	before := goroutinesWith(conn)
	_, fr := rawConn(t, addr)
	writeHeaders(fr, 1, true, reqFields("GET", "/")...)
	<-started
	if n := waitGoroutines(helperStack, 1, 5*time.Second); n != 1 {
		t.Fatalf("%d helpers read while the inline handler waits, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if err := srv.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown returned nil with a handler waiting")
	}
	// Goroutines of earlier tests' connections may end meanwhile: at most
	// as many as before.
	n := goroutinesWith(conn)
	for end := time.Now().Add(3 * time.Second); n > before && time.Now().Before(end); n = goroutinesWith(conn) {
		time.Sleep(10 * time.Millisecond)
	}
	if n > before {
		t.Fatalf("%d goroutines of connections left %v after Shutdown, want at most %d", n, time.Since(t0), before)
	}
}
