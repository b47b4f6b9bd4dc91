package fastcgi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/arkaweb/arka/tests/fpmtest"
)

// TestHeadLimit: a CGI header block larger than
// limits.UpstreamHeaderBytes counted as an HTTP/2 header list (RFC 9113
// section 6.5.2) is answered 502 and logged, as the reverse proxy does;
// one under it goes through.
func TestHeadLimit(t *testing.T) {
	e := newEnv(t, fpmtest.Config{})
	fpmtest.WriteFiles(t, e.root, map[string]string{
		// n fields "X-Fnnnn: b": about 10 bytes read, 42 as a header list.
		"app/fields.php": `<?php for ($i = 0; $i < (int)$_GET['n']; $i++) header(sprintf('X-F%04d: b', $i)); echo "ok";`,
	})
	h := e.handler(t, nil)
	for _, p := range protos(t, h) {
		t.Run(p.name, func(t *testing.T) {
			res, body := get(t, p.client, p.url+"/app/fields.php?n=500")
			if res.StatusCode != 200 || body != "ok" || res.Header.Get("X-F0499") != "b" {
				t.Errorf("500 fields: %d %q", res.StatusCode, body)
			}
			res, body = get(t, p.client, p.url+"/app/fields.php?n=1000")
			if res.StatusCode != http.StatusBadGateway || body == "ok" || res.Header.Get("X-F0001") != "" {
				t.Errorf("1000 fields: %d %.40q, want 502", res.StatusCode, body)
			}
		})
	}
	if n := strings.Count(e.log.String(), "upstream sent too big header"); n != 3 {
		t.Errorf("%d log lines say why, want 3:\n%.2000s", n, e.log.String())
	}
}
