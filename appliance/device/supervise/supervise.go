// Package supervise runs one program and restarts it when it exits, with a
// backoff: 1 s after the first exit, doubling up to a minute for a program
// that keeps exiting, back to 1 s once it has run for a minute. It keeps
// the last lines of the program's output, and after every exit writes what
// happened (exit status or signal, those lines, the count) to a state file
// that arka-init reads for an update's trial and its evidence.
//
// In an Arka appliance gokrazy supervises /user/arka, which is arka-init
// itself in this role (a symbolic link); it runs the Arka binary
// (/usr/lib/arka/arka) with Run. gokrazy's own supervision restarts every
// second, forever.
package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/arkaweb/arka/internal/atomicfile"
)

// Backoff bounds.
const (
	FirstDelay = time.Second
	MaxDelay   = time.Minute
	// Stable is how long a process must run for the next exit to count as
	// the first again.
	Stable = time.Minute
	// TailLines is how many lines of output an Exit keeps.
	TailLines = 30
)

// Exit is how a supervised process ended.
type Exit struct {
	Time   time.Time `json:"time"`
	Status string    `json:"status"`           // "exit status 1", "signal: killed", or why it did not start
	Code   int       `json:"code"`             // exit code; -1 for a signal or a failed start
	Signal string    `json:"signal,omitempty"` // "killed", "segmentation fault", …
	Ran    float64   `json:"ran_seconds"`
	Tail   []string  `json:"tail,omitempty"` // the last lines of its output (standard output and error, as written)
}

// String is the exit in one line.
func (e *Exit) String() string {
	return fmt.Sprintf("%s after %.1f s", e.Status, e.Ran)
}

// State is the supervisor's state file.
type State struct {
	Program    string    `json:"program"`
	Supervisor int       `json:"supervisor_pid"`
	Starts     int       `json:"starts"`           // processes started by this supervisor
	Exits      int       `json:"exits"`            // of which ended
	InARow     int       `json:"exits_in_a_row"`   // exits after less than Stable
	PID        int       `json:"pid,omitempty"`    // the running process; 0 while waiting
	Started    time.Time `json:"started,omitzero"` // of the running process
	NextStart  time.Time `json:"next_start,omitzero"`
	LastExit   *Exit     `json:"last_exit,omitempty"`
}

// ReadState reads a state file.
func ReadState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &s, nil
}

// Options configure Run.
type Options struct {
	Path      string
	Args      []string // without argv[0]
	Env       []string // nil: the supervisor's
	StateFile string   // rewritten at every start and exit
	Stdout    io.Writer
	Stderr    io.Writer
	Logf      func(format string, args ...any) // the supervisor's own messages
	// First and Max override FirstDelay and MaxDelay, StableAfter Stable
	// (tests).
	First, Max, StableAfter time.Duration
}

// Delay is the wait before the next start after n exits in a row (n ≥ 1).
func Delay(n int, first, max time.Duration) time.Duration {
	d := first
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Run supervises o.Path until ctx ends or SIGTERM or SIGINT arrives: then
// it passes the signal on, waits for the process to end and returns.
// SIGHUP and SIGUSR1 are passed on. The process runs in its own process
// group and is killed if the supervisor dies.
func Run(ctx context.Context, o Options) error {
	if o.First == 0 {
		o.First = FirstDelay
	}
	if o.Max == 0 {
		o.Max = MaxDelay
	}
	if o.StableAfter == 0 {
		o.StableAfter = Stable
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)

	st := &State{Program: o.Path, Supervisor: os.Getpid()}
	save := func() {
		if o.StateFile == "" {
			return
		}
		b, _ := json.MarshalIndent(st, "", "  ")
		if err := writeAtomic(o.StateFile, append(b, '\n')); err != nil {
			o.Logf("state file: %v", err)
		}
	}
	for {
		tail := &tail{max: TailLines}
		cmd := exec.Command(o.Path, o.Args...)
		cmd.Env = o.Env
		cmd.Stdout = io.MultiWriter(o.Stdout, tail.stream())
		cmd.Stderr = io.MultiWriter(o.Stderr, tail.stream())
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		start := time.Now()
		st.Starts++
		st.NextStart = time.Time{}
		err := cmd.Start()
		var waitErr error
		stopping := false
		if err == nil {
			st.PID, st.Started = cmd.Process.Pid, start.UTC()
			save()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
		wait:
			for {
				select {
				case waitErr = <-done:
					break wait
				case <-ctx.Done():
					stopping = true
					cmd.Process.Signal(syscall.SIGTERM)
				case s := <-sigs:
					if s == syscall.SIGTERM || s == syscall.SIGINT {
						stopping = true
					}
					cmd.Process.Signal(s)
				}
			}
		}
		ran := time.Since(start) // monotonic: a clock set backwards does not matter
		ex := &Exit{Time: time.Now().UTC(), Ran: ran.Seconds(), Code: -1, Tail: tail.lines()}
		switch {
		case err != nil:
			ex.Status = "did not start: " + err.Error()
		case waitErr == nil:
			ex.Status, ex.Code = "exit status 0", 0
		default:
			ex.Status = waitErr.Error()
			var ee *exec.ExitError
			if errors.As(waitErr, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					ex.Signal = ws.Signal().String()
				} else {
					ex.Code = ee.ExitCode()
				}
			}
		}
		st.PID, st.Started = 0, time.Time{}
		st.Exits++
		st.LastExit = ex
		if ran >= o.StableAfter {
			st.InARow = 1
		} else {
			st.InARow++
		}
		if stopping {
			save()
			o.Logf("%s stopped (%s)", filepath.Base(o.Path), ex.Status)
			return nil
		}
		delay := Delay(st.InARow, o.First, o.Max)
		st.NextStart = time.Now().Add(delay).UTC()
		save()
		o.Logf("%s exited: %s; exit %d in a row, restarting in %s", filepath.Base(o.Path), ex, st.InARow, delay)
		t := time.NewTimer(delay)
	backoff:
		for {
			select {
			case <-t.C:
				break backoff
			case <-ctx.Done():
				t.Stop()
				return nil
			case s := <-sigs:
				if s == syscall.SIGTERM || s == syscall.SIGINT {
					t.Stop()
					return nil
				}
			}
		}
	}
}

// maxLine bounds a kept line, in bytes.
const maxLine = 1024

// tail keeps the last max lines written to its streams.
type tail struct {
	mu  sync.Mutex
	max int
	buf []string
	out []*stream
}

// stream is one output of the program (standard output or error): its
// partial last line is its own.
type stream struct {
	t       *tail
	partial []byte
}

func (t *tail) stream() *stream {
	s := &stream{t: t}
	t.out = append(t.out, s)
	return s
}

func (w *stream) Write(p []byte) (int, error) {
	t := w.t
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(w.partial) < maxLine {
				w.partial = append(w.partial, p[:min(len(p), maxLine-len(w.partial))]...)
			}
			break
		}
		line := append(w.partial, p[:min(i, maxLine)]...)
		w.partial = nil
		t.buf = append(t.buf, string(line))
		if len(t.buf) > t.max {
			t.buf = t.buf[len(t.buf)-t.max:]
		}
		p = p[i+1:]
	}
	return n, nil
}

func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.buf...)
	for _, s := range t.out {
		if len(s.partial) > 0 {
			out = append(out, string(s.partial))
		}
	}
	if len(out) > t.max {
		out = out[len(out)-t.max:]
	}
	return out
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}
