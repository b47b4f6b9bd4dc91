package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/server/servertest"
)

// TestProxyMaxForwards: an OPTIONS with Max-Forwards (RFC 9110 section
// 7.6.2) to a proxy route is answered by Arka itself when the field is 0
// (200 with Allow, no content) and forwarded with the field decremented
// otherwise; other methods' Max-Forwards passes as sent (the field is
// defined for TRACE and OPTIONS only), and an OPTIONS whose Max-Forwards
// is no number gets 400. Over HTTP/1.1, TLS and HTTP/2.
func TestProxyMaxForwards(t *testing.T) {
	up, got := captureUpstream(t)
	e := servertest.Start(t, `listen = ["{{HTTP}}"]
tls = { listen = ["{{HTTPS}}"] }
routes = [{ path = "/", handler = { type = "proxy", upstreams = ["`+up+`"] } }]
`)
	none := func(t *testing.T) {
		t.Helper()
		select {
		case req := <-got:
			t.Errorf("the upstream received %q", req.head)
		case <-time.After(50 * time.Millisecond):
		}
	}
	e.Each(t, func(t *testing.T, c *servertest.Client) {
		for _, v := range []string{"0", "000"} {
			resp, body := c.Do(t, http.MethodOptions, "/e", "Max-Forwards: "+v)
			if allow := resp.Header.Get("Allow"); resp.StatusCode != 200 || allow == "" || strings.Contains(allow, "TRACE") ||
				len(body) != 0 || resp.ContentLength != 0 {
				t.Errorf("OPTIONS Max-Forwards %s: %d Allow %q Content-Length %d %q, want 200 with Allow and no content",
					v, resp.StatusCode, allow, resp.ContentLength, body)
			}
			none(t)
		}

		for _, tc := range []struct{ method, sent, want string }{
			{http.MethodOptions, "5", "4"},
			{http.MethodOptions, "1", "0"},
			{http.MethodOptions, "100", "99"},
			{http.MethodOptions, "0010", "9"},
			{http.MethodOptions, "18446744073709551616", "18446744073709551615"},
			{http.MethodOptions, "100000000000000000000000", "99999999999999999999999"},
			{http.MethodGet, "5", "5"},
			{http.MethodGet, "0", "0"},
		} {
			resp, body := c.Do(t, tc.method, "/e", "Max-Forwards: "+tc.sent)
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Errorf("%s Max-Forwards %s: %d %q", tc.method, tc.sent, resp.StatusCode, body)
				continue
			}
			req := receive(t, got)
			if !strings.HasPrefix(req.head, tc.method+" /e ") {
				t.Errorf("%s Max-Forwards %s: upstream got %q", tc.method, tc.sent, req.head)
			}
			if v := req.field(req.head, "Max-Forwards"); len(v) != 1 || v[0] != tc.want {
				t.Errorf("%s Max-Forwards %s: upstream got Max-Forwards %q, want %s", tc.method, tc.sent, v, tc.want)
			}
		}

		for _, v := range [][]string{{"Max-Forwards: ten"}, {"Max-Forwards: -1"}, {"Max-Forwards: 1", "Max-Forwards: 2"}} {
			resp, _ := c.Do(t, http.MethodOptions, "/e", v...)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("OPTIONS %q: %d, want 400", v, resp.StatusCode)
			}
			none(t)
		}
	})
}
