package config

import (
	"path/filepath"
	"strconv"
	"strings"
)

// ErrorPages replaces Arka's built-in error pages for a site:
//
//	[errors]
//	root = "/srv/errors"
//	pages = { "404" = "404.html", "5xx" = "5xx.html" }
//	intercept_errors = true
//
// A page is sent with the error's own status (never 200), for the errors
// Arka makes itself (404 of a static route, 403 of allow, 401, 502 and 504
// of a proxy...) and, with InterceptErrors, in place of the body of an
// error an upstream or PHP answered.
type ErrorPages struct {
	// Root is the directory of the pages; required with Pages.
	Root string `toml:"root"`
	// Pages maps a status ("404") or a class ("4xx", "5xx") to a file
	// under Root. A status wins over its class.
	Pages map[string]string `toml:"pages"`
	// InterceptErrors also replaces the bodies of 4xx and 5xx responses
	// from proxy and fastcgi routes that have a page (their status and
	// other fields are kept). Default false: applications' own error
	// bodies (JSON APIs) go through.
	InterceptErrors bool `toml:"intercept_errors"`
}

// errorPages validates the [errors] table.
func (v *validator) errorPages(e *ErrorPages) {
	if e.Root == "" && len(e.Pages) == 0 {
		if e.InterceptErrors {
			v.errAt("errors.intercept_errors", "intercept_errors needs pages = { ... } and a root")
		}
		return
	}
	v.dirGiven("errors", "root", e.Root) // a directory: CheckEnvironment
	if len(e.Pages) == 0 {
		v.errAt("errors", "errors has a root but no pages (pages = { \"404\" = \"404.html\", \"5xx\" = \"5xx.html\" })")
	}
	for _, key := range sortedKeys(e.Pages) {
		at := errorPageKey(key)
		switch c, err := strconv.Atoi(key); {
		case key == "4xx" || key == "5xx":
		case err != nil || c < 400 || c > 599 || len(key) != 3:
			v.errAt(at, "error page key %q: use a status from 400 to 599 or a class, \"4xx\" or \"5xx\"", key)
			continue
		}
		name := e.Pages[key]
		if name == "" || filepath.IsAbs(name) || hasDotSegment(filepath.ToSlash(name)) {
			v.errAt(at, "error page %q must be a file name under root %s", name, e.Root)
		}
	}
}

// errorPageKey is where the page of key is in the site file.
func errorPageKey(key string) string {
	if strings.Contains(key, ".") {
		return "errors.pages"
	}
	return "errors.pages." + key
}
