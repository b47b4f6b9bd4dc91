// Package servertest runs a real Arka server in-process for tests, on
// loopback ports chosen at run time, and gives clients for the three ways
// browsers reach it: HTTP/1.1, HTTP/1.1 over TLS and HTTP/2 over TLS. Tests
// write each behaviour once and run it over all three with Each.
package servertest

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
	"github.com/arkaweb/arka/server/internal/enginetest"
	"github.com/arkaweb/arka/tests/testkit"
)

// Env is a running server.
type Env struct {
	Server *server.Server
	Dir    string // temp directory holding site files and state
	// HTTP and HTTPS ("127.0.0.1:port" of the plain and TLS
	// listeners), Clients and Each.
	enginetest.Addrs
	files []string
	log   *testkit.LogBuffer
}

// FreeAddr returns a loopback address with a port free right now (see
// testkit.FreeAddr; Start binds its own addresses without this race).
func FreeAddr(t testing.TB) string {
	t.Helper()
	return testkit.FreeAddr(t)
}

// Start writes each site (TOML; "{{HTTP}}", "{{HTTPS}}" and "{{DIR}}" are
// replaced by the plain and TLS listen addresses and the temp directory)
// into a site file and starts a server on them. The server is shut down
// when the test ends.
func Start(t testing.TB, sites ...string) *Env {
	t.Helper()
	return StartWith(t, server.Options{}, sites...)
}

// StartWith is Start with server options (StateDir, Logger and Listen are
// set by the helper).
//
// The plain and TLS addresses are bound here, on port 0, and handed to the
// server (Options.Listen), so no other program can take them in between.
// When the test ends, after the server has shut down, no goroutine started
// by Arka's code since Start may still run: one that does is reported as a
// leak, with its stack.
func StartWith(t testing.TB, o server.Options, sites ...string) *Env {
	t.Helper()
	before := enginetest.Goroutines()
	t.Cleanup(func() { enginetest.CheckLeaks(t, before) }) // runs after the shutdown below
	plain, secure := testkit.Listen(t), testkit.Listen(t)
	e := &Env{Dir: t.TempDir(), Addrs: enginetest.Addrs{HTTP: plain.Addr().String(), HTTPS: secure.Addr().String()}, log: &testkit.LogBuffer{}}
	bound := map[string]net.Listener{e.HTTP: plain, e.HTTPS: secure}
	var boundMu sync.Mutex
	o.Listen = func(network, addr string) (net.Listener, error) {
		boundMu.Lock()
		ln, ok := bound[addr]
		delete(bound, addr)
		boundMu.Unlock()
		if ok {
			return ln, nil
		}
		return net.Listen(network, addr)
	}
	for i, src := range sites {
		f := filepath.Join(e.Dir, "site"+strconv.Itoa(i)+".toml")
		if err := os.WriteFile(f, []byte(e.Expand(src)), 0o644); err != nil {
			t.Fatal(err)
		}
		e.files = append(e.files, f)
	}
	loaded, err := config.LoadFiles(e.files)
	if err == nil {
		err = config.CheckEnvironment(loaded)
	}
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	log := slog.New(slog.NewTextHandler(e.log, nil))
	o.StateDir, o.Logger = filepath.Join(e.Dir, "state"), log
	e.Server = server.New(o)
	if err := e.Server.Apply(loaded); err != nil {
		t.Fatalf("apply: %v", err)
	}
	t.Cleanup(func() {
		e.CloseClients() // first: an HTTP/2 server waits for the peer after GOAWAY
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Server.Shutdown(ctx)
	})
	return e
}

// Expand replaces the placeholders Start understands.
func (e *Env) Expand(s string) string {
	return strings.NewReplacer("{{HTTP}}", e.HTTP, "{{HTTPS}}", e.HTTPS, "{{DIR}}", e.Dir).Replace(s)
}

// Reload rewrites site file i and applies all files again, as arka does
// on SIGHUP, returning the error from loading, checking the environment or
// applying.
func (e *Env) Reload(i int, src string) error {
	if err := os.WriteFile(e.files[i], []byte(e.Expand(src)), 0o644); err != nil {
		return err
	}
	loaded, err := config.LoadFiles(e.files)
	if err != nil {
		return err
	}
	if err := config.CheckEnvironment(loaded); err != nil {
		return err
	}
	return e.Server.Apply(loaded)
}

// Client is one way of reaching the server (package enginetest, whose
// Serve runs a single handler on the same engines for the handlers' own
// tests).
type Client = enginetest.Client

// Log returns what the server wrote to its error log so far.
func (e *Env) Log() string { return e.log.String() }
