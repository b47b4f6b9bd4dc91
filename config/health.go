package config

import "strings"

// DefaultHealthPath is Site.HealthPath when the site file names none.
const DefaultHealthPath = "/"

// healthPath checks health_path: an origin-form request
// target (RFC 9112 section 3.2.1), a path starting with "/" and an
// optional query, without spaces or a fragment.
func (v *validator) healthPath(s *Site) {
	p := s.HealthPath
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \t#\r\n") {
		v.errAt("health_path", "health_path %q: want a path such as \"/healthz\" (with an optional ?query)", p)
	}
}
