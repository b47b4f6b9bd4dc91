package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/arkaweb/arka/board/led"
	"github.com/arkaweb/arka/config"
)

// Per-site conditions: a site that fails to load makes the activity LED show
// Degraded, whatever the mode (plain, or -appliance with its fallbacks), with
// one condition per site file, "site:" + the file's base name
// (SiteCondition). They follow the same problems the status page lists:
//
//   - the mistakes of the last load of the site files (SetConfigError: a
//     reload refused, or in appliance mode site files not served as
//     written), by the file each config.Error names;
//   - a certificate or key that does not load under Options.KeepServing
//     (the "tls FILE" problems, replaced at every Apply).
//
// A condition clears when its file's problems do: a reload that loads it,
// a certificate that loads at the next Apply. ACME certificates that cannot
// be obtained are "cert:NAME" conditions (certConditions).

// siteConditionPrefix starts the name of every per-site condition; the
// server owns all conditions with it.
const siteConditionPrefix = "site:"

// SiteCondition is the name of the LED condition of the site file file:
// "site:" and its base name ("/perm/arka/sites/blog.toml" -> "site:blog.toml").
func SiteCondition(file string) string { return siteConditionPrefix + filepath.Base(file) }

// SetConfigError records why the site files as written do not serve, from
// the last attempt to load them (a start, a reload), or that they do (err
// nil). The status page lists err's lines as the "config" problem; each site
// file that a config.Error in err names becomes a Degraded "site:NAME"
// condition with its first mistake, and the conditions of files without
// mistakes are cleared.
func (s *Server) SetConfigError(err error) {
	s.probMu.Lock()
	defer s.probMu.Unlock()
	s.siteErrs = nil
	if err == nil {
		s.setProblemLocked("config", "")
	} else {
		var lines []string
		var ce config.Errors
		if errors.As(err, &ce) {
			for _, e := range ce {
				lines = append(lines, e.Error())
				if e.File != "" {
					if s.siteErrs == nil {
						s.siteErrs = map[string][]string{}
					}
					s.siteErrs[e.File] = append(s.siteErrs[e.File], e.Error())
				}
			}
		} else {
			lines = []string{err.Error()}
		}
		s.setProblemLocked("config", strings.Join(lines, "\n"))
	}
	s.siteConditionsLocked()
}

// siteConditionsLocked makes the "site:NAME" conditions those of the site
// files with mistakes (siteErrs) or with a certificate that did not load
// ("tls FILE" problems). probMu is held.
func (s *Server) siteConditionsLocked() {
	conds := s.o.Conditions
	if conds == nil {
		return
	}
	msgs := map[string][]string{} // condition name -> messages
	for file, errs := range s.siteErrs {
		n := SiteCondition(file)
		msg := errs[0]
		if len(errs) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(errs)-1)
		}
		msgs[n] = append(msgs[n], "does not load: "+msg)
	}
	for k, v := range s.problems {
		if file, ok := strings.CutPrefix(k, "tls "); ok {
			n := SiteCondition(file)
			line, _, _ := strings.Cut(v, "\n")
			msgs[n] = append(msgs[n], line)
		}
	}
	for n, m := range msgs {
		sort.Strings(m) // one order, so that an unchanged problem keeps its Since
		conds.Set(n, led.Degraded, strings.Join(m, "; "))
	}
	for _, c := range conds.List() {
		if strings.HasPrefix(c.Name, siteConditionPrefix) && msgs[c.Name] == nil {
			conds.Clear(c.Name)
		}
	}
}
