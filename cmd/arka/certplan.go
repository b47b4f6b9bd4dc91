package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/arkaweb/arka/config"
)

// printCertPlan says, for `arka -t`, where each TLS name's certificate
// comes from: a file, an ACME CA, or self-signed (and why).
func printCertPlan(w io.Writer, sites []*config.Site) {
	for _, s := range sites {
		plan := config.CertificatePlan(s)
		if len(s.TLS.Listen) > 0 && len(s.ServerNames) == 0 {
			fmt.Fprintf(w, "%s: tls: (any name): self-signed (the site lists no server_names)\n", filepath.Base(s.File))
		}
		for _, p := range plan {
			switch {
			case p.ACME:
				fmt.Fprintf(w, "%s: tls: %s: ACME from %s\n", filepath.Base(s.File), p.Name, s.ACME.CA)
			case s.TLS.Cert != "":
				fmt.Fprintf(w, "%s: tls: %s: %s\n", filepath.Base(s.File), p.Name, p.Why)
			default:
				fmt.Fprintf(w, "%s: tls: %s: self-signed (%s)\n", filepath.Base(s.File), p.Name, p.Why)
			}
		}
	}
}
