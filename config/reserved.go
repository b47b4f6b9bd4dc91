package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ReservedPort is a TCP port the machine keeps for something other than
// its sites, e.g. an appliance's web UI (gokrazy's, 8080) or its
// update/deploy API (8443): a site may not listen on it, on any address.
type ReservedPort struct {
	Port uint16
	What string // what uses it, e.g. "the device's update/deploy API"
}

// ParseReservedPorts parses `arka -reserved-ports`: comma-separated
// PORT=WHAT entries, e.g. "8080=the device's web UI,8443=the device's
// update/deploy API". "" is none.
func ParseReservedPorts(s string) ([]ReservedPort, error) {
	var out []ReservedPort
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, e := range strings.Split(s, ",") {
		port, what, ok := strings.Cut(strings.TrimSpace(e), "=")
		p, err := strconv.Atoi(strings.TrimSpace(port))
		what = strings.TrimSpace(what)
		if !ok || err != nil || p < 1 || p > 65535 || what == "" {
			return nil, fmt.Errorf("reserved port %q: want PORT=WHAT, PORT from 1 to 65535", strings.TrimSpace(e))
		}
		out = append(out, ReservedPort{Port: uint16(p), What: what})
	}
	return out, nil
}

// CheckReserved reports every listen and tls.listen address of sites on a
// reserved port, at its entry ("port 8443 is the device's update/deploy
// API; a site cannot listen on it"), as Errors; nil if there is none.
// `arka -t -reserved-ports …` runs it: an appliance's deploy check, where
// such a site would pass the check and then fail to bind.
func CheckReserved(sites []*Site, reserved []ReservedPort) error {
	if len(reserved) == 0 {
		return nil
	}
	what := map[uint16]string{}
	for _, r := range reserved {
		what[r.Port] = r.What
	}
	var errs Errors
	for _, s := range sites {
		v := &validator{file: s.File, pos: s.pos}
		for _, side := range []struct {
			key   string
			addrs []ListenAddr
		}{{"listen", s.Listen}, {"tls.listen", s.TLS.Listen}} {
			for i, a := range side.addrs {
				if w, ok := what[a.Port]; ok {
					v.errAt(fmt.Sprintf("%s[%d]", side.key, i), "port %d is %s; a site cannot listen on it", a.Port, w)
				}
			}
		}
		errs = append(errs, v.errs...)
	}
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].File != errs[j].File {
			return errs[i].File < errs[j].File
		}
		return errs[i].Line < errs[j].Line
	})
	return errs
}
