package config

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
)

// posIndex records where each key of a TOML document is written, so that
// validation errors can point at file:line:col. BurntSushi/toml reports
// positions for syntax errors but not, publicly, for keys; this small scanner
// runs only on documents the library has already parsed successfully, so it
// can assume valid syntax and stay simple.
//
// Keys are recorded twice: by indexed path ("routes[1].handler.root"), for
// validation messages about one element, and by plain path
// ("routes.handler.root", in document order), to match the library's
// Undecoded keys, which carry no array indices.
type posIndex struct {
	src     []byte
	indexed map[string]int   // indexed path -> byte offset of the key
	plain   map[string][]int // plain path -> offsets, in document order
	arrays  map[string]int   // indexed path of an array of tables -> element count
	values  map[string]int   // indexed path -> byte offset of the key's value
	bom     int              // length of a leading byte order mark, else 0
	lines   []int            // byte offset of each line's start (lineCol)
}

// indexBuilds counts newPosIndex calls, for a test that a file is indexed
// once however many errors it has.
var indexBuilds atomic.Int64

func newPosIndex(src []byte) *posIndex {
	indexBuilds.Add(1)
	p := &posIndex{
		src:     src,
		indexed: map[string]int{},
		plain:   map[string][]int{},
		arrays:  map[string]int{},
		values:  map[string]int{},
	}
	s := scanner{src: src, idx: p}
	// A byte order mark, which the TOML decoder skips, is not part of the
	// first line's columns.
	if bytes.HasPrefix(src, []byte("\ufeff")) {
		p.bom = 3
		s.i = 3
	}
	s.document()
	return p
}

// lineCol converts a byte offset to 1-based line and column (in bytes).
// The line starts are found once, so that locating many errors in a large
// file stays linear.
func (p *posIndex) lineCol(off int) (int, int) {
	if off < 0 {
		return 0, 0
	}
	p.findLines()
	off = min(off, len(p.src))
	// The last line starting at or before off.
	n := sort.Search(len(p.lines), func(i int) bool { return p.lines[i] > off }) - 1
	col := off - p.lines[n] + 1
	if n == 0 && off >= p.bom {
		col -= p.bom
	}
	return n + 1, col
}

// findLines records where each line starts, once.
func (p *posIndex) findLines() {
	if p.lines != nil {
		return
	}
	p.lines = []int{0}
	for i, c := range p.src {
		if c == '\n' {
			p.lines = append(p.lines, i+1)
		}
	}
}

// lineStart returns the byte offset where line n (1-based) starts.
func (p *posIndex) lineStart(n int) (int, bool) {
	p.findLines()
	if n < 1 || n > len(p.lines) {
		return 0, false
	}
	return p.lines[n-1], true
}

// line returns line n (1-based) without its newline, and whether the
// document has it.
func (p *posIndex) line(n int) (string, bool) {
	p.findLines()
	if n < 1 || n > len(p.lines) {
		return "", false
	}
	end := len(p.src)
	if n < len(p.lines) {
		end = p.lines[n] - 1
	}
	return string(p.src[p.lines[n-1]:end]), true
}

// at returns the line and column of the key at an indexed path, or of the
// nearest enclosing key that was written (a table header or inline table),
// or 0, 0 if none.
func (p *posIndex) at(path string) (int, int) {
	for path != "" {
		if off, ok := p.indexed[path]; ok {
			return p.lineCol(off)
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0, 0
}

// nth returns the position of the n-th (0-based) occurrence of a plain path.
func (p *posIndex) nth(plain string, n int) (int, int) {
	offs := p.plain[plain]
	if n < len(offs) {
		return p.lineCol(offs[n])
	}
	if len(offs) > 0 {
		return p.lineCol(offs[len(offs)-1])
	}
	return 0, 0
}

type scanner struct {
	src []byte
	i   int
	idx *posIndex
}

func (s *scanner) eof() bool { return s.i >= len(s.src) }

func (s *scanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.i]
}

// skipSpace skips blanks, comments and (if nl) newlines.
func (s *scanner) skipSpace(nl bool) {
	for !s.eof() {
		switch c := s.src[s.i]; {
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
		case c == '\n' && nl:
			s.i++
		case c == '#':
			for !s.eof() && s.src[s.i] != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}

func (s *scanner) document() {
	var table, plainTable string
	for {
		s.skipSpace(true)
		if s.eof() {
			return
		}
		if s.peek() == '[' {
			array := s.i+1 < len(s.src) && s.src[s.i+1] == '['
			if array {
				s.i += 2
			} else {
				s.i++
			}
			s.skipSpace(false)
			start := s.i
			parts := s.key()
			// The tables a header implies ([routes.handler] implies
			// routes) are located at it unless written before.
			for k := 1; k < len(parts); k++ {
				it, pt := s.idx.resolveTable(parts[:k], false)
				s.idx.implied(it, pt, start)
			}
			table, plainTable = s.idx.resolveTable(parts, array)
			s.idx.record(table, plainTable, start)
			for !s.eof() && s.src[s.i] != '\n' && s.src[s.i] != '#' {
				s.i++
			}
			continue
		}
		s.keyValue(table, plainTable)
	}
}

// resolveTable turns a header's key parts into indexed and plain paths,
// counting array-of-tables elements.
func (p *posIndex) resolveTable(parts []string, array bool) (string, string) {
	var indexed, plain string
	for k, part := range parts {
		if indexed != "" {
			indexed += "."
			plain += "."
		}
		indexed += part
		plain += part
		last := k == len(parts)-1
		if last && array {
			n := p.arrays[indexed]
			p.arrays[indexed] = n + 1
			indexed += "[" + strconv.Itoa(n) + "]"
		} else if n, ok := p.arrays[indexed]; ok && n > 0 {
			indexed += "[" + strconv.Itoa(n-1) + "]"
		}
	}
	return indexed, plain
}

func (p *posIndex) record(indexed, plain string, off int) {
	if _, ok := p.indexed[indexed]; !ok {
		p.indexed[indexed] = off
	}
	p.plain[plain] = append(p.plain[plain], off)
}

// implied records a table that a header or dotted key defines without
// naming it on its own, at that header or key, if not recorded yet. Only
// the indexed path: the plain paths match the library's keys, whose
// implied tables are no keys of their own.
func (p *posIndex) implied(indexed, plain string, off int) {
	if _, ok := p.indexed[indexed]; !ok {
		p.indexed[indexed] = off
	}
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// keyValue scans `key = value` under the given table.
func (s *scanner) keyValue(table, plainTable string) {
	start := s.i
	parts := s.key()
	if len(parts) == 0 { // not a key: skip the line defensively
		for !s.eof() && s.src[s.i] != '\n' {
			s.i++
		}
		return
	}
	// The tables a dotted key implies (handler.type = "static" implies
	// handler) are located at it unless written before.
	for n := 1; n < len(parts); n++ {
		k := strings.Join(parts[:n], ".")
		s.idx.implied(join(table, k), join(plainTable, k), start)
	}
	k := strings.Join(parts, ".")
	indexed, plain := join(table, k), join(plainTable, k)
	s.idx.record(indexed, plain, start)
	s.skipSpace(false)
	if s.peek() == '=' {
		s.i++
	}
	s.skipSpace(false)
	if _, ok := s.idx.values[indexed]; !ok {
		s.idx.values[indexed] = s.i
	}
	s.value(indexed, plain)
}

// valueAt returns the line and column of the value of the key at an
// indexed path, or, for a key not written as key = value, what at returns.
func (p *posIndex) valueAt(path string) (int, int) {
	if off, ok := p.values[path]; ok {
		return p.lineCol(off)
	}
	return p.at(path)
}

// key scans a possibly dotted key and returns its parts.
func (s *scanner) key() []string {
	var parts []string
	for {
		s.skipSpace(false)
		switch c := s.peek(); {
		case c == '"' || c == '\'':
			parts = append(parts, s.quoted())
		case isBare(c):
			j := s.i
			for !s.eof() && isBare(s.src[s.i]) {
				s.i++
			}
			parts = append(parts, string(s.src[j:s.i]))
		default:
			return parts
		}
		s.skipSpace(false)
		if s.peek() != '.' {
			return parts
		}
		s.i++
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// quoted scans a basic or literal string (single-line or multi-line) and
// returns its raw contents (escapes are not interpreted: keys in Arka's
// schema never need them).
func (s *scanner) quoted() string {
	q := s.src[s.i]
	if s.i+2 < len(s.src) && s.src[s.i+1] == q && s.src[s.i+2] == q {
		s.i += 3
		j := s.i
		for !s.eof() {
			if q == '"' && s.src[s.i] == '\\' {
				s.i += 2
				continue
			}
			if s.src[s.i] == q && s.i+2 < len(s.src) && s.src[s.i+1] == q && s.src[s.i+2] == q {
				v := string(s.src[j:s.i])
				s.i += 3
				for s.peek() == q { // up to two quotes may close the string
					s.i++
				}
				return v
			}
			s.i++
		}
		return string(s.src[j:])
	}
	s.i++
	j := s.i
	for !s.eof() && s.src[s.i] != q && s.src[s.i] != '\n' {
		if q == '"' && s.src[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	v := string(s.src[j:min(s.i, len(s.src))])
	if s.peek() == q {
		s.i++
	}
	return v
}

// value scans one value; inline tables and arrays record their keys.
func (s *scanner) value(indexed, plain string) {
	switch c := s.peek(); c {
	case '"', '\'':
		s.quoted()
	case '{':
		s.i++
		for {
			s.skipSpace(true)
			if s.eof() {
				return
			}
			if s.peek() == '}' {
				s.i++
				return
			}
			if s.peek() == ',' {
				s.i++
				continue
			}
			before := s.i
			s.keyValue(indexed, plain)
			if s.i == before {
				s.i++
			}
		}
	case '[':
		s.i++
		n := 0
		for {
			s.skipSpace(true)
			if s.eof() {
				return
			}
			switch s.peek() {
			case ']':
				s.i++
				return
			case ',':
				s.i++
				n++
				continue
			}
			el := indexed + "[" + strconv.Itoa(n) + "]"
			if _, ok := s.idx.indexed[el]; !ok {
				s.idx.indexed[el] = s.i
			}
			before := s.i
			s.value(el, plain)
			if s.i == before {
				s.i++
			}
		}
	default:
		for !s.eof() {
			c := s.src[s.i]
			if c == ',' || c == ']' || c == '}' || c == '\n' || c == '#' {
				return
			}
			s.i++
		}
	}
}
