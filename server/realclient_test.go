package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
)

// readLog waits for n lines in an access log (flushed every second).
func readLog(t *testing.T, path string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var lines []string
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(path)
		lines = strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) >= n && lines[0] != "" {
			return lines
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("access log has %d lines, want %d: %q", len(lines), n, lines)
	return nil
}

// The access log names the client a trusted proxy forwarded for (the
// address the proxy handler would forward as X-Real-IP), the direct peer
// in its own JSON field; from anyone else forwarding fields are ignored.
func TestAccessLogRealClient(t *testing.T) {
	dir := t.TempDir()
	root := www(t, dir, "a", "hello")
	jsonLog, combined := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	site := func(names, trusted, path, format string) string {
		return `server_names = [` + names + `]
listen = ["{{HTTP}}"]
` + trusted + `
[tls]
listen = ["{{HTTPS}}"]
[log]
enabled = true
path = "` + path + `"
format = "` + format + `"
[[routes]]
path = "/"
handler = { type = "static", root = "` + root + `" }
`
	}
	e := servertest.Start(t, "default = true\n"+site(`"a.example"`, `trusted_proxies = ["127.0.0.0/8", "::1"]`, jsonLog, "json"),
		site(`"b.example"`, "", combined, "combined"))
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		c.Get(t, "/", "Host: a.example", "X-Forwarded-For: 198.51.100.7, 203.0.113.5")
		c.Get(t, "/", "Host: b.example", "X-Real-IP: 203.0.113.5")
	})
	for _, l := range readLog(t, jsonLog, 3) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["remote"] != "203.0.113.5" || m["peer"] != "127.0.0.1" {
			t.Errorf("json line: remote %v, peer %v", m["remote"], m["peer"])
		}
	}
	for _, l := range readLog(t, combined, 3) {
		if !strings.HasPrefix(l, "127.0.0.1 - - [") {
			t.Errorf("untrusted forwarding believed: %s", l)
		}
	}
}
