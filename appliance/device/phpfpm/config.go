// Package phpfpm runs php-fpm for Arka: it writes php-fpm's main and pool
// configuration and a php.ini sized from the board budget, starts php-fpm
// in the foreground as a child process, restarts it with capped
// exponential back-off when it dies, stops it (workers included) on
// shutdown, and reads its pool state from php-fpm's status page over
// FastCGI.
//
// It works the same on a Debian host and inside the appliance image, where
// the image carries php-fpm from Debian's packages (see appliance/build/phpimage)
// and Arka, as root, runs the workers under an unprivileged numeric uid.
//
// Files, under Config.Dir (Arka's state directory + "/php" by default):
//
//	php-fpm.conf   main and pool configuration (written at every start)
//	php.ini        PHP settings (memory_limit, opcache, sessions, uploads)
//	run/           php-fpm.sock, status.sock, php-fpm.pid (or a short
//	               directory under /tmp when that path is too long for a
//	               unix socket)
//
// and under Config.DataDir: sessions/, uploads/, tmp/ and slow.log, owned
// by the workers' user: PHP's writable state, on /perm on the appliance.
package phpfpm

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/arkaweb/arka/board"
	"github.com/arkaweb/arka/config"
)

// StatusPath is pm.status_path: the status page is served only on the
// separate status socket (pm.status_listen), never through the sites.
const StatusPath = "/arka-fpm-status"

// PoolName is the name of the php-fpm pool.
const PoolName = "arka"

// NobodyID is the uid and gid of the workers when Arka runs as root and the
// configuration says user = "auto": nobody/nogroup on Debian, and a number
// that needs no /etc/passwd on the appliance.
const NobodyID = 65534

// Config is what php-fpm is run with. FromSettings fills it from the site
// files and the board budget.
type Config struct {
	FPM     string // php-fpm binary
	Dir     string // generated configuration (created, 0755)
	RunDir  string // sockets and pid file; default Dir/run, or a short /tmp directory
	DataDir string // sessions, uploads, tmp, slow.log; default Dir/data
	// Owned is Arka's state directory (default Dir's parent): as root,
	// only it and the directories below it get search permission for the
	// workers; those above it are never changed (see traversable).
	Owned string

	// User and Group are the workers' numeric ids when Arka runs as root;
	// ignored otherwise. Root (0) needs AllowRoot.
	UID, GID  int
	AllowRoot bool

	PM             board.PHPPM
	MaxChildren    int           // pm.max_children
	MaxRequests    int           // pm.max_requests; 0 = never
	OpcacheMiB     int           // opcache.memory_consumption
	MemoryLimit    int64         // memory_limit, bytes
	UploadMax      int64         // upload_max_filesize, bytes; post_max_size is 1 MiB more
	SlowlogTimeout time.Duration // request_slowlog_timeout; 0 = off
	// TerminateTimeout is request_terminate_timeout (wall-clock, whole
	// seconds); 0 = off.
	TerminateTimeout time.Duration
	IdleTimeout      time.Duration // pm.process_idle_timeout (ondemand); default 10 s
	INI              map[string]string
	Source           string // where the settings came from, for the generated files' header
}

// DefaultMemoryLimit is memory_limit when the configuration says "auto":
// twice a worker's share of the php-fpm memory budget (35% of RAM minus
// opcache, see board.ComputeBudget), because few requests peak at once,
// within 64 MiB (WordPress's minimum is 40 MiB) and 256 MiB.
func DefaultMemoryLimit(b board.Budget) int64 {
	php := int64(b.RAMBytes)*35/100 - int64(b.OpcacheMiB)<<20
	per := 2 * php / int64(max(b.PHPMaxChildren, 1))
	return max(64<<20, min(per, 256<<20)) >> 20 << 20
}

// FromSettings builds the Config for the php table of the sites (p), the
// board budget and Arka's state directory.
func FromSettings(p *config.PHP, b board.Budget, stateDir string) (Config, error) {
	c := Config{
		FPM:         p.FPMPath,
		Dir:         filepath.Join(stateDir, "php"),
		DataDir:     p.DataDir,
		Owned:       stateDir,
		PM:          b.PHPPM,
		MaxChildren: b.PHPMaxChildren,
		MaxRequests: p.MaxRequestsOr(),
		OpcacheMiB:  b.OpcacheMiB,
		MemoryLimit: p.MemoryLimit.Or(DefaultMemoryLimit(b)),
		UploadMax:   p.UploadMax(),
		INI:         p.INI,
		Source:      p.Where(),
	}
	if c.FPM == "" {
		c.FPM = p.FPM
	}
	if c.DataDir == "" {
		c.DataDir = filepath.Join(c.Dir, "data")
	}
	c.SlowlogTimeout = p.Slowlog()
	c.TerminateTimeout = p.Terminate()
	uid, gid, root, err := lookupUser(p.User)
	if err != nil {
		return c, err
	}
	c.UID, c.GID, c.AllowRoot = uid, gid, root
	return c, nil
}

// lookupUser resolves the php table's user setting to numeric ids.
func lookupUser(u string) (uid, gid int, root bool, err error) {
	switch u {
	case "", "auto":
		return NobodyID, NobodyID, false, nil
	case "root":
		return 0, 0, true, nil
	}
	name, group, _ := strings.Cut(u, ":")
	if n, err := strconv.Atoi(name); err == nil {
		uid, gid = n, n
	} else {
		pw, err := user.Lookup(name)
		if err != nil {
			return 0, 0, false, fmt.Errorf("php user %q: %v (on the appliance there is no /etc/passwd: use numbers, \"uid:gid\")", u, err)
		}
		uid, _ = strconv.Atoi(pw.Uid)
		gid, _ = strconv.Atoi(pw.Gid)
	}
	if group != "" {
		if n, err := strconv.Atoi(group); err == nil {
			gid = n
		} else {
			g, err := user.LookupGroup(group)
			if err != nil {
				return 0, 0, false, fmt.Errorf("php user %q: group: %v", u, err)
			}
			gid, _ = strconv.Atoi(g.Gid)
		}
	}
	if uid == 0 {
		return 0, 0, false, fmt.Errorf("php user %q is root: say user = \"root\" if you mean it", u)
	}
	return uid, gid, false, nil
}

// maxSocketPath is the longest unix socket path (sun_path is 108 bytes
// with the terminating NUL).
const maxSocketPath = 107

func (c *Config) defaults() error {
	if c.FPM == "" {
		return errors.New("phpfpm: no php-fpm binary")
	}
	if c.Dir == "" {
		return errors.New("phpfpm: no directory for the configuration")
	}
	if c.DataDir == "" {
		c.DataDir = filepath.Join(c.Dir, "data")
	}
	if c.RunDir == "" {
		c.RunDir = filepath.Join(c.Dir, "run")
		if len(filepath.Join(c.RunDir, "php-fpm.sock")) > maxSocketPath {
			c.RunDir = "" // chosen in prepare: a short directory under /tmp
		}
	}
	if c.PM == "" {
		c.PM = board.PMOnDemand
	}
	if c.MaxChildren <= 0 {
		c.MaxChildren = 2
	}
	if c.OpcacheMiB <= 0 {
		c.OpcacheMiB = 32
	}
	if c.MemoryLimit <= 0 {
		c.MemoryLimit = 128 << 20
	}
	if c.UploadMax <= 0 {
		c.UploadMax = int64(config.DefaultPHPUploadMax)
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 10 * time.Second
	}
	for _, p := range []string{c.FPM, c.Dir, c.DataDir} {
		if strings.ContainsAny(p, "\"\n\x00;") {
			return fmt.Errorf("phpfpm: path %q must not contain quotes, semicolons or newlines", p)
		}
	}
	return nil
}

// Paths of the generated files and sockets.
func (c *Config) confFile() string   { return filepath.Join(c.Dir, "php-fpm.conf") }
func (c *Config) iniFile() string    { return filepath.Join(c.Dir, "php.ini") }
func (c *Config) socket() string     { return filepath.Join(c.RunDir, "php-fpm.sock") }
func (c *Config) statusSock() string { return filepath.Join(c.RunDir, "status.sock") }
func (c *Config) pidFile() string    { return filepath.Join(c.RunDir, "php-fpm.pid") }

// asRoot reports whether php-fpm's master runs as root, where user/group
// and listen.owner apply.
// owned is Owned or its default.
func (c *Config) owned() string {
	if c.Owned != "" {
		return c.Owned
	}
	return filepath.Dir(c.Dir)
}

func asRoot() bool { return os.Geteuid() == 0 }

// mib formats bytes for php.ini: whole MiB as "96M", else bytes.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + "M"
	}
	return strconv.FormatInt(n, 10)
}

// FPMConf returns php-fpm.conf: the [global] section and the one pool.
func (c *Config) FPMConf() string {
	var b strings.Builder
	fmt.Fprintf(&b, "; php-fpm configuration generated by Arka (settings from %s, sizes from the board budget).\n", c.Source)
	b.WriteString("; Arka writes this file at every start of php-fpm: edit the site files instead.\n\n")
	b.WriteString("[global]\n")
	fmt.Fprintf(&b, "pid = \"%s\"\n", c.pidFile())
	b.WriteString("error_log = /proc/self/fd/2\nlog_level = notice\nlog_limit = 2048\ndaemonize = no\n")
	b.WriteString("process_control_timeout = 10s\n\n")

	fmt.Fprintf(&b, "[%s]\n", PoolName)
	fmt.Fprintf(&b, "listen = \"%s\"\nlisten.backlog = 511\n", c.socket())
	if asRoot() {
		// The sockets belong to Arka only: the workers' user cannot
		// connect to php-fpm itself.
		fmt.Fprintf(&b, "listen.owner = %d\nlisten.group = %d\nlisten.mode = 0600\n", os.Geteuid(), os.Getegid())
		fmt.Fprintf(&b, "user = %d\ngroup = %d\n", c.UID, c.GID)
	} else {
		b.WriteString("listen.mode = 0600\n")
	}
	fmt.Fprintf(&b, "pm = %s\npm.max_children = %d\n", c.PM, c.MaxChildren)
	if c.PM == board.PMOnDemand {
		fmt.Fprintf(&b, "pm.process_idle_timeout = %ds\n", int(c.IdleTimeout.Seconds()))
	}
	fmt.Fprintf(&b, "pm.max_requests = %d\n", c.MaxRequests)
	fmt.Fprintf(&b, "pm.status_path = %s\npm.status_listen = \"%s\"\n", StatusPath, c.statusSock())
	if c.SlowlogTimeout > 0 {
		fmt.Fprintf(&b, "request_slowlog_timeout = %ds\nslowlog = \"%s\"\n", max(1, int(c.SlowlogTimeout.Seconds())), filepath.Join(c.DataDir, "slow.log"))
	}
	if c.TerminateTimeout > 0 {
		fmt.Fprintf(&b, "request_terminate_timeout = %ds\n", max(1, int(c.TerminateTimeout.Seconds())))
	}
	b.WriteString("catch_workers_output = yes\ndecorate_workers_output = no\nclear_env = yes\n")
	b.WriteString("env[PATH] = /usr/local/bin:/usr/bin:/bin\n")
	fmt.Fprintf(&b, "env[TMPDIR] = \"%s\"\n", filepath.Join(c.DataDir, "tmp"))
	fmt.Fprintf(&b, "env[ARKA_PHP_DATA] = \"%s\"\n", c.DataDir)
	return b.String()
}

// PHPIni returns php.ini: settings sized from the budget, PHP's writable
// state under DataDir, then the site files' ini settings (which win).
// Extensions are not loaded here: php-fpm reads its conf.d directory
// (Debian: /etc/php/X.Y/fpm/conf.d, also in the image) after this file.
func (c *Config) PHPIni() string {
	var b strings.Builder
	fmt.Fprintf(&b, "; php.ini generated by Arka (settings from %s, sizes from the board budget).\n", c.Source)
	b.WriteString("; Arka writes this file at every start of php-fpm: edit the site files' php.ini table instead.\n\n")
	interned := min(16, max(4, c.OpcacheMiB/8))
	kv := [][2]string{
		{"memory_limit", mib(c.MemoryLimit)},
		{"upload_max_filesize", mib(c.UploadMax)},
		{"post_max_size", mib(c.UploadMax + config.PHPPostMaxExtra)},
		{"max_execution_time", "30"},
		{"max_input_time", "60"},
		{"expose_php", "Off"},
		{"display_errors", "Off"},
		{"display_startup_errors", "Off"},
		{"log_errors", "On"},
		{"html_errors", "Off"},
		{"error_reporting", "E_ALL & ~E_DEPRECATED & ~E_STRICT"},
		{"date.timezone", "UTC"},
		{"realpath_cache_size", "4096K"},
		{"realpath_cache_ttl", "600"},
		{"file_uploads", "On"},
		{"upload_tmp_dir", quote(filepath.Join(c.DataDir, "uploads"))},
		{"sys_temp_dir", quote(filepath.Join(c.DataDir, "tmp"))},
		{"session.save_handler", "files"},
		{"session.save_path", quote(filepath.Join(c.DataDir, "sessions"))},
		{"session.use_strict_mode", "1"},
		{"session.cookie_httponly", "1"},
		{"session.cookie_samesite", "Lax"},
		// No cron job cleans sessions here (Debian's does): PHP does.
		{"session.gc_probability", "1"},
		{"session.gc_divisor", "1000"},
		{"session.gc_maxlifetime", "1440"},
		{"opcache.enable", "1"},
		{"opcache.enable_cli", "0"},
		{"opcache.memory_consumption", strconv.Itoa(c.OpcacheMiB)},
		{"opcache.interned_strings_buffer", strconv.Itoa(interned)},
		{"opcache.max_accelerated_files", "10000"},
		// Sites on /perm change while Arka runs: look at file times, but
		// at most every 2 seconds per file.
		{"opcache.validate_timestamps", "1"},
		{"opcache.revalidate_freq", "2"},
	}
	for _, e := range kv {
		fmt.Fprintf(&b, "%s = %s\n", e[0], e[1])
	}
	if len(c.INI) > 0 {
		b.WriteString("\n; From the site files (php.ini table).\n")
		keys := make([]string, 0, len(c.INI))
		for k := range c.INI {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s = %s\n", k, iniValue(c.INI[k]))
		}
	}
	return b.String()
}

func quote(s string) string { return "\"" + s + "\"" }

// iniValue writes a value as PHP's ini parser reads it back unchanged:
// plain words, numbers and constants as they are, anything else quoted.
func iniValue(v string) string {
	plain := v != ""
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/:&~| ", r)) {
			plain = false
		}
	}
	if plain {
		return v
	}
	return quote(strings.ReplaceAll(v, "\"", "\\\""))
}
