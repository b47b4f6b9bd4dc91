package config

import (
	"fmt"
	"net"
	"sort"
	"strings"
)

// crossCheck finds conflicts between sites: two defaults on one address,
// one name claimed twice on one address, an address used both with and
// without TLS.
func crossCheck(sites []*Site) Errors {
	var errs Errors
	at := func(s *Site, path string) (int, int) { return s.pos.at(path) }
	type claim struct {
		site *Site
		path string
	}
	var global *Site
	for _, s := range sites {
		if s.Global == nil {
			continue
		}
		if global != nil {
			l, col := at(s, "global")
			gl, _ := at(global, "global")
			errs = append(errs, &Error{File: s.File, Line: l, Col: col,
				Msg: fmt.Sprintf("a second [global] table (the first is in %s:%d); keep one", global.File, gl)})
			continue
		}
		global = s
	}
	defaults := map[string]claim{}
	nameless := map[string][]claim{} // address -> sites without server_names that are not default
	var namelessAddrs []string
	names := map[string]claim{}
	kinds := map[string]claim{} // address -> first site, path tells tls or not
	for _, s := range sites {
		// An address in both listen and tls.listen (a mistake reported
		// once, below) is one claim of the site's default and names.
		claimed := map[string]bool{}
		addrs := func(tlsSide bool) []string {
			if tlsSide {
				return ListenStrings(s.TLS.Listen)
			}
			return ListenStrings(s.Listen)
		}
		for _, tlsSide := range []bool{false, true} {
			prefix := "listen"
			if tlsSide {
				prefix = "tls.listen"
			}
			for i, a := range addrs(tlsSide) {
				path := fmt.Sprintf("%s[%d]", prefix, i)
				if c, ok := kinds[a]; ok && strings.HasPrefix(c.path, "tls.") != tlsSide {
					l, col := at(s, path)
					ol, oc := at(c.site, c.path)
					msg := fmt.Sprintf("%s is used with TLS in one site and without in another (%s:%d)", a, c.site.File, ol)
					if c.site == s {
						msg = fmt.Sprintf("%s is in both listen (at %d:%d) and tls.listen: an address serves either plain HTTP or HTTPS", a, ol, oc)
					}
					errs = append(errs, &Error{File: s.File, Line: l, Col: col, Msg: msg})
				} else if !ok {
					kinds[a] = claim{s, path}
				}
				if claimed[a] {
					continue
				}
				claimed[a] = true
				if !s.Default && len(s.ServerNames) == 0 {
					if len(nameless[a]) == 0 {
						namelessAddrs = append(namelessAddrs, a)
					}
					nameless[a] = append(nameless[a], claim{s, path})
				}
				if s.Default {
					if c, ok := defaults[a]; ok && c.site != s {
						l, col := at(s, "default")
						ol, _ := at(c.site, "default")
						errs = append(errs, &Error{File: s.File, Line: l, Col: col,
							Msg: fmt.Sprintf("a second default site for %s (the first is %s:%d)", a, c.site.File, ol)})
					} else {
						defaults[a] = claim{s, "default"}
					}
				}
				for j, n := range s.ServerNames {
					key := a + " " + n
					np := fmt.Sprintf("server_names[%d]", j)
					if c, ok := names[key]; ok && c.site != s {
						l, col := at(s, np)
						ol, _ := at(c.site, c.path)
						errs = append(errs, &Error{File: s.File, Line: l, Col: col,
							Msg: fmt.Sprintf("server name %q on %s is already claimed by %s:%d", n, a, c.site.File, ol)})
					} else if !ok {
						names[key] = claim{s, np}
					}
				}
			}
		}
	}
	// A site without server_names answers only as its address's default
	// (for any name): when another site is the default, or another such
	// site came first, it can never be reached.
	for _, a := range namelessAddrs {
		list := nameless[a]
		first := claim{}
		if d, ok := defaults[a]; ok {
			first = d
		} else {
			first, list = list[0], list[1:]
		}
		for _, c := range list {
			if c.site == first.site {
				continue
			}
			l, col := at(c.site, c.path)
			fl, _ := at(first.site, first.path)
			errs = append(errs, &Error{File: c.site.File, Line: l, Col: col,
				Msg: fmt.Sprintf("a site without server_names answers only as the default for %s, and %s:%d already is: this one would never be reached; give it server_names", a, first.site.File, fl)})
		}
	}
	// A wildcard address and a specific address on the same port cannot both
	// be bound; say so rather than failing at bind time.
	byPort := map[string][]string{}
	for a := range kinds {
		h, p, _ := net.SplitHostPort(a)
		_ = h
		byPort[p] = append(byPort[p], a)
	}
	for _, as := range byPort {
		sort.Strings(as)
		var wild, specific string
		for _, a := range as {
			h, _, _ := net.SplitHostPort(a)
			if h == "" || h == "0.0.0.0" || h == "::" {
				if wild != "" {
					// ":80", "0.0.0.0:80" and "[::]:80" are one socket
					// (Go binds each for IPv4 and IPv6): the second
					// would fail to bind.
					c := kinds[a]
					l, col := at(c.site, c.path)
					w := kinds[wild]
					wl, _ := at(w.site, w.path)
					errs = append(errs, &Error{File: c.site.File, Line: l, Col: col,
						Msg: fmt.Sprintf("%s and %s (%s:%d) are one address: both mean every address, IPv4 and IPv6; write the same one everywhere", a, wild, w.site.File, wl)})
					continue
				}
				wild = a
			} else if specific == "" {
				specific = a
			}
		}
		if wild != "" && specific != "" {
			c := kinds[specific]
			l, col := at(c.site, c.path)
			w := kinds[wild]
			wl, _ := at(w.site, w.path)
			errs = append(errs, &Error{File: c.site.File, Line: l, Col: col,
				Msg: fmt.Sprintf("%s overlaps %s (%s:%d); give both sites the same listen address and tell them apart with server_names", specific, wild, w.site.File, wl)})
		}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].File != errs[j].File {
			return errs[i].File < errs[j].File
		}
		return errs[i].Line < errs[j].Line
	})
	return errs
}
