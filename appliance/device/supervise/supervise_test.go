package supervise

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The test binary is also the supervised program: with SUPERVISE_CHILD
// set it prints a few lines and exits or kills itself.
func TestMain(m *testing.M) {
	switch os.Getenv("SUPERVISE_CHILD") {
	case "exit":
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(os.Stderr, "line %d\n", i)
		}
		fmt.Print("no newline at the end")
		os.Exit(3)
	case "kill":
		fmt.Println("about to be killed")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	case "serve":
		fmt.Println("serving")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestDelay(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	for i, w := range want {
		if got := Delay(i+1, FirstDelay, MaxDelay); got != w {
			t.Errorf("Delay(%d) = %s, want %s", i+1, got, w)
		}
	}
}

// run supervises the test binary in mode until the state file satisfies
// done, then stops it.
func run(t *testing.T, mode string, done func(*State) bool) *State {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state.json")
	ctx, cancel := context.WithCancel(context.Background())
	ret := make(chan error, 1)
	go func() {
		ret <- Run(ctx, Options{Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: append(os.Environ(), "SUPERVISE_CHILD="+mode),
			StateFile: state, Stdout: io.Discard, Stderr: io.Discard, First: 20 * time.Millisecond, Max: 80 * time.Millisecond})
	}()
	deadline := time.Now().Add(20 * time.Second)
	var st *State
	for {
		if s, err := ReadState(state); err == nil && done(s) {
			st = s
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("state never reached; last: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-ret:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	return st
}

// TestExitEvidence: a program that exits at once is restarted with a
// growing delay, and each exit is recorded with its status and the last
// lines of its output.
func TestExitEvidence(t *testing.T) {
	start := time.Now()
	st := run(t, "exit", func(s *State) bool { return s.Exits >= 5 })
	// Delays 20, 40, 80, 80 ms before the 5th exit.
	if took := time.Since(start); took < 220*time.Millisecond {
		t.Errorf("5 exits took %s: no backoff", took)
	}
	ex := st.LastExit
	if ex == nil || ex.Code != 3 || ex.Status != "exit status 3" || st.InARow < 5 || st.Starts < 5 {
		t.Fatalf("state %+v, last exit %+v", st, ex)
	}
	if len(ex.Tail) != TailLines || ex.Tail[len(ex.Tail)-1] != "no newline at the end" || ex.Tail[len(ex.Tail)-2] != "line 40" {
		t.Errorf("tail %q", ex.Tail)
	}
}

// TestSignalEvidence: a crash by a signal is recorded as that signal.
func TestSignalEvidence(t *testing.T) {
	st := run(t, "kill", func(s *State) bool { return s.Exits >= 1 })
	ex := st.LastExit
	if ex.Signal != "killed" || ex.Code != -1 || ex.Status != "signal: killed" || len(ex.Tail) == 0 || ex.Tail[0] != "about to be killed" {
		t.Errorf("last exit %+v", ex)
	}
}

// TestStop: ending the context stops the running program (SIGTERM) and
// Run returns; the state says so.
func TestStop(t *testing.T) {
	st := run(t, "serve", func(s *State) bool { return s.PID != 0 })
	if st.Starts != 1 || st.Exits != 0 {
		t.Errorf("state %+v", st)
	}
	if err := syscall.Kill(st.PID, 0); err == nil {
		t.Errorf("the program (pid %d) still runs after Run returned", st.PID)
	}
}
