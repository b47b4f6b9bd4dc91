package main

import (
	"errors"
	"sort"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server"
)

// checkEnvironment is config.CheckEnvironment plus, when that fails, the
// sites' TLS certificates (server.LoadCertificate), so `arka -t` and a
// failed start list every problem of the machine at once. When the
// environment is fine the certificates are loaded once, later, by the
// server that builds the sites.
func checkEnvironment(sites []*config.Site) error {
	err := config.CheckEnvironment(sites)
	var errs config.Errors
	if !errors.As(err, &errs) {
		return err
	}
	errs = append(config.Errors(nil), errs...)
	for _, s := range sites {
		var ce config.Errors
		if _, cerr := server.LoadCertificate(s); errors.As(cerr, &ce) {
			errs = append(errs, ce...)
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
