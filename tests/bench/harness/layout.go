// Package harness is the machinery behind `make bench`: it generates the
// benchmark's files and every server's configuration, starts the servers and
// their php-fpm pools on loopback, verifies every test URL, runs h2load and
// wrk in alternating rounds, reads each server's CPU time and memory from
// /proc, and writes the raw TSV, a Markdown table and an SVG chart.
//
// The published Arka benchmark (the seed) is the reference: the same files,
// the same certificate, each server set up as a speed-minded administrator
// would, measured minutes apart in alternating rounds.
package harness

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
)

// Server names a web server under test.
type Server string

// The servers, in the order they are listed in tables.
const (
	Arka     Server = "arka"
	Nginx    Server = "nginx"
	Apache   Server = "apache"
	Caddy    Server = "caddy"
	Lighttpd Server = "lighttpd"
)

// AllServers lists every server the harness knows, in table order.
var AllServers = []Server{Arka, Nginx, Apache, Caddy, Lighttpd}

// ParseServers parses a comma-separated list of server names ("all" for
// every server).
func ParseServers(list []string) ([]Server, error) {
	if len(list) == 0 || len(list) == 1 && list[0] == "all" {
		return slices.Clone(AllServers), nil
	}
	var out []Server
	for _, s := range list {
		sv := Server(s)
		if !slices.Contains(AllServers, sv) {
			return nil, fmt.Errorf("unknown server %q (known: arka, nginx, apache, caddy, lighttpd)", s)
		}
		if !slices.Contains(out, sv) {
			out = append(out, sv)
		}
	}
	// Keep table order whatever order the user typed.
	slices.SortFunc(out, func(a, b Server) int { return slices.Index(AllServers, a) - slices.Index(AllServers, b) })
	return out, nil
}

// Ports are a server's listening ports on 127.0.0.1.
type Ports struct {
	HTTP  int // plain HTTP/1.1
	HTTPS int // TLS with ALPN h2 and http/1.1
}

// Layout is everything the generated configurations refer to: directories,
// ports, sockets and sizes. The golden files under tests/bench/testdata are
// written from GoldenLayout; a run uses a fresh temporary directory and free
// ports.
type Layout struct {
	Root     string // work directory
	WWW      string // document root shared by every server
	Cert     string // PEM certificate (self-signed, ECDSA P-256)
	Key      string // PEM private key
	Upstream Ports  // the tiny upstream for the proxy tests (HTTP only)
	Ports    map[Server]Ports

	// RunDir holds the servers' private directories (see Dir) and the
	// php-fpm pools' unix sockets (see PHPSocket).
	RunDir string
	// PHPWorkers is the number of static workers of each php-fpm pool.
	PHPWorkers int

	// NginxWorkers is nginx's worker_processes (the number of cores, as
	// "auto" would choose); each worker keeps PHPWorkers/NginxWorkers
	// connections to php-fpm, so that all workers together keep one per
	// php-fpm worker, as in the seed.
	NginxWorkers int

	// RunAs, when not empty, is the unprivileged user (and group RunGroup)
	// that worker processes switch to. It is set only when the harness
	// runs as root: Apache and php-fpm refuse to run their workers as
	// root, and nginx would otherwise pick "nobody" silently.
	RunAs, RunGroup string

	// NginxModules is the directory of nginx's dynamic modules (Debian:
	// /usr/lib/nginx/modules); ApacheRoot is Apache's ServerRoot, under
	// which modules/ holds its modules (Debian: /usr/lib/apache2).
	NginxModules string
	ApacheRoot   string
	// NginxConfDir holds nginx's mime.types and fastcgi_params, read but
	// never written (Debian: /etc/nginx). MimeTypes is the system's
	// mime.types for Apache (Debian: /etc/mime.types).
	NginxConfDir string
	MimeTypes    string
}

// Dir is the private directory of a server or pool (pid file, error log,
// temporary files, caches).
func (l *Layout) Dir(name string) string { return filepath.Join(l.RunDir, name) }

// PHPPool names the php-fpm pool of a server. Every server has a pool of
// its own, of the same size: "php-a" for Arka, "php-b-<server>" for the
// others. (The seed ran the servers one at a time and let nginx, Apache
// and Caddy share pool "php-b". Here every server runs at once, and
// nginx's kept connections hold php-fpm workers even when idle — php-fpm
// gives each open connection a worker — so a shared pool would leave the
// next server waiting for workers nginx keeps.)
func PHPPool(s Server) string {
	if s == Arka {
		return "php-a"
	}
	return "php-b-" + string(s)
}

// PHPSocket is the unix socket of a server's php-fpm pool.
func (l *Layout) PHPSocket(s Server) string {
	return filepath.Join(l.RunDir, PHPPool(s)+".sock")
}

// NginxPHPKeepalive is the number of idle connections to php-fpm each nginx
// worker keeps (at least 1).
func (l *Layout) NginxPHPKeepalive() int {
	if l.NginxWorkers < 1 {
		return l.PHPWorkers
	}
	return max(1, l.PHPWorkers/l.NginxWorkers)
}

// GoldenLayout is the layout of the golden configuration files: the seed's
// paths (/srv/bench, /run/bench) and ports (Arka 18892/18445, upstream
// 18893, nginx 18894/18446; the other servers, which the seed ran on nginx's
// ports one at a time, get the next ones, as they all run at once here), 4
// nginx workers and 32 php-fpm workers, as in the seed.
func GoldenLayout() *Layout {
	return &Layout{
		Root:     "/srv/bench",
		WWW:      "/srv/bench/www",
		Cert:     "/srv/bench/tls/cert.pem",
		Key:      "/srv/bench/tls/key.pem",
		Upstream: Ports{HTTP: 18893},
		Ports: map[Server]Ports{
			Arka:     {HTTP: 18892, HTTPS: 18445},
			Nginx:    {HTTP: 18894, HTTPS: 18446},
			Apache:   {HTTP: 18895, HTTPS: 18447},
			Caddy:    {HTTP: 18896, HTTPS: 18448},
			Lighttpd: {HTTP: 18897, HTTPS: 18449},
		},
		RunDir:       "/run/bench",
		PHPWorkers:   32,
		NginxWorkers: 4,
		NginxModules: "/usr/lib/nginx/modules",
		ApacheRoot:   "/usr/lib/apache2",
		NginxConfDir: "/etc/nginx",
		MimeTypes:    "/etc/mime.types",
	}
}

// NewLayout is the layout of a run in work (a fresh directory): the
// document root, certificate and run directory under it (created, and
// world-readable: see RunAs), the upstream on ports[0] and the servers on
// the next ports, two each in AllServers order. When the harness runs as
// root, workers run as nobody.
func NewLayout(work string, ports []int, phpWorkers, nginxWorkers int) (*Layout, error) {
	if len(ports) < 1+2*len(AllServers) {
		return nil, fmt.Errorf("layout: %d ports, need %d", len(ports), 1+2*len(AllServers))
	}
	l := &Layout{
		Root:         work,
		WWW:          filepath.Join(work, "www"),
		Cert:         filepath.Join(work, "tls", "cert.pem"),
		Key:          filepath.Join(work, "tls", "key.pem"),
		Upstream:     Ports{HTTP: ports[0]},
		Ports:        map[Server]Ports{},
		RunDir:       filepath.Join(work, "run"),
		PHPWorkers:   phpWorkers,
		NginxWorkers: nginxWorkers,
		NginxModules: "/usr/lib/nginx/modules",
		ApacheRoot:   "/usr/lib/apache2",
		NginxConfDir: "/etc/nginx",
		MimeTypes:    "/etc/mime.types",
	}
	for i, s := range AllServers {
		l.Ports[s] = Ports{HTTP: ports[1+2*i], HTTPS: ports[2+2*i]}
	}
	if os.Geteuid() == 0 {
		l.RunAs, l.RunGroup = "nobody", "nogroup"
		if _, err := user.Lookup("nobody"); err != nil {
			return nil, errors.New("running as root, but there is no user \"nobody\" for the servers' workers")
		}
		if _, err := user.LookupGroup("nogroup"); err != nil {
			l.RunGroup = "nobody"
		}
	}
	for _, d := range []string{work, l.WWW, filepath.Dir(l.Cert), l.RunDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return nil, err
		}
	}
	return l, nil
}
