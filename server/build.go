package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/encoding"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/fastcgi"
	"github.com/arkaweb/arka/server/internal/proxy"
	"github.com/arkaweb/arka/server/internal/respond"
	"github.com/arkaweb/arka/server/internal/static"
	"github.com/arkaweb/arka/server/status"
)

// build compiles validated sites into a table: certificates loaded (or
// generated when dryRun is false), handlers constructed, middleware applied.
// Errors are config.Errors located at the offending route or key.
func (s *Server) build(sites []*config.Site, dryRun bool) (*table, error) {
	t := newTable()
	t.sites = sites
	var errs config.Errors
	fail := func(cs *config.Site, line, col int, format string, args ...any) {
		errs = append(errs, &config.Error{File: cs.File, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
	}
	for _, cs := range sites {
		st := &site{cfg: cs, reqID: cs.RequestID, tls13: cs.TLS.MinVersion == "1.3", stats: s.routeStats(cs, siteRoute)}
		httpsOptions(st, cs)
		st.maxBody = int64(cs.Limits.MaxBodySize)
		if len(cs.TLS.Listen) > 0 {
			switch {
			case cs.TLS.Cert != "":
				c, err := LoadCertificate(cs)
				if err != nil && s.o.KeepServing && !dryRun {
					if prev := s.servedCert(cs); prev != nil {
						c, err = s.keepCert(t, cs, err, prev), nil
					} else if c, err = s.tlsFallback(t, cs, err); err == nil {
						t.selfCertFor(st, c)
						c = nil
					}
				}
				if err != nil {
					errs = append(errs, err.(config.Errors)...)
				}
				st.cert = c
				if c != nil {
					t.certs[cs.File] = c
				}
			case !dryRun:
				c, err := selfSigned(s.o.StateDir, cs.ServerNames, s.clock.Wall())
				if c == nil {
					fail(cs, 0, 0, "tls: generating a self-signed certificate in %s: %v", s.o.StateDir, err)
				} else {
					if err != nil {
						s.warnNotStored(cs.File, err)
					}
					t.selfCertFor(st, c)
				}
			}
		}
		if p, err := errpage.LoadPages(cs.Errors.Root, cs.Errors.Pages); err != nil {
			line, col := cs.Position("errors")
			fail(cs, line, col, "errors: %v", err)
		} else {
			st.pages = p
		}
		if cs.Log.Enabled && !dryRun {
			sink, err := s.sink(t, cs.Log.Path)
			if err != nil {
				fail(cs, 0, 0, "log: %v", err)
			} else {
				st.log = &accessLog{sink: sink, json: cs.Log.Format == "json", trusted: logTrusted(cs), field: cs.ClientIPHeader}
			}
		}
		for i := range cs.Routes {
			cr := &cs.Routes[i]
			h, err := s.handler(cs, cr, t)
			if err != nil {
				fail(cs, cr.Line, cr.Col, "route %q: %s handler: %v", cr.Path, cr.Handler.Type(), err)
				continue
			}
			trusted := trustedFor(cs, cr)
			h, hdr := s.routeOptions(cs, cr, h, trusted)
			tunnels, allow := methodsOf(cr.Handler)
			st.routes = append(st.routes, &route{prefix: cr.Path, h: h, stats: s.routeStats(cs, cr), hdr: hdr, trusted: trusted,
				intercept: cs.Errors.InterceptErrors && intercepts(cr.Handler), tunnels: tunnels, allow: allow})
		}
		sortRoutes(st.routes)
		add := func(addr string, isTLS bool) {
			v := t.vhosts[addr]
			if v == nil {
				v = &vhosts{t: t, tls: isTLS, exact: map[string]*site{}}
				t.vhosts[addr] = v
			}
			if v.first == nil {
				v.first = st
			}
			if cs.Default || len(cs.ServerNames) == 0 && v.def == nil {
				v.def = st
			}
			for _, n := range cs.ServerNames {
				if suf, ok := strings.CutPrefix(n, "*"); ok {
					v.wild = append(v.wild, wildSite{suf, st})
				} else {
					v.exact[n] = st
				}
			}
		}
		for _, a := range cs.Listen {
			add(a.String(), false)
		}
		for _, a := range cs.TLS.Listen {
			add(a.String(), true)
		}
	}
	for _, v := range t.vhosts {
		sortWild(v.wild)
	}
	if len(errs) > 0 {
		t.close()
		return nil, errs
	}
	return t, nil
}

// siteRoute names the counters of a site's responses that no route made
// (site.stats).
var siteRoute = &config.Route{Path: "-", Handler: &config.Builtin{Name: "server"}}

func sortWild(w []wildSite) {
	for i := 1; i < len(w); i++ {
		for j := i; j > 0 && len(w[j].suffix) > len(w[j-1].suffix); j-- {
			w[j], w[j-1] = w[j-1], w[j]
		}
	}
}

// handler constructs one route's handler with its middleware.
func (s *Server) handler(cs *config.Site, cr *config.Route, t *table) (http.Handler, error) {
	comp := cs.Compression
	switch hc := cr.Handler.(type) {
	case *config.Static:
		h, err := static.New(hc, static.Options{
			Cache:       s.cache,
			Compress:    compresses(cs, cr),
			MinSize:     int64(comp.MinSize),
			Constrained: s.constrained,
			Logger:      s.log,
		})
		if err != nil {
			return nil, err
		}
		t.closers = append(t.closers, h)
		return h, nil
	case *config.Status:
		h, err := status.New(status.Options{Allow: hc.Allow, Source: s, History: s.history, Trusted: trustedFor(cs, cr), ClientIPHeader: cs.ClientIPHeader})
		if err != nil {
			return nil, err
		}
		return s.dynamic(cs, cr, h), nil
	case *config.FastCGI:
		return s.fastcgiHandler(cs, cr, hc, t)
	case *config.Redirect:
		return respond.NewRedirect(cr.Path, hc, cs.TrustedProxies), nil
	case *config.Respond:
		return respond.New(hc), nil
	case *config.Proxy:
		ph, err := proxy.New(cr.Path, hc, proxy.Options{
			Logger:         s.log,
			Site:           cs.File,
			Keepalive:      s.o.Budget.ProxyKeepAlive, // "auto"; zero means config.DefaultProxyKeepalive
			Trusted:        cs.TrustedProxies,
			ClientIPHeader: cs.ClientIPHeader,
			TempDir:        s.o.SpoolDir,
			Spool:          s.spool,
			RequestID:      cs.RequestID, // set by dispatch before the handler runs
			Allow:          allowMethods,
		})
		if err != nil {
			return nil, err
		}
		t.closers = append(t.closers, ph)
		t.proxies = append(t.proxies, ph)
		return noCodingForTunnels(ph, s.dynamic(cs, cr, ph)), nil
	case *config.Builtin:
		switch hc.Name {
		case problemsHandlerType:
			return problemsPage{s: s}, nil
		case unavailableHandlerType:
			return problemsPage{s: s, site: true}, nil
		}
	}
	return nil, fmt.Errorf("unknown handler type %q", cr.Handler.Type())
}

// intercepts reports whether a handler's error responses may be replaced
// by the site's error pages ([errors] intercept_errors): those of
// upstreams and scripts.
func intercepts(h config.Handler) bool {
	switch h.(type) {
	case *config.Proxy, *config.FastCGI:
		return true
	}
	return false
}

// methodsOf reports whether a route of handler h takes extended CONNECT
// (RFC 8441: only a proxy carries a WebSocket to its upstream), and the
// Allow field (RFC 9110 section 10.2.1) of the route's 405 to a CONNECT:
// the methods the handler answers.
func methodsOf(h config.Handler) (tunnels bool, allow []string) {
	switch h.(type) {
	case *config.Proxy:
		return true, allowMethods
	case *config.Static:
		return false, []string{static.Methods}
	case *config.Status:
		return false, []string{status.Methods}
	}
	return false, allowMethods
}

// noCodingForTunnels sends CONNECT requests (RFC 8441 WebSocket tunnels
// over HTTP/2, the only CONNECT dispatch lets through, and only to proxy
// routes) to h directly: a tunnel carries frames, not a representation,
// so content coding must not touch it.
func noCodingForTunnels(h, coded http.Handler) http.Handler {
	if coded == h {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			h.ServeHTTP(w, r)
			return
		}
		coded.ServeHTTP(w, r)
	})
}

// fastcgiHandler builds a FastCGI route: its pool and queue sized from the
// route or else the board budget, and a static handler on the same root
// for the files that are not scripts (CSS, images of a PHP application),
// as nginx's try_files $uri does.
func (s *Server) fastcgiHandler(cs *config.Site, cr *config.Route, fc *config.FastCGI, t *table) (http.Handler, error) {
	// The files of the root are served as a static route of the same root
	// with its defaults would serve them.
	fs := &config.Static{Root: fc.Root}
	if err := config.Complete(fs); err != nil {
		return nil, err
	}
	files, err := static.New(fs, static.Options{
		Cache:       s.cache,
		Compress:    compresses(cs, cr),
		MinSize:     int64(cs.Compression.MinSize),
		Constrained: s.constrained,
		Logger:      s.log,
	})
	if err != nil {
		return nil, err
	}
	name := "default"
	if len(cs.ServerNames) > 0 {
		name = cs.ServerNames[0]
	}
	var phpAddr string
	var phpConns int
	var phpMaxBody int64
	if s.o.PHP != nil {
		phpAddr, phpConns = s.o.PHP.Address(), s.o.PHP.MaxChildren()
		if p := config.PHPOf(t.sites); p != nil {
			phpMaxBody = p.PostMaxSize()
		}
	}
	h, err := fastcgi.New(cr.Path, fc, fastcgi.Options{
		Logger:           s.log.With("site", name),
		DefaultMaxConns:  s.o.Budget.FastCGIMaxConns,
		DefaultQueueSize: s.o.Budget.FastCGIQueue,
		PHPAddress:       phpAddr,
		PHPMaxConns:      phpConns,
		PHPMaxBody:       phpMaxBody,
		ServerSoftware:   "arka/" + Version,
		Static:           files,
		Pools:            &s.fcgiPools,
		TempDir:          s.o.SpoolDir,
		Spool:            s.spool,
	})
	if err != nil {
		files.Close()
		return nil, err
	}
	// Closed in this order: the FastCGI handler waits for its requests,
	// some of which the file handler may be serving.
	t.closers = append(t.closers, h, files)
	t.fastcgi = append(t.fastcgi, h)
	return s.dynamic(cs, cr, h), nil
}

// compresses reports whether Arka content-codes the route's responses:
// the site's [compression] enabled, unless the route says compression = false.
func compresses(cs *config.Site, cr *config.Route) bool {
	return cs.Compression.Enabled && (cr.Options.Compression == nil || *cr.Options.Compression)
}

// dynamic wraps a handler of responses made per request with content
// coding, when the site and route enable compression.
func (s *Server) dynamic(cs *config.Site, cr *config.Route, h http.Handler) http.Handler {
	c := cs.Compression
	if !compresses(cs, cr) {
		return h
	}
	var lv [encoding.NumCodings]int
	lv[encoding.Zstd] = c.ZstdLevel
	lv[encoding.Brotli] = c.BrotliLevel
	lv[encoding.Gzip] = c.GzipLevel
	m := encoding.New(encoding.Options{MinSize: int64(c.MinSize), Levels: lv, Pools: s.pools, Constrained: s.constrained,
		CompressCookies: cr.Options.Compression != nil && *cr.Options.Compression})
	return m.Wrap(h)
}
