package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/devices"
)

// TestPasswordRotationFailures: a device that never answers does not
// hang the command, and the error says which password is valid and where
// the new one is kept; a device that refuses leaves no .new file behind.
func TestPasswordRotationFailures(t *testing.T) {
	t.Setenv("ARKA_DEVICES", t.TempDir())
	oldFile, _ := devices.PasswordFile("garden")
	if err := devices.WriteFile(oldFile, []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	requestTimeout = 300 * time.Millisecond
	defer func() { requestTimeout = 0 }()

	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	start := time.Now()
	err = cmdPassword([]string{"--host", "http://" + ln.Addr().String(), "--name", "garden"})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %s", d)
	}
	if err == nil || !strings.Contains(err.Error(), "not known whether") || !strings.Contains(err.Error(), oldFile+".new") || !strings.Contains(err.Error(), "the old one ("+oldFile+") is valid") {
		t.Errorf("silent device: %v", err)
	}
	if _, err := os.Stat(oldFile + ".new"); err != nil {
		t.Errorf("the new password, maybe on the device, is not kept: %v", err)
	}
	ln.Close()
	for c := range accepted {
		c.Close()
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	err = cmdPassword([]string{"--host", srv.URL, "--name", "garden"})
	if err == nil || !strings.Contains(err.Error(), "refused the password") || !strings.Contains(err.Error(), "keeps its password, still in "+oldFile) {
		t.Errorf("refusing device: %v", err)
	}
	if _, err := os.Stat(oldFile + ".new"); !os.IsNotExist(err) {
		t.Errorf("%s.new left behind: %v", oldFile, err)
	}
	if b, _ := os.ReadFile(oldFile); string(b) != "old\n" {
		t.Errorf("old password file now %q", b)
	}
}
