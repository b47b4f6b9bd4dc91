package ota

//lint:file-ignore ST1005 the verdicts name Arka, a proper noun, and are shown as sentences.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Target is one health URL: a site on one address Arka listens on, as the
// health check reaches it.
type Target struct {
	Addr string // host:port to connect to
	TLS  bool   // speak HTTPS (the certificate is not checked)
	Host string // Host header and TLS server name; "" is "localhost"
	Path string // request target; "" is "/"
}

// String is the target as a URL with the address it is sent to
// ("http://arka/ via 127.0.0.1:80").
func (t Target) String() string {
	scheme := "http"
	if t.TLS {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s%s via %s", scheme, t.host(), t.path(), t.Addr)
}

func (t Target) host() string {
	if t.Host == "" {
		return "localhost"
	}
	return t.Host
}

func (t Target) path() string {
	if t.Path == "" {
		return "/"
	}
	return t.Path
}

// Targets turns a site's listen addresses ("host:port", ":port") into
// targets for host and path: an empty or unspecified host becomes
// loopback.
func Targets(host, path string, plain, tls []string) []Target {
	var out []Target
	add := func(addrs []string, isTLS bool) {
		for _, a := range addrs {
			ip, port, err := net.SplitHostPort(a)
			if err != nil {
				continue
			}
			switch ip {
			case "", "0.0.0.0":
				ip = "127.0.0.1"
			case "::":
				ip = "::1"
			}
			t := Target{Addr: net.JoinHostPort(ip, port), TLS: isTLS, Host: host, Path: path}
			dup := false
			for _, o := range out {
				dup = dup || o == t
			}
			if !dup {
				out = append(out, t)
			}
		}
	}
	add(plain, false)
	add(tls, true)
	return out
}

// Final is a Ready error that waiting will not cure (Arka serves a
// fallback configuration): the check fails at once.
type Final struct{ Err error }

func (f Final) Error() string { return f.Err.Error() }

// Process is the supervisor's view of Arka's process.
type Process struct {
	Started time.Time // start of the current process
	Stopped bool      // the supervisor gave up on it (it exited 0 or 125)
}

// Health checks, on a trial boot, that the new build's Arka works: within
// StartTimeout of Run, Arka reports itself ready (Ready: its configuration
// loaded as written, every listener bound, php-fpm up) and every target
// answers 2xx or 3xx; then, for Stable, the targets keep answering so and
// Arka's process does not restart. Arka restarting MaxRestarts times
// before it is healthy fails the check at once (a build whose Arka exits
// at start fails in seconds, not after StartTimeout).
type Health struct {
	Targets []Target
	Process func(context.Context) (Process, error) // nil: restarts are not watched
	// Ready returns nil when Arka reports itself ready, else why not (one
	// line); a Final error fails the check at once. nil: not asked.
	Ready        func() error
	ConfigErr    error         // Arka's configuration did not load; part of a failure's reason
	StartTimeout time.Duration // default 2 minutes
	Stable       time.Duration // default 10 s
	MaxRestarts  int           // default 5
	Interval     time.Duration // between probes, default 1 s
}

func (h *Health) defaults() {
	if h.StartTimeout == 0 {
		h.StartTimeout = 2 * time.Minute
	}
	if h.Stable == 0 {
		h.Stable = 10 * time.Second
	}
	if h.MaxRestarts == 0 {
		h.MaxRestarts = 5
	}
	if h.Interval == 0 {
		h.Interval = time.Second
	}
}

// Bound is the longest Run can take.
func (h Health) Bound() time.Duration {
	h.defaults()
	return h.StartTimeout + h.Stable + 2*h.Interval
}

// Run performs the check. It returns how long Arka took to answer on
// every target, or an error that says in one line why the build is not
// healthy.
func (h Health) Run(ctx context.Context) (time.Duration, error) {
	h.defaults()
	start := time.Now()
	client := &http.Client{
		Timeout: 3 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
			DisableKeepAlives: true,
			Proxy:             nil,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer client.CloseIdleConnections()
	starts := map[time.Time]bool{}
	var firstStart time.Time
	watch := func() error {
		if h.Process == nil {
			return nil
		}
		p, err := h.Process(ctx)
		if err != nil {
			return nil // the supervisor's status is advisory
		}
		if p.Stopped {
			return errors.New("Arka exited and its supervisor stopped it")
		}
		if !p.Started.IsZero() && !starts[p.Started] {
			starts[p.Started] = true
			if firstStart.IsZero() {
				firstStart = p.Started
			}
		}
		return nil
	}
	restarts := func() int { return max(len(starts)-1, 0) }
	reason := func(err error) error {
		if h.ConfigErr != nil {
			return fmt.Errorf("%v (Arka's configuration: %s)", err, oneLine(h.ConfigErr.Error()))
		}
		return err
	}
	tick := time.NewTicker(h.Interval)
	defer tick.Stop()
	wait := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			return nil
		}
	}

	// Phase 1: every target answers.
	var lastErr error
	for {
		if err := watch(); err != nil {
			return 0, reason(err)
		}
		if n := restarts(); n >= h.MaxRestarts {
			msg := fmt.Sprintf("Arka exited and was restarted %d times in %s without becoming healthy", n, time.Since(start).Round(time.Second))
			if lastErr != nil {
				msg += " (last check: " + oneLine(lastErr.Error()) + ")"
			}
			return 0, reason(errors.New(msg))
		}
		if len(h.Targets) > 0 {
			lastErr = h.probe(ctx, client)
			if lastErr == nil && h.Ready != nil {
				lastErr = h.Ready()
				var f Final
				if errors.As(lastErr, &f) {
					return 0, reason(lastErr)
				}
			}
			if lastErr == nil {
				break
			}
		} else {
			lastErr = errors.New("no address to check (Arka's configuration names none)")
		}
		if time.Since(start) >= h.StartTimeout {
			return 0, reason(fmt.Errorf("Arka was not healthy within %s: %v", h.StartTimeout, lastErr))
		}
		if err := wait(); err != nil {
			return 0, err
		}
	}
	healthy := time.Since(start)

	// Phase 2: it keeps answering, and its process does not change.
	seen := len(starts)
	stableFrom := time.Now()
	for time.Since(stableFrom) < h.Stable {
		if err := wait(); err != nil {
			return 0, err
		}
		if err := watch(); err != nil {
			return 0, reason(err)
		}
		if len(starts) != seen {
			return 0, reason(fmt.Errorf("Arka restarted %s after it first answered", time.Since(stableFrom).Round(time.Second)))
		}
		if err := h.probe(ctx, client); err != nil {
			return 0, reason(fmt.Errorf("Arka stopped answering well %s after it was healthy: %v", time.Since(stableFrom).Round(time.Second), err))
		}
	}
	return healthy, nil
}

// probe sends GET to every target; each must answer 2xx or 3xx
// (redirects are not followed: a site that sends plain HTTP to HTTPS
// passes).
func (h Health) probe(ctx context.Context, c *http.Client) error {
	for _, t := range h.Targets {
		scheme := "http"
		if t.TLS {
			scheme = "https"
		}
		req, err := http.NewRequestWithContext(ctx, "GET", scheme+"://"+t.Addr+t.path(), nil)
		if err != nil {
			return err
		}
		req.Host = t.host() // (no TLS server name is sent to an IP address: Arka picks the default site's certificate)
		resp, err := c.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %v", t, unwrapURLError(err))
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 399 {
			return fmt.Errorf("%s answered %s (a health URL must answer 2xx or 3xx; a site can name another with health_path)", t, resp.Status)
		}
	}
	return nil
}

func unwrapURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && strings.HasPrefix(err.Error(), "Get ") {
		return ue.Unwrap()
	}
	return err
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}
