package config

import (
	"fmt"
	"strings"
	"time"
)

// Request body limits of [global], the same for HTTP/1.1 and HTTP/2:
//
//	[global]
//	body_timeout = "60s"      # longest silence while a handler waits for body bytes
//	body_min_rate = "500B/s"  # lowest average rate after body_timeout of grace
//
// Like nginx's client_body_timeout (which has the same 60 s default) plus
// a rate floor in the manner of Apache's mod_reqtimeout MinRate. A client
// too slow gets 408 (RFC 9110 section 15.5.9) from the PHP and proxy
// handlers. body_min_rate = 0 switches the rate floor off; body_timeout
// cannot be switched off (as in nginx): "0s" is an error.
const (
	DefaultBodyTimeout = 60 * time.Second
	DefaultBodyMinRate = 500 // bytes per second
)

// Rate is a number of bytes per second written as a size with "/s":
// "500B/s", "1KiB/s", "2MB/s" (units as Size), or a bare integer meaning
// bytes per second; 0 means none.
type Rate int64

// UnmarshalText implements encoding.TextUnmarshaler for TOML strings and
// integers.
func (r *Rate) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	num, ok := strings.CutSuffix(s, "/s")
	if !ok && strings.Trim(s, "0123456789") != "" {
		return fmt.Errorf("rate %q: expected bytes per second like \"500B/s\" or \"1KiB/s\"", s)
	}
	v, err := ParseSize(num)
	if err != nil {
		return fmt.Errorf("rate %q: expected bytes per second like \"500B/s\" or \"1KiB/s\"", s)
	}
	*r = Rate(v)
	return nil
}

func (r Rate) String() string { return Size(r).String() + "/s" }

// ClientBody is what the engines apply to request bodies, defaults
// applied: Timeout is the longest silence, MinRate the lowest average rate
// in bytes per second, measured from the handler's first read with
// Timeout as grace (0: none).
type ClientBody struct {
	Timeout time.Duration
	MinRate int64
}

// ClientBody returns the request body limits of g with the defaults
// applied (g may be the empty Global of a configuration without one).
func (g Global) ClientBody() ClientBody {
	b := ClientBody{Timeout: DefaultBodyTimeout, MinRate: DefaultBodyMinRate}
	if g.BodyTimeout != 0 {
		b.Timeout = g.BodyTimeout.D()
	}
	if g.BodyMinRate != nil {
		b.MinRate = int64(*g.BodyMinRate)
	}
	return b
}

// normalizeClientBody applies the defaults of [global] body_timeout and
// body_min_rate (stage 2, normalize.go).
func (v *validator) normalizeClientBody(g *Global) {
	if !v.has("global.body_timeout") {
		g.BodyTimeout = Duration(DefaultBodyTimeout)
	}
	if g.BodyMinRate == nil {
		g.BodyMinRate = ptr(Rate(DefaultBodyMinRate))
	}
}

// clientBody validates [global] body_timeout and body_min_rate.
func (v *validator) clientBody(g *Global) {
	if d := g.BodyTimeout; d.D() < 100*time.Millisecond || d.D() > 24*time.Hour {
		v.errAt("global.body_timeout", "body_timeout %v: use 100ms to 24h (it cannot be switched off)", d)
	}
	if r := g.BodyMinRate; r != nil && *r != 0 && *r < 10 {
		v.errAt("global.body_min_rate", "body_min_rate %v: use at least 10B/s (or 0 for none)", r)
	}
}
