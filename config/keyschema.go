package config

import (
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"
)

// Keys match exactly. BurntSushi/toml stores a key in a struct field whose
// name differs from it only in case ("Listen" in listen) and marks it
// decoded, so MetaData.Undecoded does not list it: a file with listen and
// Listen, two keys to TOML, would set one setting twice and the later
// would win in silence. keySchema finds such keys from the types a file
// decodes into, to report them as the unknown keys they are.

// keySchema is the types a TOML file decodes into.
type keySchema struct {
	root reflect.Type
	// alts are the types a toml.Primitive field may decode into (a
	// route's handler: one of the handler types), nil if none.
	alts func() []reflect.Type
}

// siteSchema is a site file's: rawSite, each route's handler one of the
// handler types (its type key and the networks decoded as written
// beside them).
var siteSchema = keySchema{root: reflect.TypeFor[rawSite](), alts: handlerTypes}

func handlerTypes() []reflect.Type {
	ts := []reflect.Type{reflect.TypeFor[struct {
		Type           string   `toml:"type"`
		Allow          []string `toml:"allow"`
		TrustedProxies []string `toml:"trusted_proxies"`
	}]()}
	for _, typ := range HandlerTypes {
		ts = append(ts, reflect.TypeOf(newHandler(typ)))
	}
	return ts
}

// lookup returns the type of the key at segs (a toml.Key) under t,
// matching field names exactly, or nil when the schema does not know it
// or cannot tell (a key inside a map or a value decoded by its own
// unmarshaler). folded is the index of the first segment that names a
// field only when case is ignored, else -1.
func (s keySchema) lookup(t reflect.Type, segs []string) (typ reflect.Type, folded int) {
	for i, seg := range segs {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem() // an array of tables: its keys have no index
		}
		if t == primitiveType {
			if s.alts == nil {
				return nil, -1
			}
			folded = -1
			for _, a := range s.alts() {
				at, f := s.lookup(a, segs[i:])
				if at != nil && f < 0 {
					return at, -1 // a key of one of the types
				}
				if f >= 0 && folded < 0 {
					folded = i + f
				}
			}
			return nil, folded
		}
		if p := reflect.PointerTo(t); p.Implements(textUnmarshaler) || p.Implements(tomlUnmarshaler) {
			return nil, -1
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem() // any key
			continue
		case reflect.Struct:
		default:
			return nil, -1
		}
		if f, ok := structField(t, seg, false); ok {
			t = f.Type
			continue
		}
		if _, ok := structField(t, seg, true); ok {
			return nil, i
		}
		return nil, -1
	}
	return t, -1
}

// structField finds the field of struct t that key decodes into: the
// toml tag's name, else the field's (the library's rule), embedded
// structs included, an outer field first; fold ignores case.
func structField(t reflect.Type, key string, fold bool) (reflect.StructField, bool) {
	var embedded []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		name := tomlKey(f)
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			embedded = append(embedded, f)
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		if name == key || fold && strings.EqualFold(name, key) {
			return f, true
		}
	}
	for _, e := range embedded {
		if f, ok := structField(e.Type, key, fold); ok {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// keysAt lists the keys of the table at a plain dotted path ("" for the
// top level), or nil when it is not a table of known keys.
func (s keySchema) keysAt(path string) []string {
	var segs []string
	if path != "" {
		segs = strings.Split(path, ".")
	}
	t, _ := s.lookup(s.root, segs)
	var keys []string
	switch {
	case t == primitiveType && s.alts != nil: // a route's handler: the keys of every handler type
		for _, a := range s.alts() {
			structKeys(tableType(a), &keys)
		}
	case t == nil || t.Kind() == reflect.Map || tableType(t) == nil:
		return nil
	default:
		structKeys(tableType(t), &keys)
	}
	return keys
}

// isBool reports whether the key at path (plain, dotted) holds true or
// false.
func (s keySchema) isBool(path string) bool {
	t, _ := s.lookup(s.root, strings.Split(path, "."))
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && t.Kind() == reflect.Bool
}

// unknownKeys returns the keys of md that s does not know, in file
// order, each at its own occurrence in the file: those the decoder did
// not use (MetaData.Undecoded) and those that name a field only when case
// is ignored (reported by the part up to that field: "Tls" of
// Tls.cert). Keys inside an unknown table are left out: only the
// outermost unknown key is a mistake to report.
func unknownKeys(pos *posIndex, md *toml.MetaData, s keySchema) []unknownKey {
	unknown := map[string]bool{}
	for _, k := range md.Undecoded() {
		unknown[strings.Join(k, ".")] = true
	}
	keys := md.Keys()
	shown := make([]string, len(keys)) // the path reported for keys[i], "" if known
	for i, k := range keys {
		plain := strings.Join(k, ".")
		if unknown[plain] {
			shown[i] = plain
			continue
		}
		if _, f := s.lookup(s.root, k); f >= 0 {
			shown[i] = strings.Join(k[:f+1], ".")
			unknown[plain] = true
		}
	}
	var out []unknownKey
	seen := map[string]int{}
outer:
	for i, k := range keys {
		plain := strings.Join(k, ".")
		n := seen[plain]
		seen[plain]++
		if shown[i] == "" {
			continue
		}
		for j := 1; j < len(k); j++ {
			if p := strings.Join(k[:j], "."); unknown[p] {
				continue outer
			}
		}
		line, col := pos.nth(plain, n)
		out = append(out, unknownKey{shown[i], line, col})
	}
	return out
}
