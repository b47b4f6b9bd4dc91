package config

import (
	"crypto/x509"
	"net/netip"
)

// The schema of a site file. One TOML file describes one virtual host, in the
// format published in the Arka seed:
//
//	default = true
//	server_names = ["example.org", "*.example.org"]
//	listen = [":80"]
//	request_id = false
//
//	[tls]
//	listen = [":443"]
//	cert = "/etc/arka/tls/cert.pem"
//	key = "/etc/arka/tls/key.pem"
//
//	[log]
//	enabled = true
//	path = "/var/log/arka/example.log"
//	format = "combined"
//
//	[compression]
//	enabled = true
//	min_size = "512B"
//
//	[[routes]]
//	path = "/"
//	handler = { type = "static", root = "/srv/www" }
//
// Every key not listed here is an error. Defaults live in defaults.go.

// Site is one virtual host after loading and validation.
type Site struct {
	// File is the path of the site file; Line is where each part starts, for
	// messages that refer back to the file.
	File string `toml:"-"`

	Default     bool         `toml:"default"`
	ServerNames []string     `toml:"server_names"` // lower-cased; "*.example.org" wildcards; empty = any host
	Listen      []ListenAddr `toml:"-"`            // plain HTTP addresses; the key listen, "host:port" or ":port"
	RequestID   bool         `toml:"request_id"`   // set and forward X-Request-Id
	// TrustedProxies are client networks (CIDR or addresses) whose
	// forwarding fields (ClientIPHeader, X-Forwarded-Proto) are believed:
	// route allow/deny, basic_auth's per-client limit and the access log
	// then name the client they forwarded for. A proxy route's own
	// trusted_proxies overrides it.
	TrustedProxies []netip.Prefix `toml:"-"` // the key trusted_proxies
	// ClientIPHeader is the one field the client is read from in a
	// request from a trusted proxy (the site's or a proxy route's):
	// X-Forwarded-For (the zero value, the default) or X-Real-IP.
	ClientIPHeader ClientIPHeader `toml:"client_ip_header"`
	TLS            TLS            `toml:"tls"`
	Log            Log            `toml:"log"`
	Compression    Compression    `toml:"compression"`
	Limits         Limits         `toml:"limits"`
	Errors         ErrorPages     `toml:"errors"` // custom error pages
	Routes         []Route        `toml:"-"`      // decoded from rawRoute
	// HealthPath is the path (with an optional query) an appliance's
	// update checks on this site before it confirms a new build; the
	// answer must be 2xx or 3xx. Default "/" (see health.go).
	HealthPath string `toml:"health_path"`

	// RedirectHTTPS redirects requests on the plain listeners to HTTPS
	// (see RedirectHTTPSEnabled for the default); HSTS is the
	// Strict-Transport-Security value sent over HTTPS (RFC 6797), "" for
	// none. See acme.go.
	RedirectHTTPS *bool  `toml:"redirect_https"`
	HSTS          string `toml:"hsts"`
	// ACME is resolved by Load: the names whose certificates come from an
	// ACME CA, and from which; nil for none.
	ACME *ACME `toml:"-"`

	// PHP is the php-fpm Arka runs for fastcgi routes with address "php";
	// see PHP for how it combines with [global] php.
	PHP *PHP `toml:"php"`

	// Global holds process-wide settings. At most one site file may have a
	// [global] table; see GlobalOf.
	Global *Global `toml:"global"`

	// Pos locates the site's keys for cross-site messages (duplicate names,
	// listen conflicts). Keyed by dotted path such as "listen[0]".
	pos *posIndex
}

// Position returns where a key of the site file is written ("listen[1]",
// "tls.listen[0]", "routes[2].handler"), or 0, 0 if it is not.
func (s *Site) Position(path string) (line, col int) {
	if s.pos == nil {
		return 0, 0
	}
	return s.pos.at(path)
}

// ValuePosition is Position of the value written for the key at path
// (the key's position if it has no value of its own).
func (s *Site) ValuePosition(path string) (line, col int) {
	if s.pos == nil {
		return 0, 0
	}
	return s.pos.valueAt(path)
}

// TLS configures the HTTPS listeners of a site (TLS 1.2 and 1.3, ALPN h2 and
// http/1.1).
type TLS struct {
	Listen []ListenAddr `toml:"-"` // the key listen, as the site's
	// Cert and Key are PEM files. When both are empty and Listen is not,
	// Arka generates a self-signed certificate for ServerNames into its
	// state directory (see cmd/arka -state).
	Cert string `toml:"cert"`
	Key  string `toml:"key"`
	// MinVersion is the oldest TLS version accepted: "1.2" (default) or
	// "1.3".
	MinVersion string `toml:"min_version"`
	// ACME, Email, CA and CARoot configure automatic certificates (see
	// acme.go): ACME nil means "on when there is no cert and a public name".
	ACME   *bool  `toml:"acme"`
	Email  string `toml:"email"`
	CA     string `toml:"ca"`
	CARoot string `toml:"ca_root"`
}

// Log configures the site's access log.
type Log struct {
	Enabled bool   `toml:"enabled"`
	Path    string `toml:"path"`   // file path; "" or "-" = standard output
	Format  string `toml:"format"` // "combined" (default) or "json"
}

// Compression configures content coding of responses (RFC 9110 section 8.4).
type Compression struct {
	Enabled bool `toml:"enabled"` // default true
	// MinSize: responses smaller than this are sent without content
	// coding. Default DefaultCompressionMinSize.
	MinSize Size `toml:"min_size"`
	// Levels for responses made per request (proxy, FastCGI); 0 means the
	// default (defaults.go). Static files are compressed once at
	// DefaultStaticBrotliLevel.
	ZstdLevel   int `toml:"zstd_level"`   // 1 (fastest) .. 4 (best), klauspost/compress EncoderLevel
	BrotliLevel int `toml:"brotli_level"` // 0..11
	GzipLevel   int `toml:"gzip_level"`   // 1..9
}

// Limits bounds what one client may send.
type Limits struct {
	// MaxBodySize is the largest request body accepted; larger ones get 413
	// (RFC 9110 section 15.5.14). Zero (the default) means unlimited
	// (bodies are streamed, never held whole in memory).
	MaxBodySize Size `toml:"max_body_size"`
}

// Route maps a path prefix to a handler.
type Route struct {
	Path    string  // starts with "/"; matched by longest prefix
	Handler Handler // what answers the route's requests (see Handler)

	// Options apply whatever the handler (see RouteOptions).
	Options RouteOptions

	Line, Col int // where the route's table starts in the site file
	index     int // position in the file's routes array
}

// Static serves files from a directory.
type Static struct {
	Root string `toml:"root"` // directory; must exist
	// Index names the files served for a directory request, tried in order.
	// Default DefaultIndex.
	Index StringList `toml:"index"`
	// AllowDotfiles serves files and directories whose name starts with a
	// dot. Default false (404); /.well-known/ is always served (RFC 8615).
	AllowDotfiles bool `toml:"allow_dotfiles"`
	// Precompressed serves foo.br, foo.zst and foo.gz siblings when the
	// client accepts them. Default true.
	Precompressed *bool `toml:"precompressed"`
	// Fallback is a path under Root served when the requested file does not
	// exist (single-page applications): like nginx's try_files $uri /index.html.
	Fallback string `toml:"fallback"`
	// CacheControl, when set, is sent as the Cache-Control header of files.
	CacheControl string `toml:"cache_control"`
	// Headers are extra response headers for every file.
	Headers map[string]string `toml:"headers"`
	// Browse lists directories that have no index file (HTML, names
	// escaped). Default false: such directories answer 403.
	Browse bool `toml:"browse"`
}

// Proxy forwards requests to HTTP/1.1 upstreams.
type Proxy struct {
	Upstreams      []string `toml:"upstreams"`       // "host:port", "[v6]:port", "http://host:port", "unix:/path.sock"
	StripPrefix    bool     `toml:"strip_prefix"`    // remove the route path before forwarding
	ForwardHeaders *bool    `toml:"forward_headers"` // X-Forwarded-*, Forwarded; default true
	// Targets are Upstreams parsed by Load, in the same order.
	Targets []Upstream `toml:"-"`
	// TrustedProxies are client networks whose X-Forwarded-For is kept and
	// appended to; from anyone else it is replaced. None means the site's
	// trusted_proxies.
	TrustedProxies []netip.Prefix `toml:"-"`           // the key trusted_proxies
	HostHeader     string         `toml:"host_header"` // "" = pass the client's Host through
	LB             string         `toml:"lb"`          // "round_robin" (default) or "least_conn"
	Keepalive      AutoInt        `toml:"keepalive"`   // idle connections kept per upstream
	// Timeouts; "0s" or left out means the Default* of defaults.go.
	ConnectTimeout        Duration `toml:"connect_timeout"`
	ResponseHeaderTimeout Duration `toml:"response_header_timeout"`
	IdleTimeout           Duration `toml:"idle_timeout"`
	FailTimeout           Duration `toml:"fail_timeout"` // cool-down of an upstream that refused
	Health                *Health  `toml:"health"`

	// TLS to https:// upstreams: certificates are verified against the
	// system's roots, or only against TLSCA (a PEM file of CA
	// certificates) when set, for the name TLSServerName (default: the
	// upstream's host). TLSInsecureSkipVerify accepts any certificate
	// (arka -t warns about it).
	TLSCA                 string `toml:"tls_ca"`
	TLSServerName         string `toml:"tls_server_name"`
	TLSInsecureSkipVerify bool   `toml:"tls_insecure_skip_verify"`
	// TLSRoots are the certificates of TLSCA, read once by
	// CheckEnvironment; nil without TLSCA (the system's roots).
	TLSRoots *x509.CertPool `toml:"-" json:"-"`

	// RequestBuffering reads a request body whole (memory, then a spool
	// file) before an upstream connection is taken. Default true; false
	// streams it (uploads the upstream must see as they come).
	RequestBuffering *bool `toml:"request_buffering"`
	// ResponseBuffering: see config/responsebuffering.go.
	ResponseBuffering *bool `toml:"response_buffering"`
}

// Health is an active upstream health check.
type Health struct {
	Path     string   `toml:"path"`
	Interval Duration `toml:"interval"` // default DefaultHealthInterval
	Timeout  Duration `toml:"timeout"`  // default DefaultHealthTimeout
}

// FastCGI runs scripts through a FastCGI server such as php-fpm.
type FastCGI struct {
	// Address is "unix:/path.sock" or "host:port"; FastCGIPHP ("php", the
	// default) means the php-fpm pool Arka runs itself.
	Address string `toml:"address"`
	// Dial is Address parsed by Load; zero for FastCGIPHP, whose address
	// is known when php-fpm runs.
	Dial NetAddr `toml:"-"`
	Root string  `toml:"root"` // document root, absolute; must exist
	// Index is served for directory requests. Default DefaultFastCGIIndex.
	Index StringList `toml:"index"`
	// SplitPath is the extension at which the URI is split into script and
	// PATH_INFO. Default DefaultSplitPath.
	SplitPath StringList `toml:"split_path"`
	// Fallback is a script (front controller) run when the requested file
	// does not exist, like nginx's try_files $uri $uri/ /index.php?$args.
	Fallback string            `toml:"fallback"`
	MaxConns AutoInt           `toml:"max_conns"` // connections kept to the FastCGI server
	Queue    Queue             `toml:"queue"`
	Env      map[string]string `toml:"env"` // extra CGI parameters

	// Timeouts; "0s" or left out means the Default* of defaults.go.
	ConnectTimeout Duration `toml:"connect_timeout"`
	ReadTimeout    Duration `toml:"read_timeout"` // longest wait for output from the script
	// RequestBuffering reads a request body whole (memory, then a spool
	// file) before a php-fpm connection is taken. Default true; false
	// streams bodies of known length while the script runs.
	RequestBuffering *bool `toml:"request_buffering"`
	// ResponseBuffering: see config/responsebuffering.go.
	ResponseBuffering *bool `toml:"response_buffering"`
}

// Queue is the FIFO of requests waiting for a FastCGI connection.
type Queue struct {
	Size    AutoInt  `toml:"size"`
	Timeout Duration `toml:"timeout"` // default DefaultFastCGIQueueWait
}

// Status shows the board's health and Arka's counters.
type Status struct {
	// Allow lists client networks (CIDR) that may see the page; others get
	// 403. Default DefaultStatusAllow: loopback and private networks.
	Allow []netip.Prefix `toml:"-"` // the key allow
}

// Global is the [global] table: settings of the whole server rather than
// one site. Every number is "auto" by default, derived from the board
// (package board); a value here overrides it.
type Global struct {
	Budget  BudgetConfig  `toml:"budget"`
	Thermal ThermalConfig `toml:"thermal"`
	PHP     *PHP          `toml:"php"`  // the php-fpm Arka runs; takes precedence over sites' php
	Fan     *Fan          `toml:"fan"`  // a case fan on a GPIO pin (config/fan.go)
	ACME    *ACMEDefaults `toml:"acme"` // defaults of the sites' [tls] email, ca, ca_root
	// LED: false leaves the board's activity LED to the kernel (default
	// true: Arka shows its state on it; package board/led).
	LED *bool `toml:"led"`
	// Request body limits of both engines (config/clientbody.go).
	BodyTimeout Duration `toml:"body_timeout"`
	BodyMinRate *Rate    `toml:"body_min_rate"`
}

// BudgetConfig overrides the board budget (see board.Budget for what each
// number bounds and how "auto" derives it).
type BudgetConfig struct {
	GOMAXPROCS      AutoInt  `toml:"gomaxprocs"`
	MemoryLimit     AutoSize `toml:"memory_limit"`      // soft Go memory limit (GOMEMLIMIT)
	GCHeapFloor     AutoSize `toml:"gc_heap_floor"`     // smallest heap goal of the collector; 0 for Go's default
	OpenFileCache   AutoSize `toml:"open_file_cache"`   // metadata of files
	ContentCache    AutoSize `toml:"content_cache"`     // bodies of small files
	CompressedCache AutoSize `toml:"compressed_cache"`  // variants compressed on the fly
	FastCGIMaxConns AutoInt  `toml:"fastcgi_max_conns"` // default max_conns of fastcgi routes
	FastCGIQueue    AutoInt  `toml:"fastcgi_queue"`     // default queue.size of fastcgi routes
	ProxyKeepalive  AutoInt  `toml:"proxy_keepalive"`   // default keepalive of proxy routes
	PHPMaxChildren  AutoInt  `toml:"php_max_children"`  // php-fpm pm.max_children when Arka runs php-fpm
	PHPPM           string   `toml:"php_pm"`            // "auto", "static" or "ondemand"
	Opcache         AutoSize `toml:"opcache"`           // opcache.memory_consumption
	SpoolFiles      AutoInt  `toml:"spool_files"`       // request bodies and responses spooled to files at once
	SpoolSize       AutoSize `toml:"spool_size"`        // bytes of spooled request bodies and responses together
}

// ThermalConfig sets when Arka sheds optional CPU work (brotli, high
// compression levels) because the board is hot.
type ThermalConfig struct {
	// Limit in degrees Celsius above which Arka sheds work; default 80
	// (where a Raspberry Pi starts to throttle).
	Limit float64 `toml:"limit"`
	// Hysteresis in degrees: work resumes at Limit - Hysteresis; default 5.
	Hysteresis float64 `toml:"hysteresis"`
}

// GlobalOf returns the [global] table of the sites, or an empty one.
func GlobalOf(sites []*Site) Global {
	for _, s := range sites {
		if s.Global != nil {
			return *s.Global
		}
	}
	return Global{}
}
