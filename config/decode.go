package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// Stage 1 of loading a site file: decoding the TOML into the schema's
// types, with every mistake located at file:line:col (positions.go finds
// the keys).

// rawSite is what a file decodes into: the Site, with the keys whose
// typed form validate parses (routes, listen addresses) as written.
type rawSite struct {
	Site
	TrustedProxies []string   `toml:"trusted_proxies"`
	Listen         []string   `toml:"listen"`
	TLS            rawTLS     `toml:"tls"`
	Routes         []rawRoute `toml:"routes"`
}

type rawTLS struct {
	TLS
	Listen []string `toml:"listen"`
}

type rawRoute struct {
	Path    string         `toml:"path"`
	Handler toml.Primitive `toml:"handler"`
	RouteOptions
	Allow []string `toml:"allow"` // RouteOptions.Allow as written
	Deny  []string `toml:"deny"`
}

var lastKeyRE = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "((?:[^"\\]|\\.)*)"\): (.*)$`)

// typeMsgRE matches the library's messages for a value of the wrong type.
// The library names types in Go's terms ("time.Time", "[]any",
// "config.Fan"); the message says them in TOML's (typeWords).
var typeMsgRE = regexp.MustCompile(`(?:incompatible types: TOML value has type ([^;]+); destination has type (.+)$|type mismatch for \S+: expected (\w+) but found (\S+))`)

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
	return fmt.Sprintf("expected %s, got %s", typeWords(want), typeWords(got)), true
}

// typeWords names a type of the library's messages the way a TOML file
// writes it: the value's Go type (int64, float64, time.Time, []any,
// map[string]any) or the kind the destination wants ("integer", "float",
// "slice", "primitive (string-like)", "table").
func typeWords(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map["):
		return "a table"
	case strings.HasPrefix(t, "primitive"):
		return "a string"
	}
	switch t {
	case "slice", "array":
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
	case "time.Time":
		return "a date or time" // offset or local date-time, local date, local time
	}
	return "a value of another type" // not a TOML type: never a Go type name in a message
}

// valueCol returns the column of the value after "key =" on line (1-based)
// of the indexed document, or col if there is none.
func valueCol(idx *posIndex, line, col int) int {
	l, ok := idx.line(line)
	if !ok || col < 1 || col > len(l) {
		return col
	}
	if line == 1 {
		l = strings.TrimPrefix(l, "\ufeff") // columns do not count it (posIndex)
	}
	if col > len(l) {
		return col
	}
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

// decodeError turns a BurntSushi/toml error of a site file into a
// located Error.
func decodeError(name string, data []byte, err error) *Error {
	return decodeErrorIn(name, &posIndex{src: data}, err, siteSchema)
}

// errLineCol returns the 1-based line and column of off, a byte offset
// of the library's (which skips a byte order mark) in idx's document.
func errLineCol(idx *posIndex, off int) (int, int) {
	bom := 0
	if bytes.HasPrefix(idx.src, []byte("\ufeff")) {
		bom = 3
	}
	line, col := idx.lineCol(off + bom)
	if line == 1 && idx.bom == 0 {
		col -= bom // an index without positions (decodeError) has no bom
	}
	return line, col
}

// inTableHeader reports whether line (1-based) of src, which has a
// syntax error on that line, starts with a table header ("[name]" or
// "[[name]]"): it starts with "[" and the lines before it are whole
// statements (they decode), so the "[" is not inside a value (an array
// written over several lines).
func inTableHeader(src []byte, line int) bool {
	start := 0
	for n := 1; n < line; n++ {
		i := bytes.IndexByte(src[start:], '\n')
		if i < 0 {
			return false
		}
		start += i + 1
	}
	rest := bytes.TrimLeft(src[start:], " \t")
	if len(rest) == 0 || rest[0] != '[' {
		return false
	}
	var m map[string]any
	_, err := DecodeTOML("", src[:start], &m)
	return err == nil
}

// foundRE matches the library's message for a bare word where a value
// belongs, and the word (quoted).
var foundRE = regexp.MustCompile(`^expected value but found ("(?:[^"\\]|\\.)*") instead$`)

// definedRE matches the library's message for a key or table given
// twice (its dotted path).
var definedRE = regexp.MustCompile(`^Key '(.*)' has already been defined\.$`)

// firstDefined returns where the key at a plain dotted path is first
// written in src before off (the library's offset of the second time),
// or 0, 0: the last time it is written before off, as the keys of each
// element of an array of tables have the same path.
func firstDefined(src []byte, off int, key string) (int, int) {
	if bytes.HasPrefix(src, []byte("\ufeff")) {
		off += 3
	}
	p := newPosIndex(src[:min(off, len(src))])
	if offs := p.plain[key]; len(offs) > 0 {
		return p.lineCol(offs[len(offs)-1])
	}
	if o, ok := p.indexed[key]; ok { // a table implied by a dotted key or header
		return p.lineCol(o)
	}
	return 0, 0
}

// statementRE matches the start of a TOML statement: a table header or
// "key =".
var statementRE = regexp.MustCompile(`^[ \t]*(\[|[A-Za-z0-9_-]+([ \t]*\.[ \t]*[A-Za-z0-9_-]+)*[ \t]*=)`)

// startsStatement reports whether the library's offset off (see
// errLineCol) is the first non-blank of its line, and the line starts a
// table header or a key = value.
func startsStatement(idx *posIndex, off int) bool {
	line, col := errLineCol(idx, off)
	l, ok := idx.line(line)
	if line == 1 {
		l = strings.TrimPrefix(l, "\ufeff")
	}
	return ok && col >= 1 && col <= len(l) && strings.TrimLeft(l[:col-1], " \t") == "" && statementRE.MatchString(l)
}

// openBracket returns the library's offset of the innermost '[' still
// open at off (strings and comments skipped), or -1.
func openBracket(src []byte, off int) int {
	bom := 0
	if bytes.HasPrefix(src, []byte("\ufeff")) {
		bom = 3
	}
	end := min(off+bom, len(src))
	var open []int
	for i := bom; i < end; i++ {
		switch src[i] {
		case '#':
			for i < end && src[i] != '\n' {
				i++
			}
		case '"', '\'':
			i = stringEnd(src, i)
		case '[', '{':
			open = append(open, i)
		case ']', '}':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
	}
	if len(open) == 0 || src[open[len(open)-1]] != '[' {
		return -1
	}
	return open[len(open)-1] - bom
}

// secretKeyRE matches the keys whose values a syntax error must not echo:
// passwords, passphrases, tokens, secrets and private keys (the last
// component of a dotted key, any case: env.DB_PASSWORD,
// wifi.networks.passphrase).
var secretKeyRE = regexp.MustCompile(`(?i)(pass|secret|token|psk|private|credential|api_?key)[^.]*$`)

// decodeErrorIn is decodeError with the document's index, if it has one
// already (idx.plain not nil), so that locating many errors of a file
// does not index it again for each.
// s is the schema of the file, for what a key's value should be.
func decodeErrorIn(name string, idx *posIndex, err error, s keySchema) *Error {
	if e, ok := err.(*Error); ok {
		return e // CheckTOML's: positioned already
	}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		// The error's byte offset is right; the library's line is the
		// next one for an error at a newline (an unterminated table
		// header), and its column for an error at the start of a line
		// is one past the end of the line before.
		line, col := errLineCol(idx, pe.Position.Start)
		if line < 1 {
			line, col = pe.Position.Line, pe.Position.Col
		}
		if strings.HasPrefix(msg, "expected a comma (',') or array terminator (']')") {
			// The next line's key or table header, or the end of the
			// file, inside the array: the array's ']' is missing. Its '['
			// is where to look.
			before := ""
			switch {
			case strings.HasSuffix(msg, "but got end of file"):
				before = "the end of the file"
			case startsStatement(idx, pe.Position.Start):
				before = fmt.Sprintf("%d:%d", line, col)
			}
			if open := openBracket(idx.src, pe.Position.Start); before != "" && open >= 0 {
				msg = "array not closed: ']' is missing before " + before
				line, col = errLineCol(idx, open)
			}
		}
		// The library's last key is the table of the last header it
		// finished: in the header being written it names the table
		// before, which is not where the mistake is.
		if m := foundRE.FindStringSubmatch(msg); m != nil && pe.LastKey != "" && s.isBool(pe.LastKey) {
			msg = fmt.Sprintf("expected true or false, found %s", m[1])
		} else if strings.HasPrefix(msg, "expected value but found") {
			// A bare word: most often a string without its quotes. The
			// library quotes what it found; a secret's value must not go
			// to logs and status pages.
			if secretKeyRE.MatchString(pe.LastKey) {
				msg = "expected a value (not shown: the key names a secret)"
			}
			msg += `; a string must be in double quotes: key = "value"`
		}
		if m := definedRE.FindStringSubmatch(msg); m != nil {
			msg = m[1] + ": given twice"
			if l, c := firstDefined(idx.src, pe.Position.Start, m[1]); l > 0 {
				msg += fmt.Sprintf(" (first at %d:%d)", l, c)
			}
		} else if pe.LastKey != "" && !inTableHeader(idx.src, line) {
			msg = fmt.Sprintf("%s: %s", pe.LastKey, msg)
		}
		if strings.HasPrefix(pe.Message, "invalid UTF-8") {
			// The library points near it (in a comment, at the comment's
			// start); the first byte that is not UTF-8 is the one.
			if off := firstInvalidUTF8(idx.src); off >= 0 {
				line, col = idx.lineCol(off)
			}
			msg += " (a TOML file is UTF-8: save it as UTF-8)"
		}
		// At the end of the input the library may point past the last line;
		// point at the end of the last written line instead.
		for line > 1 {
			l, ok := idx.line(line)
			if ok && strings.TrimSpace(l) != "" {
				break
			}
			line--
			prev, _ := idx.line(line)
			col = len(prev) + 1
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
		if idx.plain == nil {
			idx = newPosIndex(idx.src) // decoded: the syntax is valid
		}
		plain := strings.ReplaceAll(key, `"`, "")
		defer func() {
			if typed && e.Line > 0 {
				e.Col = valueCol(idx, e.Line, e.Col)
			}
		}()
		// The key's occurrences are in file order: the first on or
		// after the start of the library's line.
		offs := idx.plain[plain]
		n := 0
		if s, ok := idx.lineStart(e.Line); ok {
			n = sort.SearchInts(offs, s)
		}
		if n < len(offs) {
			if l, c := idx.lineCol(offs[n]); e.Line == 0 || l == e.Line {
				e.Line, e.Col = l, c
			}
		}
	}
	return e
}

// suggest offers the known key closest to an unknown one (a plain
// dotted path): one of the keys of its table, else of knownKeys.
func suggest(plain string) string {
	return siteSchema.suggest(plain, knownKeys)
}

// suggest offers the key of the table holding plain (a dotted path) that
// its last part is closest to: the same but for case, else at most two
// edits away and fewer than half its letters; else the closest of
// fallback; "" if none is close.
func (s keySchema) suggest(plain string, fallback []string) string {
	dot := strings.LastIndex(plain, ".")
	last := plain[dot+1:]
	keys := s.keysAt(plain[:max(dot, 0)])
	if keys == nil {
		keys = fallback
	}
	for _, k := range keys {
		if strings.EqualFold(k, last) && k != last {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
	}
	best, bestD := "", min(3, len(last)/2+1)
	for _, k := range keys {
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
	"trusted_proxies", "client_ip_header", "host_header", "lb", "keepalive", "connect_timeout", "response_header_timeout",
	"idle_timeout", "fail_timeout", "health", "interval", "timeout", "address", "split_path",
	"max_conns", "queue", "size", "env", "read_timeout", "allow", "global", "budget", "thermal",
	"gomaxprocs", "memory_limit", "gc_heap_floor", "open_file_cache", "content_cache", "compressed_cache",
	"fastcgi_max_conns", "fastcgi_queue", "proxy_keepalive", "php_max_children", "php_pm", "opcache", "spool_files", "spool_size",
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

// decodedRoute is one [[routes]] entry after decoding: its Route, or the
// errors that kept its handler from being decoded.
type decodedRoute struct {
	raw  rawRoute
	ri   int      // index in Site.Routes; -1 when the handler could not be decoded
	nets []string // the handler's networks as written (see validator.handler)
	errs Errors   // why not
}

// decode decodes a site file: the site's keys into the schema, each
// route's handler into its type. A syntax error or a value of the wrong
// type is returned at once; errors of one route's handler are kept with
// it (v.routes) and keys the schema does not know are in v.unknown, both
// for validate to report in file order.
func (v *validator) decode(data []byte) (*Site, error) {
	var raw rawSite
	md, err := DecodeTOML(v.file, data, &raw)
	if err != nil {
		// A syntax error ends decoding; a value that does not fit its key
		// is found again with every other one (lenient.go).
		var top map[string]toml.Primitive
		md, err = DecodeTOML(v.file, data, &top)
		if err != nil {
			return nil, Errors{decodeError(v.file, data, err)}
		}
		raw = rawSite{}
		v.lenientSite(&md, top, &raw)
	}
	site := &raw.Site
	site.File = v.file
	site.pos = v.pos
	site.TLS = raw.TLS.TLS
	v.written.listen, v.written.tlsListen = raw.Listen, raw.TLS.Listen
	v.written.trusted = raw.TrustedProxies
	for i, rr := range raw.Routes {
		d := decodedRoute{raw: rr, ri: -1}
		saved := v.errs
		v.errs = nil
		if h := v.decodeHandler(&md, i, rr, &d.nets); h != nil {
			at := fmt.Sprintf("routes[%d]", i)
			line, col := v.pos.at(at)
			d.ri = len(site.Routes)
			site.Routes = append(site.Routes, Route{Path: rr.Path, Handler: h, Line: line, Col: col, Options: rr.RouteOptions, index: i})
		}
		d.errs, v.errs = v.errs, saved
		// A handler's keys are decoded one by one, its networks after.
		sort.SliceStable(d.errs, func(i, j int) bool {
			a, b := d.errs[i], d.errs[j]
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		v.routes = append(v.routes, d)
	}
	// A table key written as another value decodes to nothing, without
	// an error from the library.
	notTable := func(prefix string) func(string, string) {
		return func(path, got string) {
			key := plainPath(path)
			if prefix != "" {
				key = strings.TrimPrefix(path, prefix+".")
			}
			line, col := v.pos.valueAt(path)
			v.errs = append(v.errs, &Error{File: v.file, Line: line, Col: col, Msg: fmt.Sprintf("%s: expected a table, got %s", key, got)})
			v.bad = append(v.bad, path)
		}
	}
	v.checkTables(reflect.ValueOf(&raw).Elem(), "", notTable(""))
	for _, r := range site.Routes {
		hp := fmt.Sprintf("routes[%d].handler", r.index)
		saved := v.errs
		v.errs = nil
		v.checkTables(reflect.ValueOf(r.Handler), hp, notTable(hp))
		v.routes[r.index].errs = append(v.routes[r.index].errs, v.errs...)
		v.errs = saved
	}
	// Keys the schema does not know: every one is an error. Report only the
	// outermost unknown key, not each key inside an unknown table.
	for _, k := range unknownKeys(v.pos, &md, siteSchema) {
		if v.inFailedRoute(k.line) {
			continue // its handler was already reported; its keys were never decoded
		}
		if v.inUnknown(k.path) || v.inBad(k.path) {
			continue // inside an unknown key lenientSite found, or a value that did not decode
		}
		v.unknown = append(v.unknown, &Error{File: v.file, Line: k.line, Col: k.col,
			Msg: fmt.Sprintf("unknown key %q%s", k.path, suggest(k.path))})
	}
	return site, nil
}

// decodeHandler decodes the handler table of route i into its type, and
// its networks as written into nets, or records why it cannot and
// returns nil.
func (v *validator) decodeHandler(md *toml.MetaData, i int, rr rawRoute, nets *[]string) Handler {
	at := fmt.Sprintf("routes[%d]", i)
	if !v.has(at + ".handler") {
		v.errAt(at, "route %q has no handler (for example handler = { type = \"static\", root = \"/srv/www\" })", rr.Path)
		return nil
	}
	var head struct {
		Type string `toml:"type"`
	}
	hp := at + ".handler"
	if err := md.PrimitiveDecode(rr.Handler, &head); err != nil {
		v.errAt(hp, "handler must be a table, as in handler = { type = \"static\", root = \"/srv/www\" }")
		v.failed = append(v.failed, i)
		return nil
	}
	h := newHandler(head.Type)
	switch {
	case head.Type == "":
		v.errAt(hp, "handler has no type (one of %s)", strings.Join(HandlerTypes, ", "))
		v.failed = append(v.failed, i)
		return nil
	case h == nil:
		v.errAt(hp+".type", "unknown handler type %q (one of %s)", head.Type, strings.Join(HandlerTypes, ", "))
		v.failed = append(v.failed, i)
		return nil
	}
	// Every key of the handler that does not decode is reported (a
	// handler with one is not used: the route is failed).
	failed := false
	l := &lenient{md: md, pos: v.pos, fail: func(_ string, err error) {
		v.typeErr(hp, err)
		failed = true
	}}
	l.into(rr.Handler, reflect.ValueOf(h).Elem(), hp)
	// The networks' typed fields are not decoded; their written form is,
	// for validate to parse.
	var w struct {
		Nets []string `toml:"trusted_proxies"`
	}
	switch h.(type) {
	case *Proxy:
		l.into(rr.Handler, reflect.ValueOf(&w).Elem(), hp)
	case *Status:
		var s struct {
			Nets []string `toml:"allow"`
		}
		l.into(rr.Handler, reflect.ValueOf(&s).Elem(), hp)
		w.Nets = s.Nets
	}
	*nets = w.Nets
	if failed {
		v.failed = append(v.failed, i)
		return nil
	}
	return h
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

// lenientSite decodes the top-level keys of a file that did not decode
// whole into raw one at a time (see lenient), reporting each value that
// does not fit at its position and remembering its key (v.bad), so that
// validation does not report the zero value left in its place.
func (v *validator) lenientSite(md *toml.MetaData, top map[string]toml.Primitive, raw *rawSite) {
	l := &lenient{md: md, pos: v.pos, fail: func(path string, err error) {
		e := decodeErrorIn(v.file, v.pos, err, siteSchema)
		// The library locates a key by its plain path, the same for
		// every route: where the key of this path is written wins, its
		// value (an element of an array, "routes[1]", is a value).
		// The library's position is kept when it lies in the value
		// (inside a string's quotes, at a key of a table of names).
		if _, ok := v.pos.indexed[path]; ok {
			if line, col := v.pos.valueAt(path); e.Line != line || e.Col < col {
				e.Line, e.Col = line, col
			}
		}
		v.errs = append(v.errs, e)
		v.bad = append(v.bad, path)
	}}
	dst := reflect.ValueOf(raw).Elem()
	for _, k := range l.written("", top) {
		f, ok := keyField(dst, k)
		if !ok {
			l.unknown = append(l.unknown, k)
			continue
		}
		l.into(top[k], f, k)
	}
	for _, path := range l.unknown {
		plain := plainPath(path)
		line, col := v.pos.at(path)
		if off, ok := v.pos.indexed[path]; ok {
			line, col = v.pos.lineCol(off) // the key "" too
		}
		v.unknown = append(v.unknown, &Error{File: v.file, Line: line, Col: col,
			Msg: fmt.Sprintf("unknown key %q%s", plain, suggest(plain))})
		v.unknownPlain = append(v.unknownPlain, plain)
	}
}

// inUnknown reports whether a plain key path lies inside an unknown key
// that lenientSite reported.
func (v *validator) inUnknown(plain string) bool {
	for _, u := range v.unknownPlain {
		if strings.HasPrefix(plain, u+".") {
			return true
		}
	}
	return false
}

// inBad reports whether a plain key path lies inside a key whose value
// did not decode (v.bad).
func (v *validator) inBad(plain string) bool {
	for _, b := range v.bad {
		if strings.HasPrefix(plain, plainPath(b)+".") {
			return true
		}
	}
	return false
}

// firstInvalidUTF8 returns the offset of the first byte of b that is not
// part of valid UTF-8, or -1.
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
