package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/arkaweb/arka/board"
	"golang.org/x/net/idna"
)

// HandlerTypes are the route handler types a site file may name.
var HandlerTypes = []string{"static", "proxy", "fastcgi", "status", "redirect", "respond"}

// Load reads the site configuration at path: one site file, or a directory
// whose *.toml files are each one site (read in name order; other files and
// subdirectories are ignored). It returns every mistake at once as Errors,
// each located "file:line:col", and no sites unless all are valid.
func Load(path string) ([]*Site, error) {
	files, err := siteFiles(path)
	if err != nil {
		return nil, err
	}
	return LoadFiles(files)
}

// siteFiles lists the site files Load reads for path.
func siteFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, Errors{{File: path, Msg: errText(err)}}
	}
	files := []string{path}
	if fi.IsDir() {
		files, err = filepath.Glob(filepath.Join(path, "*.toml"))
		if err != nil {
			return nil, Errors{{File: path, Msg: err.Error()}}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, Errors{{File: path, Msg: "no *.toml site files in this directory"}}
		}
	}
	return files, nil
}

// ReadFiles reads the site files Load would read for path, without
// validating them (see ParseFiles).
func ReadFiles(path string) ([]File, error) {
	names, err := siteFiles(path)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, f := range names {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, Errors{{File: f, Msg: errText(err)}}
		}
		files = append(files, File{Name: f, Data: string(data)})
	}
	return files, nil
}

// LoadFiles reads and validates the given site files (see Load).
func LoadFiles(files []string) ([]*Site, error) {
	var (
		read []File
		errs Errors
	)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, &Error{File: f, Msg: errText(err)})
			continue
		}
		read = append(read, File{Name: f, Data: string(data)})
	}
	sites, err := ParseFiles(read)
	if err != nil {
		errs = append(errs, err.(Errors)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return sites, nil
}

// File is a site file's name (its path: relative paths inside it are
// relative to its directory) and content.
type File struct {
	Name string `json:"name"`
	Data string `json:"data"`
}

// ParseFiles validates site files already read, together, as LoadFiles
// does (cmd/arka -appliance keeps the last configuration that loaded this
// way).
func ParseFiles(files []File) ([]*Site, error) {
	var (
		sites []*Site
		errs  Errors
	)
	for _, f := range files {
		s, err := Parse(f.Name, []byte(f.Data))
		if err != nil {
			errs = append(errs, err.(Errors)...)
			continue
		}
		sites = append(sites, s)
	}
	if len(errs) == 0 {
		errs = append(errs, crossCheck(sites)...)
		errs = append(errs, phpConflicts(sites)...)
		resolveACME(sites)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return sites, nil
}

// rawSite is what a file decodes into before routes are typed.
type rawSite struct {
	Site
	Routes []rawRoute `toml:"routes"`
}

type rawRoute struct {
	Path    string         `toml:"path"`
	Handler toml.Primitive `toml:"handler"`
	RouteOptions
}

// Parse decodes and validates one site file. name is used in messages and
// to resolve nothing else: relative paths in the file are relative to the
// directory of name.
func Parse(name string, data []byte) (*Site, error) {
	var raw rawSite
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return nil, Errors{decodeError(name, data, err)}
	}
	// Relative paths in the file are relative to its directory, made
	// absolute here: php-fpm and the handlers must not depend on Arka's
	// working directory (arka -c site.toml).
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		dir = filepath.Dir(name)
	}
	v := &validator{file: name, pos: newPosIndex(data), dir: dir}
	site := &raw.Site
	site.File = name
	site.pos = v.pos

	for i, rr := range raw.Routes {
		v.route(&md, site, i, rr)
	}
	// Keys the schema does not know: every one is an error. Report only the
	// outermost unknown key, not each key inside an unknown table.
	for _, k := range unknownKeys(v.pos, md.Undecoded()) {
		if v.inFailedRoute(k.line) {
			continue // its handler was already reported; its keys were never decoded
		}
		v.errs = append(v.errs, &Error{File: name, Line: k.line, Col: k.col,
			Msg: fmt.Sprintf("unknown key %q%s", k.path, suggest(k.path))})
	}
	v.site(site)
	v.siteOptions(site)
	if len(v.errs) > 0 {
		sort.SliceStable(v.errs, func(i, j int) bool { return v.errs[i].Line < v.errs[j].Line })
		return nil, v.errs
	}
	resolveACME([]*Site{site})
	return site, nil
}

var lastKeyRE = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "((?:[^"\\]|\\.)*)"\): (.*)$`)

// typeMsgRE matches the library's messages for a value of the wrong type.
var typeMsgRE = regexp.MustCompile(`(?:incompatible types: TOML value has type ([^;]+); destination has type (\S+)|type mismatch for [\w.]+: expected (\w+) but found (\w+))`)

// friendlyType rewrites a wrong-type message in the words of the file:
// "expected an array, got a string".
func friendlyType(msg string) (string, bool) {
	m := typeMsgRE.FindStringSubmatch(msg)
	if m == nil {
		return msg, false
	}
	got, want := m[1], m[2]
	if got == "" {
		want, got = m[3], m[4]
	}
	words := func(t string) string {
		switch {
		case strings.HasPrefix(t, "[]"):
			return "an array"
		case strings.HasPrefix(t, "map["):
			return "a table"
		}
		switch t {
		case "slice", "array", "[]interface {}":
			return "an array"
		case "string":
			return "a string"
		case "bool", "boolean":
			return "true or false"
		case "int", "int64", "integer", "uint", "uint32", "uint64", "int32":
			return "an integer"
		case "float64", "float":
			return "a number"
		case "map", "table", "struct":
			return "a table"
		}
		return t
	}
	return fmt.Sprintf("expected %s, got %s", words(want), words(got)), true
}

// valueCol returns the column of the value after "key =" on line (1-based)
// of data, or col if there is none.
func valueCol(data []byte, line, col int) int {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) || col < 1 || col > len(lines[line-1]) {
		return col
	}
	l := lines[line-1]
	i := strings.IndexByte(l[col-1:], '=')
	if i < 0 {
		return col
	}
	j := col - 1 + i + 1
	for j < len(l) && (l[j] == ' ' || l[j] == '\t') {
		j++
	}
	if j >= len(l) {
		return col
	}
	return j + 1
}

// decodeError turns a BurntSushi/toml error into a located Error.
func decodeError(name string, data []byte, err error) *Error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.LastKey != "" {
			msg = fmt.Sprintf("%s: %s", pe.LastKey, msg)
		}
		line, col := pe.Position.Line, pe.Position.Col
		// At the end of the input the library may point past the last line;
		// point at the end of the last written line instead.
		lines := strings.Split(string(data), "\n")
		for line > 1 && (line > len(lines) || strings.TrimSpace(lines[line-1]) == "") {
			line--
			col = len(lines[line-1]) + 1
		}
		return &Error{File: name, Line: line, Col: col, Msg: msg}
	}
	e := &Error{File: name, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	if m := lastKeyRE.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		key := strings.ReplaceAll(m[2], `\"`, `"`)
		msg, typed := friendlyType(m[3])
		e.Msg = fmt.Sprintf("%s: %s", key, msg)
		// The library knows the line; find the key on it for the column.
		idx := newPosIndex(data)
		plain := strings.ReplaceAll(key, `"`, "")
		defer func() {
			if typed && e.Line > 0 {
				e.Col = valueCol(data, e.Line, e.Col)
			}
		}()
		for n := 0; ; n++ {
			offs := idx.plain[plain]
			if n >= len(offs) {
				break
			}
			if l, c := idx.lineCol(offs[n]); e.Line == 0 || l == e.Line {
				e.Line, e.Col = l, c
				break
			}
		}
	}
	return e
}

// suggest offers the known key closest to an unknown one.
func suggest(plain string) string {
	last := plain[strings.LastIndex(plain, ".")+1:]
	best, bestD := "", 3
	for _, k := range knownKeys {
		if d := editDistance(last, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" || best == last {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

var knownKeys = []string{
	"default", "server_names", "listen", "request_id", "tls", "cert", "key", "log", "enabled", "path",
	"format", "compression", "min_size", "zstd_level", "brotli_level", "gzip_level", "limits",
	"max_body_size", "routes", "handler", "type", "root", "index", "allow_dotfiles", "precompressed",
	"fan", "pin", "on", "off", "led", // [global] fan (config/fan.go) and led
	"fallback", "cache_control", "headers", "upstreams", "strip_prefix", "forward_headers",
	"trusted_proxies", "host_header", "lb", "keepalive", "connect_timeout", "response_header_timeout",
	"idle_timeout", "fail_timeout", "health", "interval", "timeout", "address", "split_path",
	"max_conns", "queue", "size", "env", "read_timeout", "allow", "global", "budget", "thermal",
	"gomaxprocs", "memory_limit", "open_file_cache", "content_cache", "compressed_cache",
	"fastcgi_max_conns", "fastcgi_queue", "proxy_keepalive", "php_max_children", "php_pm", "opcache",
	"limit", "hysteresis", "php", "fpm", "user", "max_requests", "upload_max_filesize",
	"slowlog_timeout", "terminate_timeout", "data_dir", "ini", "acme", "email", "ca", "ca_root",
	"redirect_https", "hsts",
	"set", "add", "remove", "basic_auth", "realm", "users", "deny", "to", "status", "body", "content_type",
	"errors", "pages", "intercept_errors", "tls_ca", "tls_server_name", "tls_insecure_skip_verify", "min_version", "browse",
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

type validator struct {
	file   string
	dir    string
	pos    *posIndex
	errs   Errors
	failed []int // routes whose handler table could not be decoded
}

// inFailedRoute reports whether a line lies within a route whose handler
// failed to decode (from its [[routes]] header to the next one).
func (v *validator) inFailedRoute(line int) bool {
	for _, i := range v.failed {
		start, _ := v.pos.at(fmt.Sprintf("routes[%d]", i))
		end := 1 << 30
		if l, _ := v.pos.at(fmt.Sprintf("routes[%d]", i+1)); l > 0 {
			end = l
		}
		if line >= start && line < end {
			return true
		}
	}
	return false
}

func (v *validator) errAt(path string, format string, args ...any) {
	line, col := v.pos.at(path)
	v.errs = append(v.errs, &Error{File: v.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

// abs resolves a path from the site file relative to the file's directory.
func (v *validator) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(v.dir, p)
}

func (v *validator) route(md *toml.MetaData, site *Site, i int, rr rawRoute) {
	at := fmt.Sprintf("routes[%d]", i)
	line, col := v.pos.at(at)
	r := Route{Path: rr.Path, Line: line, Col: col, Options: rr.RouteOptions, index: i}
	v.routeOptions(at, &r.Options)
	switch {
	case rr.Path == "":
		v.errAt(at, "route has no path (for example path = \"/\")")
	case !strings.HasPrefix(rr.Path, "/"):
		v.errAt(at+".path", "route path %q must start with \"/\"", rr.Path)
	case strings.ContainsAny(rr.Path, "?#\x00\\") || strings.Contains(rr.Path, "//"):
		v.errAt(at+".path", "route path %q must be a plain path without ?, #, \\ or //", rr.Path)
	case hasDotSegment(rr.Path):
		v.errAt(at+".path", "route path %q has a . or .. segment; requests are matched after those are resolved, so it could never match", rr.Path)
	}
	if !v.has(at + ".handler") {
		v.errAt(at, "route %q has no handler (for example handler = { type = \"static\", root = \"/srv/www\" })", rr.Path)
		return
	}
	var head struct {
		Type string `toml:"type"`
	}
	hp := at + ".handler"
	if err := md.PrimitiveDecode(rr.Handler, &head); err != nil {
		v.errAt(hp, "handler must be a table, as in handler = { type = \"static\", root = \"/srv/www\" }")
		v.failed = append(v.failed, i)
		return
	}
	r.Type = head.Type
	var target any
	switch head.Type {
	case "static":
		r.Static = &Static{}
		target = r.Static
	case "proxy":
		r.Proxy = &Proxy{}
		target = r.Proxy
	case "fastcgi":
		r.FastCGI = &FastCGI{}
		target = r.FastCGI
	case "status":
		r.Status = &Status{}
		target = r.Status
	case "redirect":
		r.Redirect = &Redirect{}
		target = r.Redirect
	case "respond":
		r.Respond = &Respond{}
		target = r.Respond
	case "":
		v.errAt(hp, "handler has no type (one of %s)", strings.Join(HandlerTypes, ", "))
		v.failed = append(v.failed, i)
		return
	default:
		v.errAt(hp+".type", "unknown handler type %q (one of %s)", head.Type, strings.Join(HandlerTypes, ", "))
		v.failed = append(v.failed, i)
		return
	}
	if err := md.PrimitiveDecode(rr.Handler, target); err != nil {
		v.typeErr(hp, err)
		v.failed = append(v.failed, i)
		return
	}
	switch {
	case r.Static != nil:
		v.static(hp, r.Static)
	case r.Proxy != nil:
		v.proxy(hp, r.Proxy)
	case r.FastCGI != nil:
		v.fastcgi(hp, r.FastCGI)
	case r.Status != nil:
		v.status(hp, r.Status)
	case r.Redirect != nil:
		v.redirect(hp, r.Redirect)
	case r.Respond != nil:
		v.respond(hp, r.Respond)
	}
	site.Routes = append(site.Routes, r)
}

func (v *validator) has(path string) bool { _, ok := v.pos.indexed[path]; return ok }

// hasControl reports whether s has a NUL or another control character.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// typeErr reports a decoding error inside a table, at the key it names.
func (v *validator) typeErr(table string, err error) {
	msg := stripTOML(err)
	key := ""
	if m := lastKeyRE.FindStringSubmatch(err.Error()); m != nil {
		key, msg = m[2], m[3]
	} else {
		var pe toml.ParseError
		if errors.As(err, &pe) && pe.LastKey != "" {
			key, msg = pe.LastKey, pe.Message
		}
	}
	msg, _ = friendlyType(msg)
	if key == "" {
		v.errAt(table, "%s", msg)
		return
	}
	// The library names keys without array indices ("routes.handler.queue.size");
	// the table path has them ("routes[2].handler").
	rest := key
	if i := strings.Index(key, "handler."); i >= 0 {
		rest = key[i+len("handler."):]
	}
	v.errAt(table+"."+rest, "%s: %s", rest, msg)
}

func stripTOML(err error) string {
	s := err.Error()
	if m := lastKeyRE.FindStringSubmatch(s); m != nil {
		return m[2] + ": " + m[3]
	}
	return strings.TrimPrefix(s, "toml: ")
}

func (v *validator) site(s *Site) {
	v.healthPath(s)
	for i, n := range s.ServerNames {
		norm, err := normalizeName(n)
		if err != nil {
			v.errAt(fmt.Sprintf("server_names[%d]", i), "server name %q: %v", n, err)
			continue
		}
		s.ServerNames[i] = norm
	}
	switch {
	case v.has("listen") && len(s.Listen) == 0:
		v.errAt("listen", "listen is empty: name at least one address, as in listen = [\":80\"], or leave the key out for the default %s", DefaultListen)
	case v.has("tls") && len(s.TLS.Listen) == 0 && s.TLS.Cert == "":
		v.errAt("tls", "tls has no listen address (for example listen = [\":443\"])")
	case len(s.Listen) == 0 && len(s.TLS.Listen) == 0:
		s.Listen = []string{DefaultListen}
	}
	for i, a := range s.Listen {
		if norm, err := normalizeListen(a); err != nil {
			v.errAt(fmt.Sprintf("listen[%d]", i), "listen %q: %v", a, err)
		} else {
			s.Listen[i] = norm
		}
	}
	for i, a := range s.TLS.Listen {
		if norm, err := normalizeListen(a); err != nil {
			v.errAt(fmt.Sprintf("tls.listen[%d]", i), "tls listen %q: %v", a, err)
		} else {
			s.TLS.Listen[i] = norm
		}
	}
	s.TLS.Cert, s.TLS.Key = v.abs(s.TLS.Cert), v.abs(s.TLS.Key)
	switch {
	case (s.TLS.Cert == "") != (s.TLS.Key == ""):
		v.errAt("tls", "tls needs both cert and key (or neither, for a generated self-signed certificate)")
	case s.TLS.Cert != "" && len(s.TLS.Listen) == 0:
		v.errAt("tls", "tls has a certificate but no listen address (for example listen = [\":443\"])")
	}
	v.acme(s)
	switch s.Log.Format {
	case "":
		s.Log.Format = DefaultLogFormat
	case "combined", "json":
	default:
		v.errAt("log.format", "log format %q: use \"combined\" or \"json\"", s.Log.Format)
	}
	if s.Log.Path != "" && s.Log.Path != "-" {
		s.Log.Path = v.abs(s.Log.Path)
	}
	if g := s.Global; g != nil {
		switch g.Budget.PHPPM {
		case "", "auto", "static", "ondemand":
		default:
			v.errAt("global.budget.php_pm", "php_pm %q: use \"auto\", \"static\" or \"ondemand\"", g.Budget.PHPPM)
		}
		if g.PHP != nil {
			v.php("global.php", g.PHP)
		}
		if g.Fan != nil {
			v.fan("global.fan", g.Fan)
		}
		v.clientBody(g)
		t := g.Thermal
		limit, hyst := t.Limit, t.Hysteresis
		if limit == 0 {
			limit = board.DefaultHotC
		}
		if hyst == 0 {
			hyst = board.DefaultHysteresisC
		}
		if t.Limit < 0 || t.Limit > 150 || t.Hysteresis < 0 || hyst >= limit {
			v.errAt("global.thermal", "thermal limit must be 1..150 °C and hysteresis smaller than it (work resumes at limit - hysteresis)")
		}
	}
	if s.PHP != nil {
		v.php("php", s.PHP)
	}
	c := s.Compression
	if c.ZstdLevel < 0 || c.ZstdLevel > 4 {
		v.errAt("compression.zstd_level", "zstd_level %d: use 1 (fastest) to 4 (best)", c.ZstdLevel)
	}
	if c.BrotliLevel < 0 || c.BrotliLevel > 11 {
		v.errAt("compression.brotli_level", "brotli_level %d: use 0 to 11", c.BrotliLevel)
	}
	if c.GzipLevel < 0 || c.GzipLevel > 9 {
		v.errAt("compression.gzip_level", "gzip_level %d: use 1 to 9", c.GzipLevel)
	}
	if len(s.Routes) == 0 && len(v.errs) == 0 {
		v.errs = append(v.errs, &Error{File: v.file, Line: 1, Col: 1, Msg: "site has no routes (add [[routes]] with a path and a handler)"})
	}
	seen := map[string]int{}
	for i, r := range s.Routes {
		if j, ok := seen[r.Path]; ok {
			v.errAt(fmt.Sprintf("routes[%d].path", i), "route path %q is already used by the route on line %d", r.Path, s.Routes[j].Line)
		}
		seen[r.Path] = i
	}
}

// normalizeName lower-cases a server name and checks its form: a host name,
// a "*." wildcard followed by a host name, or an IP address.
func normalizeName(n string) (string, error) {
	n = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(n), "."))
	if n == "" {
		return "", errors.New("empty name")
	}
	if strings.HasPrefix(n, "[") && strings.HasSuffix(n, "]") {
		n = n[1 : len(n)-1]
	}
	if _, err := netip.ParseAddr(n); err == nil {
		return n, nil
	}
	if strings.Contains(n, ":") {
		return "", errors.New("a server name has no port; ports come from listen")
	}
	host := strings.TrimPrefix(n, "*.")
	if strings.Contains(host, "*") {
		return "", errors.New("a wildcard is only allowed as the first label, as in \"*.example.org\"")
	}
	if err := checkHostName(host); err != nil {
		return "", err
	}
	return n, nil
}

// checkHostName checks a lower-case DNS name: dot-separated labels of
// letters, digits, hyphens and underscores (RFC 1123 section 2.1, with the
// underscore some local names use), at most 63 bytes each.
func checkHostName(host string) error {
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("not a valid host name")
		}
		for _, c := range label {
			if c >= utf8.RuneSelf {
				// An internationalized name goes on the wire, in SNI and
				// in Host, in its ASCII form (RFC 5890 A-labels).
				if a, err := idna.Lookup.ToASCII(host); err == nil {
					return fmt.Errorf("character %q is not allowed in a host name; write an internationalized name in its ASCII form, %q", c, a)
				}
				return fmt.Errorf("character %q is not allowed in a host name; write an internationalized name in its ASCII (xn--) form", c)
			}
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("character %q is not allowed in a host name", c)
			}
		}
	}
	return nil
}

// normalizeListen checks "host:port" and returns it in canonical form. A
// host name is checked for its form only: it is resolved when it is bound
// (a name that does not resolve yet, as on a board whose network comes up
// after Arka, is no configuration error).
func normalizeListen(a string) (string, error) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(a))
	if err != nil {
		return "", errors.New("expected host:port, :port or [v6]:port")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	host = strings.ToLower(host)
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			if _, err := normalizeName(host); err != nil {
				return "", fmt.Errorf("host %q is not an IP address or host name", host)
			}
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// dirGiven checks that a directory key is set; that it is a directory is
// for CheckEnvironment.
func (v *validator) dirGiven(path, key, p string) {
	if p == "" {
		v.errAt(path, "%s: missing (a directory)", key)
	}
}

func (v *validator) static(at string, s *Static) {
	s.Root = v.abs(s.Root)
	v.dirGiven(at, "root", s.Root)
	for i, n := range s.Index {
		if n == "" || strings.ContainsAny(n, "/\\\x00") {
			v.errAt(fmt.Sprintf("%s.index[%d]", at, i), "index %q must be a plain file name", n)
		}
	}
	switch {
	case s.Fallback == "":
	case !strings.HasPrefix(s.Fallback, "/") || hasDotSegment(s.Fallback):
		v.errAt(at+".fallback", "fallback %q must be a path under root starting with \"/\"", s.Fallback)
	}
	for k, val := range s.Headers {
		if !validHeaderName(k) {
			v.errAt(at+".headers", "header name %q is not a valid field name (RFC 9110 section 5.1)", k)
		} else if framingField(k) {
			v.errAt(at+".headers", framingFieldMsg, k)
		} else if !validHeaderValue(val) {
			v.errAt(at+".headers", "header %s: value %q has a control character (RFC 9110 section 5.5)", k, val)
		}
	}
	if !validHeaderValue(s.CacheControl) {
		v.errAt(at+".cache_control", "cache_control %q has a control character (RFC 9110 section 5.5)", s.CacheControl)
	}
}

// validHeaderValue: a field value has no control characters other than
// HTAB (RFC 9110 section 5.5).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Upstream is a parsed proxy upstream address.
type Upstream struct {
	Network string // "tcp" or "unix"
	Address string // "host:port" or a socket path
	TLS     bool   // "https://": spoken to over TLS (see Proxy.TLSCA)
}

// ParseUpstream parses "host:port", "[v6]:port", "http://host:port",
// "https://host:port" (port 443 if left out) or "unix:/path.sock".
func ParseUpstream(s string) (Upstream, error) {
	t := strings.TrimSpace(s)
	if p, ok := strings.CutPrefix(t, "unix:"); ok {
		if !filepath.IsAbs(p) {
			return Upstream{}, errors.New("unix socket path must be absolute, as in \"unix:/run/app.sock\"")
		}
		return Upstream{Network: "unix", Address: p}, nil
	}
	secure := strings.HasPrefix(t, "https://")
	if rest, ok := cutScheme(t); ok {
		t = strings.TrimSuffix(rest, "/")
		if strings.Contains(t, "/") {
			return Upstream{}, errors.New("an upstream is an address, not a URL with a path")
		}
		if _, _, err := net.SplitHostPort(t); err != nil {
			port := "80"
			if secure {
				port = "443"
			}
			t = net.JoinHostPort(strings.Trim(t, "[]"), port)
		}
	} else if strings.Contains(t, "://") {
		return Upstream{}, errors.New("only http:// and https:// upstreams are supported")
	}
	host, port, err := net.SplitHostPort(t)
	if err != nil || host == "" {
		return Upstream{}, errors.New("expected host:port, [v6]:port, http://host:port or unix:/path.sock")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return Upstream{}, fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if _, err := netip.ParseAddr(host); err != nil && checkHostName(strings.ToLower(strings.TrimSuffix(host, "."))) != nil {
		return Upstream{}, fmt.Errorf("host %q is neither an IP address nor a host name", host)
	}
	return Upstream{Network: "tcp", Address: net.JoinHostPort(host, port), TLS: secure}, nil
}

// ParsePrefix parses a CIDR ("192.168.0.0/16") or a single address.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a network like \"192.168.0.0/16\"", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or network", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (v *validator) proxy(at string, p *Proxy) {
	if len(p.Upstreams) == 0 {
		v.errAt(at+".upstreams", "proxy needs at least one upstream (upstreams = [\"127.0.0.1:8080\"])")
	}
	anyTLS := false
	for i, u := range p.Upstreams {
		a, err := ParseUpstream(u)
		if err != nil {
			v.errAt(fmt.Sprintf("%s.upstreams[%d]", at, i), "upstream %q: %v", u, err)
		}
		anyTLS = anyTLS || a.TLS
	}
	v.proxyTLS(at, p, anyTLS)
	switch p.LB {
	case "", "round_robin", "least_conn":
	default:
		v.errAt(at+".lb", "lb %q: use \"round_robin\" or \"least_conn\"", p.LB)
	}
	for i, c := range p.TrustedProxies {
		if _, err := ParsePrefix(c); err != nil {
			v.errAt(fmt.Sprintf("%s.trusted_proxies[%d]", at, i), "trusted_proxies: %v", err)
		}
	}
	if h := p.HostHeader; h != "" && (strings.ContainsAny(h, " /@?#") || !validHeaderValue(h)) {
		v.errAt(at+".host_header", "host_header %q must be a host name, optionally with a port", h)
	}
	if h := p.Health; h != nil && !strings.HasPrefix(h.Path, "/") {
		v.errAt(at+".health.path", "health path %q must start with \"/\"", h.Path)
	}
}

func (v *validator) fastcgi(at string, f *FastCGI) {
	f.Root = v.abs(f.Root)
	v.dirGiven(at, "root", f.Root)
	switch a := f.Address; {
	case a == "" || a == "php":
	case strings.HasPrefix(a, "unix:"):
		if !filepath.IsAbs(strings.TrimPrefix(a, "unix:")) {
			v.errAt(at+".address", "address %q: unix socket path must be absolute", a)
		}
	default:
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			v.errAt(at+".address", "address %q: expected \"unix:/path.sock\", \"host:port\" or \"php\"", a)
		}
	}
	for i, n := range f.Index {
		if n == "" || strings.ContainsAny(n, "/\\\x00") {
			v.errAt(fmt.Sprintf("%s.index[%d]", at, i), "index %q must be a plain file name", n)
		}
	}
	for i, s := range f.SplitPath {
		if !strings.HasPrefix(s, ".") || len(s) < 2 || strings.Contains(s, "/") || hasControl(s) {
			v.errAt(fmt.Sprintf("%s.split_path[%d]", at, i), "split_path %q must be an extension like \".php\"", s)
		}
	}
	if fb := f.Fallback; fb != "" {
		exts := f.SplitPath
		if len(exts) == 0 {
			exts = []string{DefaultSplitPath}
		}
		script := false
		for _, e := range exts {
			script = script || len(fb) > len(e) && strings.EqualFold(fb[len(fb)-len(e):], e)
		}
		if !strings.HasPrefix(fb, "/") || strings.HasSuffix(fb, "/") || strings.Contains(fb, "//") ||
			hasDotSegment(fb) || hasControl(fb) || !script {
			v.errAt(at+".fallback", "fallback %q must be the path of a script under the root, like \"/index.php\"", fb)
		}
	}
	for k := range f.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			v.errAt(at+".env", "env name %q is not valid", k)
		}
	}
}

func (v *validator) status(at string, s *Status) {
	for i, c := range s.Allow {
		if _, err := ParsePrefix(c); err != nil {
			v.errAt(fmt.Sprintf("%s.allow[%d]", at, i), "allow: %v", err)
		}
	}
}

// crossCheck finds conflicts between sites: two defaults on one address,
// one name claimed twice on one address, an address used both with and
// without TLS.
func crossCheck(sites []*Site) Errors {
	var errs Errors
	at := func(s *Site, path string) (int, int) { return s.pos.at(path) }
	type claim struct {
		site *Site
		path string
	}
	var global *Site
	for _, s := range sites {
		if s.Global == nil {
			continue
		}
		if global != nil {
			l, col := at(s, "global")
			gl, _ := at(global, "global")
			errs = append(errs, &Error{File: s.File, Line: l, Col: col,
				Msg: fmt.Sprintf("a second [global] table (the first is in %s:%d); keep one", global.File, gl)})
			continue
		}
		global = s
	}
	defaults := map[string]claim{}
	nameless := map[string][]claim{} // address -> sites without server_names that are not default
	var namelessAddrs []string
	names := map[string]claim{}
	kinds := map[string]claim{} // address -> first site, path tells tls or not
	for _, s := range sites {
		addrs := func(tlsSide bool) []string {
			if tlsSide {
				return s.TLS.Listen
			}
			return s.Listen
		}
		for _, tlsSide := range []bool{false, true} {
			prefix := "listen"
			if tlsSide {
				prefix = "tls.listen"
			}
			for i, a := range addrs(tlsSide) {
				path := fmt.Sprintf("%s[%d]", prefix, i)
				if c, ok := kinds[a]; ok && strings.HasPrefix(c.path, "tls.") != tlsSide {
					l, col := at(s, path)
					ol, _ := at(c.site, c.path)
					errs = append(errs, &Error{File: s.File, Line: l, Col: col,
						Msg: fmt.Sprintf("%s is used with TLS in one site and without in another (%s:%d)", a, c.site.File, ol)})
				} else if !ok {
					kinds[a] = claim{s, path}
				}
				if !s.Default && len(s.ServerNames) == 0 {
					if len(nameless[a]) == 0 {
						namelessAddrs = append(namelessAddrs, a)
					}
					nameless[a] = append(nameless[a], claim{s, path})
				}
				if s.Default {
					if c, ok := defaults[a]; ok && c.site != s {
						l, col := at(s, "default")
						ol, _ := at(c.site, "default")
						errs = append(errs, &Error{File: s.File, Line: l, Col: col,
							Msg: fmt.Sprintf("a second default site for %s (the first is %s:%d)", a, c.site.File, ol)})
					} else {
						defaults[a] = claim{s, "default"}
					}
				}
				for j, n := range s.ServerNames {
					key := a + " " + n
					np := fmt.Sprintf("server_names[%d]", j)
					if c, ok := names[key]; ok && c.site != s {
						l, col := at(s, np)
						ol, _ := at(c.site, c.path)
						errs = append(errs, &Error{File: s.File, Line: l, Col: col,
							Msg: fmt.Sprintf("server name %q on %s is already claimed by %s:%d", n, a, c.site.File, ol)})
					} else if !ok {
						names[key] = claim{s, np}
					}
				}
			}
		}
	}
	// A site without server_names answers only as its address's default
	// (for any name): when another site is the default, or another such
	// site came first, it can never be reached.
	for _, a := range namelessAddrs {
		list := nameless[a]
		first := claim{}
		if d, ok := defaults[a]; ok {
			first = d
		} else {
			first, list = list[0], list[1:]
		}
		for _, c := range list {
			if c.site == first.site {
				continue
			}
			l, col := at(c.site, c.path)
			fl, _ := at(first.site, first.path)
			errs = append(errs, &Error{File: c.site.File, Line: l, Col: col,
				Msg: fmt.Sprintf("a site without server_names answers only as the default for %s, and %s:%d already is: this one would never be reached; give it server_names", a, first.site.File, fl)})
		}
	}
	// A wildcard address and a specific address on the same port cannot both
	// be bound; say so rather than failing at bind time.
	byPort := map[string][]string{}
	for a := range kinds {
		h, p, _ := net.SplitHostPort(a)
		_ = h
		byPort[p] = append(byPort[p], a)
	}
	for _, as := range byPort {
		sort.Strings(as)
		var wild, specific string
		for _, a := range as {
			h, _, _ := net.SplitHostPort(a)
			if h == "" || h == "0.0.0.0" || h == "::" {
				wild = a
			} else if specific == "" {
				specific = a
			}
		}
		if wild != "" && specific != "" {
			c := kinds[specific]
			l, col := at(c.site, c.path)
			w := kinds[wild]
			wl, _ := at(w.site, w.path)
			errs = append(errs, &Error{File: c.site.File, Line: l, Col: col,
				Msg: fmt.Sprintf("%s overlaps %s (%s:%d); give both sites the same listen address and tell them apart with server_names", specific, wild, w.site.File, wl)})
		}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].File != errs[j].File {
			return errs[i].File < errs[j].File
		}
		return errs[i].Line < errs[j].Line
	})
	return errs
}

// errText shortens an *os.PathError to its cause, since messages already
// name the path.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
