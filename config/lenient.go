package config

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Decoding past a value of the wrong type.
//
// BurntSushi/toml stops decoding at the first value it cannot store (a
// string where an array belongs, a size without a unit), so one such
// mistake would hide every other of the file. When the whole file does not
// decode, lenient decodes it again one table and one key at a time
// through toml.Primitive: a key that fails is reported at its own position
// and left at its zero value, the keys beside it are still decoded, and a
// table or array of tables that fails is split into its keys and elements
// until the failing keys are found. Files that decode at once never come
// here (decode tries the plain decoding first), so this costs nothing for
// a valid file.

// lenient decodes primitives of one document, collecting what fails.
type lenient struct {
	md  *toml.MetaData
	pos *posIndex // to decode the keys of a table in the order they are written
	// fail receives each key (indexed path, "routes[1].allow") whose value
	// could not be decoded, with the library's error.
	fail func(path string, err error)
	// unknown are keys (indexed paths) of a split table that its type does
	// not have. Decoding a table into a map of primitives marks its keys
	// as decoded, so MetaData.Undecoded no longer lists them.
	unknown []string
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	tomlUnmarshaler = reflect.TypeFor[toml.Unmarshaler]()
	primitiveType   = reflect.TypeFor[toml.Primitive]()
)

// splittable reports whether t (a struct or a pointer to one) is decoded
// key by key, so that a failure can be narrowed to one of its keys.
func splittable(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == primitiveType {
		return false
	}
	p := reflect.PointerTo(t)
	return !p.Implements(textUnmarshaler) && !p.Implements(tomlUnmarshaler)
}

// into decodes p into dst (settable), the key at path. On failure dst is
// narrowed: a table into its keys, an array of tables into its elements;
// a value that cannot be narrowed is reported and left zero.
func (l *lenient) into(p toml.Primitive, dst reflect.Value, path string) {
	err := l.md.PrimitiveDecode(p, dst.Addr().Interface())
	if err == nil {
		return
	}
	dst.Set(reflect.Zero(dst.Type()))
	t := dst.Type()
	switch {
	case splittable(t):
		// Not a table at all: report the value. (The library decodes a
		// value that is not a table into a map without an error, but
		// not into a struct.)
		var probe struct{}
		var keys map[string]toml.Primitive
		if l.md.PrimitiveDecode(p, &probe) != nil || l.md.PrimitiveDecode(p, &keys) != nil {
			break
		}
		target := dst
		if t.Kind() == reflect.Pointer {
			dst.Set(reflect.New(t.Elem()))
			target = dst.Elem()
		}
		for _, k := range l.written(path, keys) {
			f, ok := keyField(target, k)
			if !ok {
				l.unknown = append(l.unknown, join(path, k))
				continue
			}
			l.into(keys[k], f, join(path, k))
		}
		return
	case t.Kind() == reflect.Slice && splittable(t.Elem()):
		var elems []toml.Primitive
		if l.md.PrimitiveDecode(p, &elems) != nil {
			break
		}
		s := reflect.MakeSlice(t, len(elems), len(elems))
		for i, e := range elems {
			l.into(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		dst.Set(s)
		return
	}
	l.fail(path, err)
}

// written returns the keys of the table at path in the order the file
// writes them (for the order of the messages).
func (l *lenient) written(path string, keys map[string]toml.Primitive) []string {
	ks := sortedKeys(keys)
	off := func(k string) int {
		if o, ok := l.pos.indexed[join(path, k)]; ok {
			return o
		}
		return math.MaxInt
	}
	sort.SliceStable(ks, func(i, j int) bool { return off(ks[i]) < off(ks[j]) })
	return ks
}

// keyField finds the field of struct value v that the TOML key k decodes into,
// as the library does: the toml tag's name (or the field's name), fields
// of embedded structs included unless a shallower field has the name, an
// exact match before one that differs only in case.
func keyField(v reflect.Value, k string) (reflect.Value, bool) {
	for _, fold := range []bool{false, true} {
		level := []reflect.Value{v}
		for len(level) > 0 {
			var next []reflect.Value
			for _, s := range level {
				t := s.Type()
				for i := range t.NumField() {
					sf := t.Field(i)
					tag := sf.Tag.Get("toml")
					name, _, _ := strings.Cut(tag, ",")
					if name == "-" {
						continue
					}
					if sf.Anonymous && name == "" {
						ft := sf.Type
						if ft.Kind() == reflect.Struct {
							next = append(next, s.Field(i))
							continue
						}
					}
					if !sf.IsExported() {
						continue
					}
					if name == "" {
						name = sf.Name
					}
					if name == k || fold && strings.EqualFold(name, k) {
						return s.Field(i), true
					}
				}
			}
			level = next
		}
	}
	return reflect.Value{}, false
}

// badPath reports whether an error about the key at path would only
// repeat, or follow from, a value that could not be decoded (v.bad): the
// key itself, a key inside it, or the named table holding it ([tls],
// [global.fan]), whose checks across its keys ("cert and key") see the
// failed key as unset. The table's other keys are still checked.
func (v *validator) badPath(path string) bool {
	for _, b := range v.bad {
		if under(path, b) {
			return true
		}
		t := parentTable(b)
		if t != "" && !strings.HasSuffix(t, "]") && path == t {
			return true
		}
	}
	return false
}

// under reports whether path is p or a key or element inside it.
func under(path, p string) bool {
	return path == p || strings.HasPrefix(path, p) && (path[len(p)] == '.' || path[len(p)] == '[')
}

// parentTable is the indexed path of the table holding the key at path
// ("" for a key of the file's top level).
func parentTable(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	if path[i] == '[' { // an element: its table is the array's
		return parentTable(path[:i])
	}
	return path[:i]
}

// plainPath drops the array indices of an indexed path, as the library's
// keys have none ("routes[1].allow" → "routes.allow").
func plainPath(path string) string {
	var b strings.Builder
	skip := false
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '[':
			skip = true
		case c == ']':
			skip = false
		case !skip:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// checkTables reports each map-typed key of v (a decoded struct whose
// keys are at path) that the file writes as a value other than a table:
// the library stores nothing for `pages = 5` and reports no error.
func (v *validator) checkTables(val reflect.Value, path string, report func(path, got string)) {
	switch val.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !val.IsNil() {
			v.checkTables(val.Elem(), path, report)
		}
		return
	case reflect.Slice:
		if splittable(val.Type().Elem()) {
			for i := range val.Len() {
				v.checkTables(val.Index(i), fmt.Sprintf("%s[%d]", path, i), report)
			}
		}
		return
	case reflect.Struct:
	default:
		return
	}
	t := val.Type()
	if t == primitiveType {
		return
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		switch {
		case name == "-" || !sf.IsExported() && !sf.Anonymous:
			continue
		case sf.Anonymous && name == "":
			v.checkTables(val.Field(i), path, report)
			continue
		case name == "":
			name = sf.Name
		}
		at := join(path, name)
		f := val.Field(i)
		if f.Kind() == reflect.Map {
			if off, ok := v.pos.values[at]; ok && off < len(v.pos.src) && v.pos.src[off] != '{' {
				report(at, valueKind(v.pos.src[off:]))
			}
			continue
		}
		v.checkTables(f, at, report)
	}
}

// valueKind names the kind of the TOML value that src starts with, in
// the words of decode's type messages.
func valueKind(src []byte) string {
	switch src[0] {
	case '"', '\'':
		return "a string"
	case '[':
		return "an array"
	case 't', 'f':
		return "true or false"
	}
	end := 0
	for end < len(src) && !strings.ContainsRune(",]}#\n\r \t", rune(src[end])) {
		end++
	}
	tok := string(src[:end])
	switch {
	case strings.Contains(tok, ":") || strings.Count(tok, "-") > 1 && !strings.HasPrefix(tok, "-"):
		return "a date or time"
	case strings.ContainsAny(tok, ".eEn") && !strings.HasPrefix(tok, "0x"):
		return "a number" // 1.5, 1e3, inf, nan
	}
	return "an integer"
}
