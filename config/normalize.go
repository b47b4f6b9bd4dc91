package config

import (
	"fmt"
	"net/netip"
	"time"
)

// Stage 2 of loading a site file: every default applied, in one place, and
// every path made absolute. After it a Site says everything explicitly:
// what a handler receives is complete, and the golden files
// (testdata/golden) show each default. Validation (validate.go) runs on
// the normalized site.
//
// A key left out and a key written with its zero value are told apart
// (v.has): only a key left out takes the default. A written zero is kept,
// as the user's value, and validation then accepts it where it is a real
// value (compression = { enabled = false }, min_size = "0B",
// brotli_level = 0) or reports it where it is not (zstd_level = 0,
// status = 0, index = [], format = "", body_timeout = "0s"). Durations
// of handlers written "0s" still mean the default (orDefault).

// normalize applies the site's defaults (see defaults.go for the values).
func (v *validator) normalize(s *Site) {
	if s.HealthPath == "" {
		s.HealthPath = DefaultHealthPath
	}
	// listen = [] and a [tls] table without an address are mistakes that
	// validation reports; only a site that names no address at all gets
	// the default one.
	if !v.has("listen") && len(v.written.tlsListen) == 0 && (!v.has("tls") || s.TLS.Cert != "") {
		v.written.listen = []string{DefaultListen}
	}
	t := &s.TLS
	t.Cert, t.Key, t.CARoot = v.abs(t.Cert), v.abs(t.Key), v.abs(t.CARoot)
	if !v.has("tls.min_version") {
		t.MinVersion = DefaultTLSMinVersion
	}
	if !v.has("log.format") {
		s.Log.Format = DefaultLogFormat
	}
	if p := s.Log.Path; p != "" && p != "-" {
		s.Log.Path = v.abs(p)
	}
	c := &s.Compression
	if !v.has("compression.enabled") {
		c.Enabled = true
	}
	if !v.has("compression.min_size") {
		c.MinSize = DefaultCompressionMinSize
	}
	if !v.has("compression.zstd_level") {
		c.ZstdLevel = DefaultZstdLevel
	}
	if !v.has("compression.brotli_level") {
		c.BrotliLevel = DefaultBrotliLevel
	}
	if !v.has("compression.gzip_level") {
		c.GzipLevel = DefaultGzipLevel
	}
	if s.Errors.Root != "" || len(s.Errors.Pages) > 0 {
		s.Errors.Root = v.abs(s.Errors.Root)
	}
	if g := s.Global; g != nil && g.ACME != nil {
		g.ACME.CARoot = v.abs(g.ACME.CARoot)
	}
	if g := s.Global; g != nil && g.Fan != nil {
		v.normalizeFan("global.fan", g.Fan)
	}
	if g := s.Global; g != nil {
		v.normalizeClientBody(g)
	}
	for i := range s.Routes {
		r := &s.Routes[i]
		if b := r.Options.BasicAuth; b != nil && b.Realm == "" {
			b.Realm = DefaultBasicAuthRealm
		}
		v.normalizeHandler(fmt.Sprintf("routes[%d].handler", r.index), r.Handler)
	}
}

// normalizeHandler applies the defaults of a route's handler (at hp, the
// handler's key path) and makes its paths absolute (relative to the site
// file's directory).
func (v *validator) normalizeHandler(hp string, h Handler) {
	switch h := h.(type) {
	case *Static:
		h.Root = v.abs(h.Root)
		if len(h.Index) == 0 && !v.has(hp+".index") {
			h.Index = StringList{DefaultIndex}
		}
		if h.Precompressed == nil {
			h.Precompressed = ptr(true)
		}
	case *Proxy:
		if h.ForwardHeaders == nil {
			h.ForwardHeaders = ptr(true)
		}
		if h.LB == "" {
			h.LB = DefaultProxyLB
		}
		orDefault(&h.ConnectTimeout, DefaultProxyConnect)
		orDefault(&h.ResponseHeaderTimeout, DefaultProxyResponseHeader)
		orDefault(&h.IdleTimeout, DefaultProxyIdle)
		orDefault(&h.FailTimeout, DefaultProxyFail)
		if hc := h.Health; hc != nil {
			orDefault(&hc.Interval, DefaultHealthInterval)
			orDefault(&hc.Timeout, DefaultHealthTimeout)
		}
		if h.TLSCA != "" {
			h.TLSCA = v.abs(h.TLSCA)
		}
		if h.RequestBuffering == nil {
			h.RequestBuffering = ptr(true)
		}
		if h.ResponseBuffering == nil {
			h.ResponseBuffering = ptr(true)
		}
	case *FastCGI:
		if h.Address == "" {
			h.Address = FastCGIPHP
		}
		h.Root = v.abs(h.Root)
		if len(h.Index) == 0 {
			h.Index = StringList{DefaultFastCGIIndex}
		}
		if len(h.SplitPath) == 0 {
			h.SplitPath = StringList{DefaultSplitPath}
		}
		orDefault(&h.Queue.Timeout, DefaultFastCGIQueueWait)
		orDefault(&h.ConnectTimeout, DefaultFastCGIConnect)
		orDefault(&h.ReadTimeout, DefaultFastCGIRead)
		if h.RequestBuffering == nil {
			h.RequestBuffering = ptr(true)
		}
		if h.ResponseBuffering == nil {
			h.ResponseBuffering = ptr(true)
		}
	case *Status:
		if len(h.Allow) == 0 {
			h.Allow = DefaultStatusAllowPrefixes()
		}
	case *Redirect:
		if h.Status == 0 && !v.has(hp+".status") {
			h.Status = DefaultRedirectStatus
		}
	case *Respond:
		if h.Status == 0 && !v.has(hp+".status") {
			h.Status = DefaultRespondStatus
		}
		if h.ContentType == "" {
			h.ContentType = DefaultRespondType
		}
	}
}

// orDefault sets a duration left out (or written "0s") to its default.
func orDefault(d *Duration, def time.Duration) {
	if *d == 0 {
		*d = Duration(def)
	}
}

func ptr[T any](v T) *T { return &v }

// DefaultStatusAllowPrefixes is DefaultStatusAllow parsed (a fresh slice).
func DefaultStatusAllowPrefixes() []netip.Prefix {
	out := make([]netip.Prefix, len(DefaultStatusAllow))
	for i, s := range DefaultStatusAllow {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Complete normalizes and validates a handler configuration built in Go
// rather than read from a site file (tests, handlers a program sets up
// itself), as Load does for a route: defaults applied to what is left at
// its zero value, addresses and networks parsed. Paths must be absolute.
// It returns the mistakes as Errors whose File is the handler's type.
func Complete(h Handler) error {
	v := &validator{file: h.Type(), pos: newPosIndex(nil)}
	v.normalizeHandler("", h)
	v.handler("", h, nil)
	if len(v.errs) > 0 {
		return v.errs
	}
	return nil
}
