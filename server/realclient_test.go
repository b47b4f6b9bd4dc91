package server_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/server/servertest"
)

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
	for _, l := range flushedLog(t, e, jsonLog, 3) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["remote"] != "203.0.113.5" || m["peer"] != "127.0.0.1" {
			t.Errorf("json line: remote %v, peer %v", m["remote"], m["peer"])
		}
	}
	for _, l := range flushedLog(t, e, combined, 3) {
		if !strings.HasPrefix(l, "127.0.0.1 - - [") {
			t.Errorf("untrusted forwarding believed: %s", l)
		}
	}
}
