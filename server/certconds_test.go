package server

import (
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/server/status"
)

// A certificate whose last attempt failed is a degraded condition until it
// recovers; other conditions are left alone.
func TestCertConditions(t *testing.T) {
	c := led.NewConditions()
	c.Started()
	c.Set("config", led.Degraded, "reload failed")
	now := time.Now()
	certConditions(c, []status.Certificate{
		{Name: "example.org", State: "error", LastError: "urn:ietf:params:acme:error:dns: NXDOMAIN"},
		{Name: "blog.example.org", State: "error", NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour)},
		{Name: "ok.example.org", State: "valid"},
	})
	l := c.List()
	if len(l) != 3 || l[0].Name != "cert:blog.example.org" || l[1].Name != "cert:example.org" ||
		!strings.Contains(l[1].Message, "could not be obtained: urn:ietf:params:acme:error:dns: NXDOMAIN") ||
		!strings.Contains(l[0].Message, "could not be renewed (the current one is valid until") {
		t.Fatalf("conditions %+v", l)
	}
	certConditions(c, []status.Certificate{{Name: "example.org", State: "valid"}})
	if l := c.List(); len(l) != 1 || l[0].Name != "config" {
		t.Errorf("after recovery: %+v", l)
	}
	certConditions(nil, nil) // no conditions kept: nothing to do
}
