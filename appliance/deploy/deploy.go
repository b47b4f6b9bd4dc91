// Package deploy puts a site on a running appliance over the network:
// `arka-appliance deploy --host NAME DIR` (Client) sends a directory with
// sites/*.toml and the content they point at to arka-init (Store), behind
// the device password on gokrazy's web UI listener, the channel updates use.
//
// The device keeps generations under /perm/arka/generations/N/. A deploy
// sends a manifest (every file's path, size, mode and SHA-256) and only the
// files whose content the current generation does not have; the device
// builds generation N+1 from those and hard links to unchanged files,
// checks it as `arka -t` would (mistakes come back as
// "sites/x.toml:3:5: message" and nothing changes), switches the symlink
// /perm/arka/site to it atomically (rename(2)) and has Arka reload (SIGHUP:
// the old configuration serves until the new one is ready). The previous
// generation is kept for Rollback; older ones are deleted. PHP's data
// directory lives in Arka's state directory, not in a generation: a deploy
// never touches it.
package deploy

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// Paths of the device API (behind gokrazy's web UI password).
const (
	PathState    = "/arka/deploy"          // GET: State
	PathDeploy   = "/arka/deploy"          // POST: a tar stream, manifest first
	PathRollback = "/arka/deploy/rollback" // POST: back to the previous generation
)

// ManifestName is the first entry of the tar stream a deploy sends.
const ManifestName = ".arka-manifest.json"

// File is one file of a site.
type File struct {
	Path   string `json:"path"`   // slash-separated, relative to the site directory
	Size   int64  `json:"size"`   // bytes
	Mode   uint32 `json:"mode"`   // permission bits (0644 or 0755 on the device)
	SHA256 string `json:"sha256"` // hex
}

// Manifest lists a whole site and who sends it.
type Manifest struct {
	Files []File `json:"files"`
	From  string `json:"from"` // the sending machine and user, e.g. "alice@laptop"
}

// Generation describes one deployed site.
type Generation struct {
	ID       int       `json:"id"`
	Deployed time.Time `json:"deployed"`
	From     string    `json:"from"`
	Files    int       `json:"files"`
	Bytes    int64     `json:"bytes"`
	Sent     int64     `json:"sent"` // bytes of content that travelled for this deploy
	// Manifest is the generation's file list (in GET /arka/deploy only for
	// the current generation).
	Manifest []File `json:"manifest,omitempty"`
}

// State is what GET /arka/deploy returns.
type State struct {
	Current  *Generation `json:"current,omitempty"`  // nil: the site baked into the image serves
	Previous *Generation `json:"previous,omitempty"` // what Rollback returns to
	// LastError is the last refused deploy or failed reload, with its time.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Receiving is when the deploy being received now started (zero: none
	// is): the activity LED shows it as an update in progress.
	Receiving time.Time `json:"receiving,omitzero"`
}

// Result is the answer to a deploy or rollback.
type Result struct {
	Generation *Generation `json:"generation,omitempty"`
	// Errors are the site's mistakes, "sites/x.toml:3:5: message" with
	// paths relative to the site directory; the deploy was refused.
	Errors []string `json:"errors,omitempty"`
	// Message says what happened, in words.
	Message string `json:"message,omitempty"`
	// NotServed, if set, says why the generation is current but not
	// served yet: Arka was not running (stopped, waiting to restart), so
	// it serves the generation when it starts.
	NotServed string `json:"not_served,omitempty"`
}

// Limits of what a deploy may hold.
const (
	MaxFiles        = 100000
	MaxManifestSize = 32 << 20
)

// CheckPath reports whether p is an acceptable site file path: relative,
// clean, slash-separated, no "..", no empty or hidden-control components.
func CheckPath(p string) error {
	if p == "" || p != path.Clean(p) || strings.HasPrefix(p, "/") || p == "." {
		return fmt.Errorf("%q: not a clean relative path", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." || c == "." {
			return fmt.Errorf("%q: .. is not allowed", p)
		}
	}
	if p == ManifestName {
		return fmt.Errorf("%q: reserved name", p)
	}
	if strings.ContainsAny(p, "\x00\\") {
		return fmt.Errorf("%q: NUL and backslash are not allowed in names", p)
	}
	return nil
}

// ErrNotRunning is wrapped by a Store's Activate when Arka is not running
// (stopped, waiting to restart after an exit): the site cannot be reloaded
// now and is read when Arka starts.
var ErrNotRunning = errors.New("the server is not running")

// NotReadyError is returned by a Store's Activate when Arka took the
// reload but is not ready since (status.Readiness): Problems are those
// the new site brought, "sites/x.toml:2:11: cannot listen on :8443: …"
// relative to the site directory. The deploy is refused and the previous
// generation goes back.
type NotReadyError struct{ Problems []string }

func (e *NotReadyError) Error() string {
	return "the new site left the server not ready: " + strings.Join(e.Problems, "; ")
}

// ErrBusy is returned while another deploy runs.
var ErrBusy = errors.New("another deploy or rollback is running on the device")
