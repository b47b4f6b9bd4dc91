package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
)

// TestSiteConditions: each site file with mistakes in the last load, and each
// site whose certificate did not load (KeepServing), is a Degraded
// "site:NAME" condition, shown in the status snapshot with the problems;
// a load without them (a reload fixing it) clears them, and other
// conditions are left alone.
func TestSiteConditions(t *testing.T) {
	dir := t.TempDir()
	conds := led.NewConditions()
	conds.Started()
	conds.Set("update", led.Updating, "trial")
	s := New(Options{StateDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Conditions: conds, KeepServing: true})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	names := func() []string {
		var out []string
		for _, c := range conds.List() {
			out = append(out, c.Name+"="+c.State.String())
		}
		return out
	}

	a, b := filepath.Join(dir, "a.toml"), filepath.Join(dir, "sub", "b.toml")
	s.SetConfigError(config.Errors{
		{File: a, Line: 3, Col: 1, Msg: `unknown key "bogus"`},
		{File: a, Line: 4, Col: 1, Msg: `unknown key "other"`},
		{File: b, Line: 7, Col: 12, Msg: `handler type "statik"`},
		{Msg: "not tied to a file"},
	})
	l := conds.List()
	if got := strings.Join(names(), " "); got != "update=updating site:a.toml=degraded site:b.toml=degraded" {
		t.Fatalf("conditions %s", got)
	}
	if l[1].Message != "does not load: "+a+`:3:1: unknown key "bogus" (and 1 more)` || !strings.Contains(l[2].Message, b+":7:12: ") {
		t.Errorf("messages %+v", l)
	}
	snap := s.Snapshot()
	if len(snap.Problems) != 4 || !strings.HasPrefix(snap.Problems[0], a+":3:1:") || len(snap.State.Conditions) != 3 {
		t.Errorf("snapshot: problems %q, state %+v", snap.Problems, snap.State)
	}

	// A reload that still has b's mistake, but not a's.
	s.SetConfigError(config.Errors{{File: b, Line: 7, Col: 12, Msg: `handler type "statik"`}})
	if got := strings.Join(names(), " "); got != "update=updating site:b.toml=degraded" {
		t.Errorf("a fixed: %s", got)
	}
	// An error that is not about a site file: no site condition.
	s.SetConfigError(errors.New("php-fpm: exec: not found"))
	if got := strings.Join(names(), " "); got != "update=updating" || len(s.Problems()) != 1 {
		t.Errorf("other error: %s, problems %q", got, s.Problems())
	}

	// A certificate that does not load: the site serves with a self-signed
	// one, and is Degraded until a configuration with a good one applies.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, []byte("not a certificate\n"), 0o644)
	os.WriteFile(key, []byte("not a key\n"), 0o600)
	site := func(tls string) []*config.Site {
		t.Helper()
		src := "server_names = [\"a.test\"]\n[tls]\nlisten = [\"" + addr + "\"]\n" + tls + "[[routes]]\npath = \"/\"\nhandler = { type = \"status\" }\n"
		if err := os.WriteFile(a, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		sites, err := config.LoadFiles([]string{a})
		if err != nil {
			t.Fatal(err)
		}
		return sites
	}
	s.SetConfigError(nil)
	if err := s.Apply(site("cert = \"" + cert + "\"\nkey = \"" + key + "\"\n")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(), " "); got != "update=updating site:a.toml=degraded" {
		t.Fatalf("bad certificate: %s", got)
	}
	if m := conds.List()[1].Message; !strings.HasPrefix(m, a+":") || !strings.Contains(m, "self-signed") {
		t.Errorf("bad certificate: message %q", m)
	}
	if err := s.Apply(site("")); err != nil { // no certificate named: a self-signed one, no problem
		t.Fatal(err)
	}
	if got := strings.Join(names(), " "); got != "update=updating" || len(s.Problems()) != 0 {
		t.Errorf("certificate fixed: %s, problems %q", got, s.Problems())
	}
}
