// Package images holds the per-board image definitions (boards/*.toml: which
// kernel, firmware and EEPROM modules at which pinned versions, the kernel
// command line) and the default site baked into every image (site/: the
// site files for /etc/arka/sites and the "your Arka is working" page for
// /etc/arka/www). Build output goes to images/out/ (git-ignored).
package images

import "embed"

// Boards holds boards/<name>.toml.
//
//go:embed boards/*.toml
var Boards embed.FS

// Site holds the default site: sites/*.toml and www/.
//
//go:embed site
var Site embed.FS
