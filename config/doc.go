// Package config reads Arka's site files: one TOML file per site (virtual
// host), or a directory of them, into typed, complete values.
//
// Loading (Load, LoadFiles, ParseFiles, Parse) has four stages, a file
// each, and reads nothing but the site files (no other file, no DNS):
//
//   - decode.go: the TOML into the schema (schema.go), each route's
//     handler into its type, with every key's position kept so that every
//     mistake is reported as "file:line:col: message" (errors.go);
//   - normalize.go: every default (defaults.go) applied and every path
//     made absolute, in one place;
//   - validate.go and one file per feature (acme.go, php.go, redirect.go,
//     routeopts.go, ...): every value checked, and parsed into its typed
//     form (netip.Prefix, ListenAddr, Upstream, NetAddr);
//   - crosscheck.go: conflicts between sites (addresses, names, defaults,
//     [global], php).
//
// A route's handler is a Handler, a closed set of types (*Static, *Proxy,
// *FastCGI, *Status, *Redirect, *Respond) the server builds with a type
// switch. What a handler receives is complete and valid; handlers check
// nothing again. Complete does the same for a handler built in Go.
//
// CheckEnvironment is the separate check of the machine: roots exist,
// CA files hold certificates (read once), logs are writable, php-fpm is
// there. arka -t, start and reload run it after Load.
//
// testdata/golden holds example site files with their loaded form or
// their errors; `go test ./config -run Golden -update` rewrites them.
package config
