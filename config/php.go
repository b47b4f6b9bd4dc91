package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// PHP is the `php` table: the php-fpm Arka runs itself, for fastcgi routes
// whose address is "php" (or empty). It may be written in [global] or in a
// site file, as an inline table or a [php] / [global.php] section:
//
//	php = { fpm = "/usr/sbin/php-fpm8.2" }
//	php = { fpm = "auto", max_requests = 500, ini = { "date.timezone" = "Europe/Berlin" } }
//
// Arka runs one php-fpm for all sites. Precedence: [global] php, when
// present, is the setting; a site file's php table must then be identical
// to it (or be left out). Without [global] php, the site files' php tables
// are the setting and must all be identical. Conflicts are errors naming
// both places.
//
// Pool size (pm.max_children), process manager (pm) and opcache memory come
// from the board budget ([global.budget] php_max_children, php_pm, opcache).
type PHP struct {
	// FPM is the php-fpm binary: an absolute path (or one relative to the
	// site file), or "auto" to look for php-fpm, php-fpmX.Y in /usr/sbin,
	// /usr/local/sbin and PATH (the newest version wins). Required.
	FPM string `toml:"fpm"`
	// User is who the workers run as when Arka runs as root: "auto" (the
	// default: uid and gid 65534, nobody/nogroup, which needs no
	// /etc/passwd and so works on the appliance), "uid" or "uid:gid"
	// (numbers), a user name (with its group) or "name:group", or "root"
	// (not recommended: a PHP bug then owns the machine). Ignored when Arka
	// does not run as root: the workers run as Arka's user.
	User string `toml:"user"`
	// MaxRequests is pm.max_requests: a worker is replaced after this many
	// requests, which bounds slow memory leaks. Default 500; 0 = never.
	MaxRequests *int `toml:"max_requests"`
	// MemoryLimit is PHP's memory_limit per request; "auto" (the default)
	// derives it from the budget (see DefaultPHPMemoryLimit).
	MemoryLimit AutoSize `toml:"memory_limit"`
	// UploadMaxFilesize is upload_max_filesize; post_max_size is set to it
	// plus 1 MiB for the form around the file. Default 32MiB.
	UploadMaxFilesize *Size `toml:"upload_max_filesize"`
	// SlowlogTimeout is request_slowlog_timeout: requests running longer
	// are counted as slow on the status page (and their stack is logged to
	// slow.log in the data directory). Default 5s; "0s" turns it off.
	SlowlogTimeout *Duration `toml:"slowlog_timeout"`
	// TerminateTimeout is request_terminate_timeout: php-fpm kills a worker
	// whose request has run this long, wall-clock. PHP's own
	// max_execution_time counts CPU time only on Linux, so a script stuck
	// in sleep(), a lock or a slow network call would otherwise hold its
	// worker for ever and, one by one, take the whole pool. Default 5m;
	// "0s" turns it off.
	TerminateTimeout *Duration `toml:"terminate_timeout"`
	// DataDir is where PHP keeps sessions, uploads and temporary files, and
	// where applications should keep SQLite databases (the workers get its
	// path as the ARKA_PHP_DATA environment variable). Default: "php" in
	// Arka's state directory (on the appliance /perm/arka/state/php).
	DataDir string `toml:"data_dir"`
	// INI holds extra php.ini settings, written after Arka's own, so they
	// override them: ini = { "date.timezone" = "Europe/Berlin" }.
	INI map[string]string `toml:"ini"`

	// FPMPath is FPM as an absolute path; for "auto" it is set, and for
	// both it is checked to be an executable file, by CheckEnvironment.
	FPMPath string `toml:"-"`

	file      string // where the table is, for conflict messages
	line, col int
	fpmAt     [2]int // line and column of the fpm key
}

// PHP defaults.
const (
	DefaultPHPMaxRequests      = 500
	DefaultPHPUploadMax   Size = 32 << 20
	DefaultPHPSlowlog          = 5 * time.Second
	DefaultPHPTerminate        = 5 * time.Minute
	DefaultPHPUser             = "65534:65534"
)

// MaxRequestsOr returns pm.max_requests.
func (p *PHP) MaxRequestsOr() int {
	if p.MaxRequests == nil {
		return DefaultPHPMaxRequests
	}
	return *p.MaxRequests
}

// UploadMax returns upload_max_filesize in bytes.
func (p *PHP) UploadMax() int64 {
	if p.UploadMaxFilesize == nil {
		return int64(DefaultPHPUploadMax)
	}
	return int64(*p.UploadMaxFilesize)
}

// PHPPostMaxExtra is what post_max_size adds to upload_max_filesize: room
// for the form fields around the file.
const PHPPostMaxExtra = 1 << 20

// PostMaxSize returns post_max_size in bytes as Arka's php-fpm applies
// it: the ini table's post_max_size when it sets one (PHP's shorthand, a
// number with an optional K, M or G suffix; 0 means none, returned as 0),
// else upload_max_filesize plus PHPPostMaxExtra. PHP drops a larger body
// (the script sees an empty $_POST), so fastcgi routes to Arka's own
// php-fpm refuse one with 413 before reading it.
func (p *PHP) PostMaxSize() int64 {
	if v, ok := p.INI["post_max_size"]; ok {
		if n, ok := phpSize(v); ok {
			return n
		}
	}
	return p.UploadMax() + PHPPostMaxExtra
}

// phpSize parses a php.ini size ("8M", "512k", "1G", "1048576").
func phpSize(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	mul := int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mul = 1 << 10
		case 'm', 'M':
			mul = 1 << 20
		case 'g', 'G':
			mul = 1 << 30
		}
		if mul != 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mul {
		return 0, false
	}
	return n * mul, true
}

// Slowlog returns request_slowlog_timeout; 0 means off.
func (p *PHP) Slowlog() time.Duration { return p.SlowlogTimeout.Or(DefaultPHPSlowlog) }

// Terminate returns request_terminate_timeout; 0 means off.
func (p *PHP) Terminate() time.Duration { return p.TerminateTimeout.Or(DefaultPHPTerminate) }

// Where returns "file:line" of the php table, for messages.
func (p *PHP) Where() string {
	if p.line > 0 {
		return fmt.Sprintf("%s:%d:%d", p.file, p.line, max(p.col, 1))
	}
	return p.file
}

// FPMSearchDirs are where fpm = "auto" looks, before PATH.
var FPMSearchDirs = []string{"/usr/sbin", "/usr/local/sbin"}

// FindFPM returns the php-fpm binary that fpm = "auto" means: php-fpm, or
// the newest php-fpmX.Y, in FPMSearchDirs and then PATH.
func FindFPM() (string, error) {
	dirs := append([]string{}, FPMSearchDirs...)
	dirs = append(dirs, filepath.SplitList(os.Getenv("PATH"))...)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		m, _ := filepath.Glob(filepath.Join(d, "php-fpm*"))
		var found []string
		for _, p := range m {
			if isExecutable(p) && fpmName.MatchString(filepath.Base(p)) {
				found = append(found, p)
			}
		}
		if len(found) > 0 {
			sort.Slice(found, func(i, j int) bool { return versionLess(found[i], found[j]) })
			return found[len(found)-1], nil
		}
	}
	return "", fmt.Errorf("no php-fpm found in %s or PATH (Debian: apt-get install php-fpm; appliance: build the image with PHP=1)", strings.Join(FPMSearchDirs, ", "))
}

var fpmName = regexp.MustCompile(`^php-fpm(\d+(\.\d+)*)?$`)

// versionLess orders php-fpm8.2 before php-fpm8.10 before php-fpm.
func versionLess(a, b string) bool {
	va, vb := fpmVersion(a), fpmVersion(b)
	for i := 0; i < len(va) && i < len(vb); i++ {
		if va[i] != vb[i] {
			return va[i] < vb[i]
		}
	}
	return len(va) < len(vb)
}

func fpmVersion(p string) []int {
	v := strings.TrimPrefix(filepath.Base(p), "php-fpm")
	if v == "" {
		return []int{1 << 30} // plain php-fpm: the distribution's default, preferred
	}
	var out []int
	for _, f := range strings.Split(v, ".") {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

var (
	userRE   = regexp.MustCompile(`^([a-z_][a-z0-9_-]*[$]?|[0-9]+)(:([a-z_][a-z0-9_-]*|[0-9]+))?$`)
	iniKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]*(\[[A-Za-z0-9_.\-]*\])?$`)
)

// php validates a php table at path ("php" or "global.php").
func (v *validator) php(at string, p *PHP) {
	p.file = v.file
	p.line, p.col = v.pos.at(at)
	p.fpmAt[0], p.fpmAt[1] = v.pos.at(at + ".fpm")
	switch f := p.FPM; {
	case f == "":
		v.errAt(at, "php: fpm is missing: the php-fpm binary, such as fpm = \"/usr/sbin/php-fpm8.2\", or fpm = \"auto\"")
	case f == "auto":
		// Looked up by CheckEnvironment.
	default:
		p.FPMPath = v.abs(f) // checked by CheckEnvironment
	}
	if u := p.User; u != "" && u != "auto" && u != "root" && !userRE.MatchString(u) {
		v.errAt(at+".user", "user %q: use \"auto\", \"root\", a user name, \"name:group\", \"uid\" or \"uid:gid\"", u)
	}
	if m := p.MaxRequests; m != nil && *m < 0 {
		v.errAt(at+".max_requests", "max_requests %d: use 0 (never recycle workers) or a positive count", *m)
	}
	if m := p.MemoryLimit; m.Set && m.Value < 8<<20 {
		v.errAt(at+".memory_limit", "memory_limit %s: PHP needs at least 8MiB per request", m.Value)
	}
	if u := p.UploadMaxFilesize; u != nil && *u < 1 {
		v.errAt(at+".upload_max_filesize", "upload_max_filesize must be positive")
	}
	if p.DataDir != "" {
		p.DataDir = v.abs(p.DataDir)
		if strings.ContainsAny(p.DataDir, "\"\n\x00;") {
			v.errAt(at+".data_dir", "data_dir %q must not contain quotes, semicolons or newlines", p.DataDir)
		}
	}
	if strings.ContainsAny(p.FPMPath, "\"\n\x00") {
		v.errAt(at+".fpm", "fpm %q must not contain quotes or newlines", p.FPM)
	}
	for _, k := range sortedKeys(p.INI) {
		val := p.INI[k]
		if !iniKeyRE.MatchString(k) {
			v.errAt(at+".ini", "ini key %q is not a php.ini directive name", k)
		}
		if strings.ContainsAny(val, "\n\r\x00") {
			v.errAt(at+".ini", "ini %s: the value must be one line", k)
		}
	}
}

// PHPOf returns the php-fpm settings of a set of sites (see PHP for the
// precedence), or nil when no site and no [global] table has one. Sites
// were checked by Load; conflicts are reported there.
func PHPOf(sites []*Site) *PHP {
	for _, s := range sites {
		if s.Global != nil && s.Global.PHP != nil {
			return s.Global.PHP
		}
	}
	for _, s := range sites {
		if s.PHP != nil {
			return s.PHP
		}
	}
	return nil
}

// phpConflicts reports php tables that differ from the one in force.
func phpConflicts(sites []*Site) Errors {
	ref := PHPOf(sites)
	if ref == nil {
		return nil
	}
	var errs Errors
	for _, s := range sites {
		if s.PHP == nil || s.PHP == ref || samePHP(s.PHP, ref) {
			continue
		}
		what := "the php table of " + ref.Where()
		for _, o := range sites {
			if o.Global != nil && o.Global.PHP == ref {
				what = "[global] php at " + ref.Where()
			}
		}
		errs = append(errs, &Error{File: s.File, Line: s.PHP.line, Col: s.PHP.col,
			Msg: fmt.Sprintf("php differs from %s; Arka runs one php-fpm for all sites: make them identical or keep one", what)})
	}
	return errs
}

func samePHP(a, b *PHP) bool {
	x, y := *a, *b
	x.file, x.line, x.col, x.fpmAt = "", 0, 0, [2]int{}
	y.file, y.line, y.col, y.fpmAt = "", 0, 0, [2]int{}
	return reflect.DeepEqual(x, y)
}
