package config

import "time"

// Defaults, in one place. Every value a site file may leave out is here,
// with its unit; README.md's configuration reference is written from this
// list. Values marked "auto" in a site file come from the board budget
// (package board) when it is available, else from the constants below.
const (
	// DefaultListen is used when a site names neither listen nor tls.listen.
	DefaultListen = ":80"

	// DefaultLogFormat is the access-log line format: "combined" (Apache and
	// nginx's combined format) or "json".
	DefaultLogFormat = "combined"

	// DefaultCompressionMinSize: responses smaller than this many bytes are
	// sent without content coding; compressing them saves almost nothing.
	DefaultCompressionMinSize Size = 512

	// Content-coding levels for responses made per request (proxy, FastCGI).
	// zstd: klauspost/compress EncoderLevel 1 = fastest .. 4 = best.
	DefaultZstdLevel = 1
	// brotli for clients that accept br but not zstd (Safari): a low level,
	// because it runs for every response.
	DefaultBrotliLevel = 4
	DefaultGzipLevel   = 5

	// Static files without precompressed siblings are compressed once, while
	// their first request waits, and the result is cached: at levels that
	// cost about 10 ms for 200 KB of HTML on a laptop-class core, not
	// brotli 11's 0.6 s (measured figures: package server/internal/static,
	// "Compression levels"). Best compression is for precompressed siblings.
	DefaultStaticBrotliLevel = 5
	DefaultStaticGzipLevel   = 6

	DefaultIndex        = "index.html"
	DefaultFastCGIIndex = "index.php"
	DefaultSplitPath    = ".php"

	// FastCGIPHP is the address of a fastcgi route (and its default) that
	// means the php-fpm Arka runs itself.
	FastCGIPHP = "php"

	// DefaultFastCGIMaxConns and DefaultFastCGIQueueSize apply when a
	// fastcgi route says "auto" and no board budget is available.
	DefaultFastCGIMaxConns  = 16
	DefaultFastCGIQueueSize = 1024
	DefaultFastCGIQueueWait = 30 * time.Second
	DefaultFastCGIConnect   = 5 * time.Second
	DefaultFastCGIRead      = 60 * time.Second // like nginx's fastcgi_read_timeout

	// Proxy defaults. DefaultProxyKeepalive is the idle pool per upstream
	// when "auto" has no board budget (nginx's `keepalive 128` is the peer).
	DefaultProxyKeepalive      = 64
	DefaultProxyLB             = "round_robin"
	DefaultProxyConnect        = 5 * time.Second
	DefaultProxyResponseHeader = 60 * time.Second // like nginx's proxy_read_timeout
	DefaultProxyIdle           = 90 * time.Second
	DefaultProxyFail           = 10 * time.Second // like nginx's fail_timeout
	DefaultHealthInterval      = 10 * time.Second
	DefaultHealthTimeout       = 5 * time.Second

	// DefaultACMECA is the ACME CA of sites whose [tls] and [global] acme
	// name none: Let's Encrypt (see acme.go).
	DefaultACMECA = LetsEncryptProduction
)

// DefaultStatusAllow is who may see a status page that lists no `allow`:
// loopback and private networks (RFC 1918, RFC 4193 unique local, link-local).
var DefaultStatusAllow = []string{
	"127.0.0.0/8", "::1/128",
	"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
	"fc00::/7", "169.254.0.0/16", "fe80::/10",
}

// PrecompressedEnabled reports whether precompressed siblings are served
// (default true).
func (s *Static) PrecompressedEnabled() bool { return s.Precompressed == nil || *s.Precompressed }

// ForwardHeadersEnabled reports whether X-Forwarded-* and Forwarded are set
// (default true).
func (p *Proxy) ForwardHeadersEnabled() bool { return p.ForwardHeaders == nil || *p.ForwardHeaders }

// Or returns d's value, or def when d is unset.
func (d *Duration) Or(def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d)
}

// RequestBufferingEnabled reports whether request bodies are read whole
// before a php-fpm connection is taken (default true).
func (f *FastCGI) RequestBufferingEnabled() bool {
	return f.RequestBuffering == nil || *f.RequestBuffering
}

// RequestBufferingEnabled reports whether request bodies are read whole
// before an upstream connection is taken (default true).
func (p *Proxy) RequestBufferingEnabled() bool {
	return p.RequestBuffering == nil || *p.RequestBuffering
}

// UsesPHP reports whether the route's FastCGI server is the php-fpm Arka
// runs itself (address FastCGIPHP).
func (f *FastCGI) UsesPHP() bool { return f.Address == FastCGIPHP }
